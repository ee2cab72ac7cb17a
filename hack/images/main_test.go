package main

import (
	"os"
	"path/filepath"
	"strings"
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

func TestPruneRemovesWhatIsNoLongerBuilt(t *testing.T) {
	out := t.TempDir()
	build := filepath.Join(out, ".build")
	files := []string{"operator.tar", "etcd-v3.4.0.tar", "notes.txt", ".build/etcd-v3.4.0.tar.inputs", ".build/operator.tar.inputs"}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := prune(out, build, []string{"operator.tar", "pause.tar"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(out, f))
		if gone := os.IsNotExist(err); gone != strings.Contains(f, "etcd-v3.4.0") {
			t.Errorf("%s: removed %v", f, gone)
		}
	}
}
