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
	if kinds["OCIRepository"] != 2 || kinds["HelmRelease"] != 2 || len(kinds) != 2 {
		t.Errorf("want two OCIRepositories and two HelmReleases (operator and etcd), nothing else; got %v", kinds)
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
		if !ok {
			continue
		}
		name, version := ChartOf(objs, hr)
		raw, err := os.ReadFile(filepath.Join(root, "charts", name, "Chart.yaml"))
		if name == "" || err != nil {
			t.Errorf("%s: HelmRelease %s: chart %q is not in charts/: %v", o.File, hr.Name, name, err)
			continue
		}
		var meta struct{ Version string }
		if err := yaml.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		if version != meta.Version {
			t.Errorf("%s: chart %s version %q, charts/%s/Chart.yaml has %q", o.File, name, version, name, meta.Version)
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
		if !ok {
			continue
		}
		values := hr.GetValues()
		ns := hr.Spec.TargetNamespace
		if ns == "" {
			ns = hr.Namespace
		}
		name, _ := ChartOf(objs, hr)
		_, err := chartrender.RenderManifests(filepath.Join(root, "charts", name), values,
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

// Check refuses what would not install where it matters: a reference to another namespace
// (helm-controller with --no-cross-namespace-refs=true), a HelmRepository of type oci or a chart
// from a HelmRepository, a dangling reference, a version range instead of one version.
func TestCheckRefuses(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const source = `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: etcd, namespace: t}
spec:
  interval: 1h
  url: oci://example.com/charts/etcd
  ref: {tag: "1.0.0"}
  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}
`
	const release = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: etcd, namespace: t}
spec:
  interval: 5m
  chartRef: {kind: OCIRepository, name: etcd}
`
	const ociHelmRepository = `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: t}
spec: {type: oci, url: "oci://example.com/charts", interval: 1h}
`
	cases := map[string]struct {
		docs []string
		want []string
	}{
		"the good pair": {[]string{source, release}, nil},
		"chartRef to another namespace": {
			[]string{source, strings.Replace(release, "name: etcd}", "name: etcd, namespace: flux-system}", 1)},
			[]string{"chartRef refers to namespace flux-system", "--no-cross-namespace-refs"}},
		"dependsOn another namespace": {
			[]string{source, release + "  dependsOn: [{name: etcd-operator, namespace: flux-system}]\n"},
			[]string{"dependsOn etcd-operator refers to namespace flux-system", "dependsOn t/etcd-operator is not among the examples"}},
		"HelmRepository of type oci": {
			[]string{source, release, ociHelmRepository},
			[]string{"HelmRepository t/charts: type oci"}},
		"chart from a HelmRepository": {
			[]string{ociHelmRepository, strings.Replace(release, "chartRef: {kind: OCIRepository, name: etcd}",
				"chart: {spec: {chart: etcd, version: 1.0.0, sourceRef: {kind: HelmRepository, name: charts}}}", 1)},
			[]string{"type oci", "spec.chart makes a HelmChart", "spec.chartRef is required"}},
		"dangling chartRef": {
			[]string{strings.Replace(release, "name: etcd}", "name: missing}", 1)},
			[]string{"chartRef t/missing is not an OCIRepository of the examples"}},
		"a version range, the chart extracted": {
			[]string{strings.Replace(strings.Replace(source, `tag: "1.0.0"`, `tag: ">=1.0.0"`, 1), "operation: copy", "operation: extract", 1), release},
			[]string{"not one exact chart version", "layerSelector must select the Helm chart layer"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objs []Object
			for _, d := range tc.docs {
				decoded, err := DecodeStrict([]byte(d), s)
				if err != nil {
					t.Fatal(err)
				}
				objs = append(objs, Object{File: "x.yaml", Object: decoded[0]})
			}
			var all []string
			for _, e := range Check(objs) {
				all = append(all, e.Error())
			}
			joined := strings.Join(all, "\n")
			if len(tc.want) == 0 && len(all) > 0 {
				t.Errorf("refused:\n%s", joined)
			}
			for _, want := range tc.want {
				if !strings.Contains(joined, want) {
					t.Errorf("missing %q in:\n%s", want, joined)
				}
			}
		})
	}
}
