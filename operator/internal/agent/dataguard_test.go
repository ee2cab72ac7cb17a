package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// The guard lets etcd start on anything while no data is expected, on a write-ahead log when
// it is, and refuses an empty dir (or one with only the peer fixtures in it) with its own exit
// code and a termination message that says why.
func TestGuardDataDir(t *testing.T) {
	withWAL := t.TempDir()
	if err := os.MkdirAll(filepath.Join(withWAL, "member", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withWAL, "member", "wal", "0000000000000000-0000000000000000.wal"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fixturesOnly := t.TempDir()
	if err := os.MkdirAll(filepath.Join(fixturesOnly, "fixtures", "peer"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(fixturesOnly, "member", "wal"), 0o700); err != nil { // no segment yet
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dir      string
		expected string
		code     int
	}{
		{"not expected, empty", t.TempDir(), "false", 0},
		{"annotation missing", t.TempDir(), "", 0},
		{"expected, has a WAL", withWAL, "true", 0},
		{"expected, empty", t.TempDir(), "true", v1alpha2.DataGuardRefusedExitCode},
		{"expected, only fixtures and an empty wal dir", fixturesOnly, "true", v1alpha2.DataGuardRefusedExitCode},
	} {
		t.Run(tc.name, func(t *testing.T) {
			termLog := filepath.Join(t.TempDir(), "termination-log")
			env := map[string]string{snapshot.EnvDataExpected: tc.expected, snapshot.EnvTerminationLog: termLog}
			var stderr bytes.Buffer
			code := GuardDataDirCommand([]string{tc.dir}, func(k string) string { return env[k] }, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			msg, _ := os.ReadFile(termLog)
			if refused := code != 0; refused != strings.Contains(string(msg), "holds no etcd data") {
				t.Errorf("termination message %q for exit %d", msg, code)
			}
		})
	}
	if code := GuardDataDirCommand(nil, func(string) string { return "true" }, &bytes.Buffer{}); code != 2 {
		t.Errorf("no data dir: exit %d, want 2 (usage)", code)
	}
}
