package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Main runs the three subcommands and declines anything else (the manager's own flags).
func TestMainDispatch(t *testing.T) {
	if _, ok := Main("--leader-elect", nil); ok {
		t.Error("a manager flag was taken for a subcommand")
	}
	dataDir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dataDir, "member"), 0o700); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "log")
	t.Setenv(snapshot.EnvDataDir, dataDir)
	t.Setenv(snapshot.EnvTerminationLog, logFile)
	if code, ok := Main(snapshot.CommandRestoreAgent, nil); !ok || code != 0 {
		t.Errorf("restore-agent over a restored member: exit %d ok=%v", code, ok)
	}
	if b, _ := os.ReadFile(logFile); strings.TrimSpace(string(b)) != `{"phase":"Skipped"}` {
		t.Errorf("result %q", b)
	}
	if code, ok := Main(snapshot.CommandSnapshotAgent, nil); !ok || code != 1 {
		t.Errorf("snapshot-agent without an environment: exit %d ok=%v", code, ok)
	}
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), `"reason":"Failed"`) {
		t.Errorf("result %q", b)
	}
	if code, ok := Main(snapshot.CommandInstallTools, nil); !ok || code != 2 {
		t.Errorf("install-tools without a directory: exit %d ok=%v", code, ok)
	}
}
