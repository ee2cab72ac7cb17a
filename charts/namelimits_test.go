package charts_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/namecheck"
)

// maxReleaseName is the longest release name Helm installs (helm install refuses longer ones).
const maxReleaseName = 53

// longName is a name of n characters.
func longName(first string, n int) string { return first + strings.Repeat("x", n-1) }

// schemaMaxLength is the maxLength values.schema.json gives a top-level value of a chart.
func schemaMaxLength(t *testing.T, chart, value string) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chart, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			MaxLength int `json:"maxLength"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	n := schema.Properties[value].MaxLength
	if n == 0 {
		t.Fatalf("%s/values.schema.json gives %s no maxLength", chart, value)
	}
	return n
}

// TestChartNamesFitTheirLimits renders every case of both charts with the longest names they
// admit (the etcd chart's clusterName at its schema's maxLength, the longest release name Helm
// installs, the longest namespace) and checks every rendered object's name and label values
// against its kind's limit, the CRDs' caps on the EtcdCluster and its schedules included (what
// the operator derives from those is checked at their caps by the operator's own test).
func TestChartNamesFitTheirLimits(t *testing.T) {
	release := longName("r", maxReleaseName)
	namespace := longName("n", validation.DNS1123LabelMaxLength)
	clusterName := longName("c", schemaMaxLength(t, etcdChart, "clusterName"))
	charts := []struct {
		chart string
		cases []renderCase
		set   map[string]any
	}{
		{etcdChart, etcdCases, map[string]any{"clusterName": clusterName}},
		{operatorChart, operatorCases, nil},
	}
	seen := map[string]bool{} // one line per object and field, not per case that renders it
	for _, ch := range charts {
		for _, tc := range ch.cases {
			vals := parseValues(t, tc.values)
			for k, v := range ch.set {
				vals[k] = v
			}
			ms, err := chartrender.RenderManifests(ch.chart, vals, chartrender.Options{ReleaseName: release, Namespace: namespace})
			if err != nil {
				t.Errorf("%s/%s with the longest names: %v", ch.chart, tc.name, err)
				continue
			}
			for _, m := range ms {
				for _, f := range namecheck.Object(ch.chart+"/"+tc.name+" "+m.Source, m.Object.GetKind(), m.Object) {
					if key := m.Source + f.Kind + f.Field + f.Value; !seen[key] {
						seen[key] = true
						t.Error(f)
					}
				}
			}
		}
	}
}
