package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestInstallTools(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "src")
	if err := os.WriteFile(exe, []byte("#!/bin/true\nbinary"), 0o700); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "tools")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := InstallTools(exe, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dst, "manager"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed %v %v", fi, err)
	}
	if got, _ := os.ReadFile(filepath.Join(dst, "manager")); !bytes.Equal(got, []byte("#!/bin/true\nbinary")) {
		t.Errorf("copied %q", got)
	}
	if names := listNames(t, dst); len(names) != 1 {
		t.Errorf("left %v", names)
	}
	// The command copies the running executable (here: the test binary).
	var stderr bytes.Buffer
	if code := InstallToolsCommand([]string{dst}, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	self, _ := os.Executable()
	want, _ := os.ReadFile(self)
	if got, _ := os.ReadFile(filepath.Join(dst, "manager")); !bytes.Equal(got, want) {
		t.Error("install-tools did not copy the running executable")
	}
	if code := InstallToolsCommand(nil, &stderr); code != 2 {
		t.Errorf("no directory: exit %d", code)
	}
	if code := InstallToolsCommand([]string{filepath.Join(dir, "none")}, &stderr); code != 1 {
		t.Errorf("missing directory: exit %d", code)
	}
}
