package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cozystack/etcd-operator/internal/ociimage"
)

// TestWriteSkipsUnchangedInputs: an archive is rewritten when its inputs, the builder or the
// archive itself changed, and only then.
func TestWriteSkipsUnchangedInputs(t *testing.T) {
	dir := t.TempDir()
	pause, archive, keyFile := filepath.Join(dir, "pause"), filepath.Join(dir, "pause.tar"), filepath.Join(dir, "pause.tar.inputs")
	if err := os.WriteFile(pause, []byte("fake pause"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := func() (ociimage.Spec, error) { return ociimage.PauseSpec(pause), nil }
	for _, step := range []struct {
		name   string
		change func()
		salt   string
		writes bool
	}{
		{"first", func() {}, "builder", true},
		{"nothing changed", func() {}, "builder", false},
		{"the binary rewritten alike", func() { _ = os.WriteFile(pause, []byte("fake pause"), 0o755) }, "builder", false},
		{"another binary", func() { _ = os.WriteFile(pause, []byte("fake pause 2"), 0o755) }, "builder", true},
		{"another builder", func() {}, "builder 2", true},
		{"the archive removed", func() { _ = os.Remove(archive) }, "builder 2", true},
		{"the key lost", func() { _ = os.Remove(keyFile) }, "builder 2", true},
	} {
		step.change()
		wrote, err := write(archive, keyFile, []byte(step.salt), spec)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if wrote != step.writes {
			t.Errorf("%s: wrote %v, want %v", step.name, wrote, step.writes)
		}
		if _, err := os.Stat(archive); err != nil {
			t.Errorf("%s: %v", step.name, err)
		}
	}
}
