package fluxexamples

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/testenv"
)

func TestExamplesDecodeStrictlyAndResolve(t *testing.T) {
	objs, err := LoadDir(filepath.Join(testenv.RepoRoot(), Dir))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetObjectKind().GroupVersionKind().Kind]++
	}
	if kinds["HelmRepository"] != 1 || kinds["HelmRelease"] != 2 {
		t.Errorf("want one HelmRepository and two HelmReleases (operator and etcd), got %v", kinds)
	}
	for _, err := range Check(objs) {
		t.Error(err)
	}
}

// The examples pin the versions of the charts in this repository; bumping a chart without its
// example would install something else than the docs describe.
func TestExampleVersionsMatchCharts(t *testing.T) {
	root := testenv.RepoRoot()
	objs, err := LoadDir(filepath.Join(root, Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		hr, ok := o.Object.(*helmv2.HelmRelease)
		if !ok || hr.Spec.Chart == nil {
			continue
		}
		name := hr.Spec.Chart.Spec.Chart
		raw, err := os.ReadFile(filepath.Join(root, "charts", name, "Chart.yaml"))
		if err != nil {
			t.Errorf("%s: chart %q is not in charts/: %v", o.File, name, err)
			continue
		}
		var meta struct{ Version string }
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if got := hr.Spec.Chart.Spec.Version; got != meta.Version {
			t.Errorf("%s: chart %s version %q, charts/%s/Chart.yaml has %q", o.File, name, got, name, meta.Version)
		}
	}
}

// The examples' values must pass each chart's values.schema.json and render: a value renamed in a
// chart would otherwise leave the example installing something else, or failing in the cluster.
func TestExampleValuesRenderTheCharts(t *testing.T) {
	root := testenv.RepoRoot()
	objs, err := LoadDir(filepath.Join(root, Dir))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		hr, ok := o.Object.(*helmv2.HelmRelease)
		if !ok || hr.Spec.Chart == nil {
			continue
		}
		values := hr.GetValues()
		ns := hr.Spec.TargetNamespace
		if ns == "" {
			ns = hr.Namespace
		}
		_, err := chartrender.RenderManifests(filepath.Join(root, "charts", hr.Spec.Chart.Spec.Chart), values,
			chartrender.Options{ReleaseName: hr.GetReleaseName(), Namespace: ns, Strict: true})
		if err != nil {
			t.Errorf("%s: %v", o.File, err)
		}
	}
}

func TestDecodeStrictRejects(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const good = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: a, namespace: b}
spec:
  interval: 5m
  chart:
    spec: {chart: etcd, version: "1.0.0", sourceRef: {kind: HelmRepository, name: r}}
`
	if _, err := DecodeStrict([]byte(good), s); err != nil {
		t.Fatalf("the valid document was rejected: %v", err)
	}
	cases := map[string]struct{ doc, want string }{
		"misspelt field":  {strings.Replace(good, "version:", "verison:", 1), `unknown field "spec.chart.spec.verison"`},
		"misplaced field": {good + "  version: 1.0.0\n", `unknown field "spec.version"`},
		"duplicate field": {good + "  interval: 1m\n", `"interval" already set`},
		"unknown kind":    {strings.Replace(good, "kind: HelmRelease", "kind: HelmChartz", 1), "not a kind these examples may use"},
		"old api version": {strings.Replace(good, "helm.toolkit.fluxcd.io/v2", "helm.toolkit.fluxcd.io/v2beta9", 1), "not a kind these examples may use"},
		"no kind":         {"apiVersion: v1\nmetadata: {name: x}\n", "apiVersion and kind are required"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeStrict([]byte(tc.doc), s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCheckReportsDanglingReferences(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const doc = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: etcd, namespace: t}
spec:
  interval: 5m
  chart:
    spec: {chart: etcd, version: ">=1.0.0", sourceRef: {kind: HelmRepository, name: missing}}
  dependsOn: [{name: etcd-operator}]
`
	objs, err := DecodeStrict([]byte(doc), s)
	if err != nil {
		t.Fatal(err)
	}
	errs := Check([]Object{{File: "x.yaml", Object: objs[0]}})
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{"sourceRef t/missing", "not one exact version", "dependsOn t/etcd-operator"} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %q in:\n%s", want, joined)
		}
	}
}
