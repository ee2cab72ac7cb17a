package dryrun

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/fluxexamples"
	"github.com/cozystack/etcd-operator/internal/testenv"
)

func sharedDir() (string, bool) { return testenv.SharedDir() }

// check applies objs and fails the test for each rejection; it logs what was skipped and why.
func check(t *testing.T, namespace string, objs []*unstructured.Unstructured) {
	t.Helper()
	if len(objs) == 0 {
		t.Fatal("nothing to validate")
	}
	results := env.Apply(context.Background(), namespace, objs)
	for _, f := range Failures(results) {
		t.Error(f)
	}
	t.Log(Summary(results))
}

func TestFluxExamples(t *testing.T) {
	objs, err := fluxexamples.LoadDir(filepath.Join(testenv.RepoRoot(), fluxexamples.Dir))
	if err != nil {
		t.Fatal(err)
	}
	var us []*unstructured.Unstructured
	for _, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(o.GetObjectKind().GroupVersionKind())
		us = append(us, u)
	}
	check(t, "default", us)
}

// TestChartDefaults renders every chart in charts/ with its default values through chartrender.
func TestChartDefaults(t *testing.T) {
	charts, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "charts", "*", "Chart.yaml"))
	if len(charts) < 2 {
		t.Fatalf("want the operator and etcd charts, found %v", charts)
	}
	for _, c := range charts {
		dir := filepath.Dir(c)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			objs, err := chartrender.Render(dir, nil, "tenant-defaults")
			if err != nil {
				t.Fatal(err)
			}
			check(t, "tenant-defaults", objs)
		})
	}
}

// TestChartValueMatrix validates the charts' golden renders, charts/testdata/<chart>/<case>.yaml:
// chartrender's output for every case of the charts' value matrix (the chart tests keep them
// current), so each case reaches the apiserver without this package repeating the matrix.
func TestChartValueMatrix(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "charts", "testdata", "*", "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no golden renders under charts/testdata")
	}
	sort.Strings(files)
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f)) + "/" + strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			objs, err := readObjects(f)
			if err != nil {
				t.Fatal(err)
			}
			check(t, "matrix-"+strings.ReplaceAll(filepath.Base(filepath.Dir(f)), "_", "-"), objs)
		})
	}
}

// TestPackages renders the Cozystack packages as Cozystack installs them: with their defaults and
// the cozystack-values Secret's _cluster and _namespace (Cozystack's cluster domain is cozy.local),
// and the tenant app also with the values an existing app of Cozystack's own etcd package carries.
func TestPackages(t *testing.T) {
	cozy := func(extra map[string]any) map[string]any {
		v := map[string]any{"_namespace": map[string]any{"etcd": "tenant-pkg"},
			"_cluster": map[string]any{"cluster-domain": "cozy.local", "root-host": "example.org"}}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	existingApp := cozy(map[string]any{"version": "3.6.11", "size": "4Gi", "storageClass": "", "replicas": 3,
		"resources": map[string]any{"cpu": "1000m", "memory": "512Mi"}})
	for _, p := range []struct {
		dir, release, namespace string
		values                  map[string]any
	}{
		{"packages/system/etcd-operator-crds", "etcd-operator-crds", "cozy-etcd-operator", cozy(nil)},
		{"packages/system/etcd-operator", "etcd-operator", "cozy-etcd-operator", cozy(nil)},
		{"packages/extra/etcd", "etcd", "tenant-pkg", cozy(nil)},
		{"packages/extra/etcd#existing-app", "etcd", "tenant-pkg", existingApp},
		{"packages/system/etcd-rd", "etcd-rd", "cozy-system", cozy(nil)},
	} {
		t.Run(p.dir, func(t *testing.T) {
			dir, _, _ := strings.Cut(p.dir, "#")
			// Cozystack serves Prometheus Operator's rule API (VictoriaMetrics converts its objects):
			// the tenant app's PrometheusRule is rendered, and checked against its CRD.
			ms, err := chartrender.RenderManifests(filepath.Join(testenv.RepoRoot(), dir), p.values,
				chartrender.Options{ReleaseName: p.release, Namespace: p.namespace, IncludeCRDs: true,
					APIVersions: []string{"monitoring.coreos.com/v1/PrometheusRule"}})
			if err != nil {
				t.Fatal(err)
			}
			objs := make([]*unstructured.Unstructured, len(ms))
			for i, m := range ms {
				objs[i] = m.Object
			}
			check(t, p.namespace, objs)
		})
	}
}

func readObjects(file string) ([]*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out, nil
}
