package podfiles

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func readVolume(t *testing.T, dir, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func generations(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != DataLink && len(e.Name()) > 2 && e.Name()[:2] == ".." {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteAtomicLayoutAndModes(t *testing.T) {
	dir := t.TempDir()
	files := []File{
		{Path: "tls.crt", Data: []byte("cert-1"), Mode: 0o400},
		{Path: "../escape/x", Data: []byte("d"), Mode: 0o640},
	}
	changed, err := WriteAtomic(dir, files, -1, -1)
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	if got := readVolume(t, dir, "escape/x"); got != "d" {
		t.Errorf("escape/x = %q (a path is confined to the volume)", got)
	}
	if st, err := os.Stat(filepath.Join(dir, "tls.crt")); err != nil || st.Mode().Perm() != 0o400 {
		t.Errorf("tls.crt mode: %v %v", st, err)
	}
	// Relative links: the folder is bind-mounted elsewhere inside the container.
	for name, want := range map[string]string{"tls.crt": "..data/tls.crt", "escape": "..data/escape", DataLink: generations(t, dir)[0]} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
}

func TestWriteAtomicSwapsGenerations(t *testing.T) {
	dir := t.TempDir()
	v1 := []File{{Path: "tls.crt", Data: []byte("cert-1"), Mode: 0o644}, {Path: "old", Data: []byte("o"), Mode: 0o644}}
	if _, err := WriteAtomic(dir, v1, -1, -1); err != nil {
		t.Fatal(err)
	}
	first := generations(t, dir)
	changed, err := WriteAtomic(dir, v1, -1, -1)
	if err != nil || changed || !slices.Equal(generations(t, dir), first) {
		t.Fatalf("identical content rewrote the volume: changed=%v err=%v gens %v→%v", changed, err, first, generations(t, dir))
	}
	v2 := []File{{Path: "tls.crt", Data: []byte("cert-2"), Mode: 0o644}, {Path: "sub/new", Data: []byte("n"), Mode: 0o644}}
	if changed, err := WriteAtomic(dir, v2, -1, -1); err != nil || !changed {
		t.Fatalf("update: changed=%v err=%v", changed, err)
	}
	if got := readVolume(t, dir, "tls.crt"); got != "cert-2" {
		t.Errorf("tls.crt = %q after the update", got)
	}
	if got := readVolume(t, dir, "sub/new"); got != "n" {
		t.Errorf("sub/new = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(dir, "old")); !os.IsNotExist(err) {
		t.Errorf("a removed key is still visible: %v", err)
	}
	if gens := generations(t, dir); len(gens) != 1 || gens[0] == first[0] {
		t.Errorf("generations after the swap: %v (was %v); want one new one", gens, first)
	}
	// A mode change alone is a change too.
	v2[0].Mode = 0o400
	if changed, _ := WriteAtomic(dir, v2, -1, -1); !changed {
		t.Error("a mode change was not written")
	}
}

// A volume written by an older agent (plain files and folders) is converted in place: the pod
// keeps its bind mount of the folder.
func TestWriteAtomicConvertsFlatLayout(t *testing.T) {
	dir := t.TempDir()
	for path, data := range map[string]string{"tls.crt": "old", "sub/x": "old", "gone": "old"} {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := []File{{Path: "tls.crt", Data: []byte("new"), Mode: 0o644}, {Path: "sub/x", Data: []byte("new"), Mode: 0o644}}
	if _, err := WriteAtomic(dir, files, -1, -1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"tls.crt", "sub/x"} {
		if got := readVolume(t, dir, p); got != "new" {
			t.Errorf("%s = %q", p, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "gone")); !os.IsNotExist(err) {
		t.Errorf("a flat file of a removed key survived: %v", err)
	}
}
