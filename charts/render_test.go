// Render tests for the Helm charts: each case renders a chart with the Helm SDK (client-only,
// values checked against values.schema.json) and compares the objects with a golden file under
// testdata/<chart>/<case>.yaml. `go test ./charts -update` rewrites the golden files; review the
// diff like code. Cross-object checks (references between rendered objects, typed decoding into
// the API structs) run on every case, so a golden file cannot bless a broken render.
package charts_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartrender"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// renderCase is one set of values for a chart.
type renderCase struct {
	name   string
	values string // YAML overrides of values.yaml
}

// rejectCase is a set of values the chart must refuse, with a part of the message users see.
type rejectCase struct {
	name    string
	values  string
	wantErr []string
}

func parseValues(t *testing.T, src string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(src), &vals); err != nil {
		t.Fatalf("values: %v", err)
	}
	return vals
}

func render(t *testing.T, chart, release, namespace, values string) []chartrender.Manifest {
	t.Helper()
	ms, err := chartrender.RenderManifests(chart, parseValues(t, values), chartrender.Options{
		ReleaseName: release, Namespace: namespace, Strict: true,
	})
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return ms
}

// checkGolden compares the rendered objects with testdata/<chart>/<case>.yaml.
func checkGolden(t *testing.T, chart, name string, ms []chartrender.Manifest) {
	t.Helper()
	got, err := chartrender.YAML(ms)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", chart, name+".yaml")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go test ./charts -update` to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("render differs from %s (run `go test ./charts -update` and review the diff):\n%s", path, got)
	}
}

func checkRejected(t *testing.T, chart string, tc rejectCase) {
	t.Helper()
	_, err := chartrender.RenderManifests(chart, parseValues(t, tc.values), chartrender.Options{Namespace: "ns", Strict: true})
	if err == nil {
		t.Fatalf("values were accepted:\n%s", tc.values)
	}
	for _, want := range tc.wantErr {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
}

// objects returns the rendered objects of a kind.
func objects(ms []chartrender.Manifest, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, m := range ms {
		if m.Object.GetKind() == kind {
			out = append(out, m.Object)
		}
	}
	return out
}

func one(t *testing.T, ms []chartrender.Manifest, kind string) *unstructured.Unstructured {
	t.Helper()
	objs := objects(ms, kind)
	if len(objs) != 1 {
		t.Fatalf("rendered %d %s objects, want 1", len(objs), kind)
	}
	return objs[0]
}

func str(t *testing.T, obj *unstructured.Unstructured, path ...string) string {
	t.Helper()
	v, _, err := unstructured.NestedString(obj.Object, path...)
	if err != nil {
		t.Fatalf("%s %s: %s: %v", obj.GetKind(), obj.GetName(), strings.Join(path, "."), err)
	}
	return v
}
