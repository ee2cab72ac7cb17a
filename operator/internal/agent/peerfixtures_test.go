package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// The Secret's pair lands where etcd's auto-TLS looks, replacing a self-signed pair, with
// private permissions; a missing key installs nothing.
func TestInstallPeerFixtures(t *testing.T) {
	src, data := t.TempDir(), t.TempDir()
	fixtures := filepath.Join(data, "fixtures", "peer")
	for name, content := range map[string]string{pki.KeyCert: "CERT", pki.KeyKey: "KEY"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(fixtures, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fixtures, fixtureCert), []byte("SELF-SIGNED"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := InstallPeerFixturesCommand([]string{src, fixtures}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for name, want := range map[string]string{fixtureCert: "CERT", fixtureKey: "KEY"} {
		got, err := os.ReadFile(filepath.Join(fixtures, name))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q %v, want %q", name, got, err, want)
		}
		if fi, _ := os.Stat(filepath.Join(fixtures, name)); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", name, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(fixtures)
	if len(entries) != 2 {
		t.Errorf("fixtures dir has %d entries, want 2 (no temporary file left)", len(entries))
	}

	empty, fresh := t.TempDir(), filepath.Join(t.TempDir(), "fixtures", "peer")
	if code := InstallPeerFixturesCommand([]string{empty, fresh}, &bytes.Buffer{}); code != 1 {
		t.Errorf("exit %d without a key pair, want 1", code)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("something was installed without a key pair: %v", err)
	}
	if code := InstallPeerFixturesCommand([]string{src}, &bytes.Buffer{}); code != 2 {
		t.Errorf("exit %d on bad usage, want 2", code)
	}
}
