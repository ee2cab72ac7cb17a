package dryrun

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/testenv"
)

// TestDataStoresAgainstKamajiCRDs validates every DataStore the etcd chart's value matrix and the
// Cozystack tenant package render against Kamaji's own CRDs (../shared/crds/kamaji, which CI has
// and a fresh clone may not), in a second envtest where they replace our minimal ones: Kamaji's
// schema and CEL rules, not only the subset we type, must accept them.
func TestDataStoresAgainstKamajiCRDs(t *testing.T) {
	shared, ok := sharedDir()
	upstream := filepath.Join(shared, "crds", "kamaji")
	if _, err := os.Stat(upstream); !ok || err != nil {
		t.Skipf("Kamaji's CRDs not found in %s (they sit beside the clone in CI)", upstream)
	}
	paths, err := ThirdPartyCRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		if p == testenv.FixtureCRDDir("kamaji") {
			paths[i] = upstream
		}
	}
	te, err := testenv.Start(paths...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	kamaji := &Env{Env: te}

	stores := dataStores(t)
	if len(stores) < 3 {
		t.Fatalf("found %d DataStores in the renders, want the matrix's and the package's", len(stores))
	}
	results := kamaji.Apply(context.Background(), "kamaji-upstream", stores)
	for _, f := range Failures(results) {
		t.Error(f)
	}
	t.Log(Summary(results))
}

// dataStores are the DataStores of the etcd chart's golden renders and of the tenant package.
func dataStores(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(testenv.RepoRoot(), "charts", "testdata", "etcd", "*.yaml"))
	var objs []*unstructured.Unstructured
	for _, f := range files {
		o, err := readObjects(f)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	pkg, err := chartrender.RenderManifests(filepath.Join(testenv.RepoRoot(), "packages", "extra", "etcd"),
		map[string]any{"_namespace": map[string]any{"etcd": "tenant-pkg"}},
		chartrender.Options{ReleaseName: "etcd", Namespace: "tenant-pkg"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pkg {
		objs = append(objs, m.Object)
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "DataStore" {
			out = append(out, o)
		}
	}
	return out
}
