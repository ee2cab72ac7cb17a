package charts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/internal/chartrender"
)

const (
	rulesFile        = "etcd-operator/files/alerts/rules.yaml"
	clusterRulesFile = "etcd/files/alerts/cluster-rules.yaml"
)

// toolsBinary is a binary of the tools cache (`make tools`); missing, the test fails: it is
// part of `make test`, which builds the cache first.
func toolsBinary(t *testing.T, folder, name string) string {
	t.Helper()
	dir := os.Getenv("ETCD_OPERATOR_TOOLS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "etcd-operator-tools")
	}
	bin := filepath.Join(dir, folder, name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing (%v): run `make tools`", bin, err)
	}
	return bin
}

// TestAlertRules checks the shipped rules with promtool and runs their unit tests
// (alerttests/tests.yaml): each alert fires on the series that should raise it, after its
// `for`, with its labels and annotations, and not on the ones that should not.
func TestAlertRules(t *testing.T) {
	promtoolTest(t, rulesFile, "alerttests/tests.yaml", nil)
}

// TestClusterAlertRules does the same for the etcd chart's per-cluster rules (generated from the
// operator's by hack/clusteralerts), as alerts.yaml renders them for cluster a in namespace t
// (alerttests/cluster-tests.yaml): they fire for t/a only.
func TestClusterAlertRules(t *testing.T) {
	promtoolTest(t, clusterRulesFile, "alerttests/cluster-tests.yaml",
		strings.NewReplacer("__NAMESPACE__", "t", "__CLUSTER__", "a"))
}

// promtoolTest runs `promtool check rules` and `promtool test rules` on the rule file, after
// replacing what render replaces (nil: nothing).
func promtoolTest(t *testing.T, rules, tests string, render *strings.Replacer) {
	t.Helper()
	promtool := toolsBinary(t, "prometheus-"+pinnedVersion(t, "PROMETHEUS_VERSION"), "promtool")
	dir := t.TempDir()
	for src, dst := range map[string]string{rules: "rules.yaml", tests: "tests.yaml"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if render != nil && src == rules {
			b = []byte(render.Replace(string(b)))
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(promtool, "check", "rules", filepath.Join(dir, "rules.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rules, err, out)
	}
	if out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "tests.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", tests, err, out)
	}
}

// TestEtcdChartRendersClusterRulesWhereTheAPIIsServed: the etcd chart's alert objects appear only
// where the cluster serves their API (an install without the CRD must not fail), under
// <cluster>-rules, with every rule of the per-cluster file narrowed to the release's cluster.
func TestEtcdChartRendersClusterRulesWhereTheAPIIsServed(t *testing.T) {
	values := parseValues(t, `{clusterName: main, alerts: {vmRule: {enabled: true, labels: {team: db}}}}`)
	opts := chartrender.Options{ReleaseName: etcdRelease, Namespace: etcdNamespace, Strict: true}
	ms, err := chartrender.RenderManifests(etcdChart, values, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Object.GetKind() == "VMRule" {
			t.Fatal("a VMRule rendered for a cluster that does not serve operator.victoriametrics.com/v1beta1")
		}
	}
	opts.APIVersions = []string{"operator.victoriametrics.com/v1beta1/VMRule"}
	if ms, err = chartrender.RenderManifests(etcdChart, values, opts); err != nil {
		t.Fatal(err)
	}
	var rules []*unstructured.Unstructured
	for _, m := range ms {
		if m.Object.GetKind() == "VMRule" {
			rules = append(rules, m.Object)
		}
	}
	if len(rules) != 1 || rules[0].GetName() != "main-rules" || rules[0].GetLabels()["team"] != "db" {
		t.Fatalf("want one VMRule main-rules labelled team=db, got %v", rules)
	}
	src, err := os.ReadFile(clusterRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Count(string(src), "- alert: ")
	groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	got := 0
	for _, g := range groups {
		for _, r := range g.(map[string]any)["rules"].([]any) {
			got++
			expr := r.(map[string]any)["expr"].(string)
			if strings.Contains(expr, "__") || !strings.Contains(expr, `namespace="`+etcdNamespace+`"`) ||
				!(strings.Contains(expr, `cluster="main"`) || strings.Contains(expr, `service="main-metrics"`)) {
				t.Errorf("%s is not narrowed to %s/main: %s", r.(map[string]any)["alert"], etcdNamespace, expr)
			}
		}
	}
	if got != want || want == 0 {
		t.Errorf("%d rules rendered, %s has %d", got, clusterRulesFile, want)
	}
}
