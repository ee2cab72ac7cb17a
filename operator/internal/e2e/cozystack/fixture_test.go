package cozystack

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/chartrender"
)

// appChart is the suite's stand-in for Cozystack's current etcd app.
const appChart = "testdata/cozystack-etcd-app"

// leftOut are the fixture's objects the stand-in does not render (its Chart.yaml says why: they
// touch no member, and the suite's cluster serves no API of theirs).
var leftOut = map[string]bool{"PrometheusRule/etcd-rules": true}

// fixtureNamespace is the namespace hack/cozypackages' fixture of that app was written for.
const fixtureNamespace = "tenant-a"

// TestAppChartRendersTheFixture renders the stand-in chart with the values of the fixture
// (hack/cozypackages/testdata/cozystack-etcd-app.yaml, what Cozystack's app renders; the lead's
// package test compares packages/extra/etcd with it) and checks that every object the fixture
// describes comes out with the fixture's spec: the e2e upgrade then starts from what users run.
func TestAppChartRendersTheFixture(t *testing.T) {
	got, err := chartrender.Render(appChart, nil, fixtureNamespace)
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]*unstructured.Unstructured{}
	for _, o := range got {
		rendered[o.GetKind()+"/"+o.GetName()] = o
	}
	for _, want := range fixtureObjects(t) {
		key := want.GetKind() + "/" + want.GetName()
		have, ok := rendered[key]
		if leftOut[key] {
			if ok {
				t.Errorf("%s: rendered, but listed as left out of the stand-in", key)
			}
			continue
		}
		if !ok {
			t.Errorf("%s: not rendered", key)
			continue
		}
		wantSpec, _, _ := unstructured.NestedFieldNoCopy(want.Object, "spec")
		haveSpec, _, _ := unstructured.NestedFieldNoCopy(have.Object, "spec")
		if wantSpec == nil {
			continue // the fixture names the object only
		}
		if !reflect.DeepEqual(normalize(wantSpec), normalize(haveSpec)) {
			t.Errorf("%s: spec\n%v\nwant the fixture's\n%v", key, haveSpec, wantSpec)
		}
	}
}

// fixtureObjects reads hack/cozypackages' fixture.
func fixtureObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "hack", "cozypackages", "testdata", "cozystack-etcd-app.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	if len(out) == 0 {
		t.Fatal("the fixture holds no object")
	}
	return out
}

// normalize makes YAML scalars of either decoder comparable: numbers and strings by their text
// (4080218931 is one whether read as int64 or float64; the fixture writes quantities as strings).
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case float64:
		return fmt.Sprintf("%.0f", x)
	case nil, bool:
		return x
	default:
		return fmt.Sprint(x)
	}
}
