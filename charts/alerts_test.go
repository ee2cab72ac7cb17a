package charts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

const rulesFile = "etcd-operator/files/alerts/rules.yaml"

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
	promtool := toolsBinary(t, "prometheus-"+pinnedVersion(t, "PROMETHEUS_VERSION"), "promtool")
	if out, err := exec.Command(promtool, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	dir := t.TempDir()
	for src, dst := range map[string]string{rulesFile: "rules.yaml", "alerttests/tests.yaml": "tests.yaml"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(promtool, "test", "rules", filepath.Join(dir, "tests.yaml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
