package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// Each tenant gets the alerts of its own cluster, under the name Cozystack's app gave its
// PrometheusRule (etcd-rules), where the cluster serves that API; where it does not, the app
// installs without them.
func TestTenantPackageRendersTheTenantsAlerts(t *testing.T) {
	ms, err := renderPackageWithAPIs(t, tenantPackage, "etcd", "tenant-a", cozyValues("tenant-a"), cozystackAPIs)
	if err != nil {
		t.Fatal(err)
	}
	k := kinds(ms)
	if len(k["PrometheusRule"]) != 1 || len(k["VMRule"]) != 0 {
		t.Fatalf("want one PrometheusRule and no VMRule (VictoriaMetrics converts it), got kinds %v", keys(k))
	}
	pr := k["PrometheusRule"][0]
	if pr.GetName() != "etcd-rules" || pr.GetNamespace() != "tenant-a" {
		t.Errorf("PrometheusRule %s/%s, want tenant-a/etcd-rules", pr.GetNamespace(), pr.GetName())
	}
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			rule := r.(map[string]any)
			alerts++
			expr := rule["expr"].(string)
			if strings.Contains(expr, "__") || !strings.Contains(expr, `namespace="tenant-a"`) ||
				!(strings.Contains(expr, `cluster="etcd"`) || strings.Contains(expr, `service="etcd-metrics"`)) {
				t.Errorf("%s is not narrowed to tenant-a/etcd: %s", rule["alert"], expr)
			}
			if !strings.Contains(rule["annotations"].(map[string]any)["summary"].(string), "{{ $labels.") {
				t.Errorf("%s: the Prometheus templates of its summary were not kept", rule["alert"])
			}
		}
	}
	src, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), tenantPackage, "files/alerts/cluster-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Count(string(src), "- alert: "); alerts != want || want == 0 {
		t.Errorf("%d alerts rendered, the package's rule file has %d", alerts, want)
	}

	ms, err = renderPackage(t, tenantPackage, "etcd", "tenant-a", cozyValues("tenant-a"))
	if err != nil {
		t.Fatalf("without the PrometheusRule API: %v", err)
	}
	if n := len(kinds(ms)["PrometheusRule"]); n != 0 {
		t.Errorf("%d PrometheusRules rendered for a cluster that does not serve the API", n)
	}
}
