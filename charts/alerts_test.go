package charts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
