package snapshot

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestDirStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "snapshots", "c1") // created by Put
	s, err := NewDirStore(dir, "nightly.db", "backups", "snapshots/c1/nightly.db")
	if err != nil {
		t.Fatal(err)
	}
	if s.URI() != "pvc://backups/snapshots/c1/nightly.db" {
		t.Errorf("URI %s", s.URI())
	}
	if _, ok, err := s.Lookup(ctx); ok || err != nil {
		t.Fatalf("Lookup of nothing: %v %v", ok, err)
	}
	stream := etcdStream(randomBytes(3<<20, 5))
	m := Meta{Owner: "uid-1", Member: "c1-0", Revision: 5, EtcdVersion: "3.7.3"}
	if err := s.Put(ctx, bytes.NewReader(stream), m); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); len(got) != 2 || got[0] != "nightly.db" || got[1] != "nightly.db.owner" {
		t.Errorf("directory holds %v", got)
	}
	got, ok, err := s.Lookup(ctx)
	if !ok || err != nil || got.Owner != "uid-1" || got.Revision != 5 || got.CompletionTime == "" {
		t.Fatalf("Lookup: %+v %v %v", got, ok, err)
	}
	rc, err := s.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Verify(rc)
	rc.Close()
	if err != nil || sum.Size != int64(len(stream)) {
		t.Fatalf("Verify: %+v %v", sum, err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "nightly.db"))
	if fi.Mode().Perm() != fileMode {
		t.Errorf("mode %v", fi.Mode())
	}
	if err := s.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("after Delete: %v", got)
	}
}

// A source that fails mid-stream leaves nothing behind, and a full volume is NoSpace.
func TestDirStoreFailures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := NewDirStore(dir, "x.db", "backups", "x.db")
	broken := errors.New("member died")
	src := &failingReader{r: bytes.NewReader(randomBytes(2<<20, 6)), err: broken}
	if err := s.Put(ctx, src, Meta{Owner: "u"}); !errors.Is(err, broken) {
		t.Fatalf("Put: %v, want the source's error", err)
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("a failed Put left %v", got)
	}
	// /dev/full refuses every write with ENOSPC; the part file is opened through the link.
	if err := os.Symlink("/dev/full", filepath.Join(dir, "x.db.part")); err != nil {
		t.Fatal(err)
	}
	err := s.Put(ctx, bytes.NewReader(randomBytes(1<<20, 7)), Meta{Owner: "u"})
	if ReasonOf(err) != ReasonNoSpace {
		t.Fatalf("Put on a full volume: %v (reason %s), want NoSpace", err, ReasonOf(err))
	}
	if got := listDir(t, dir); len(got) != 0 {
		t.Errorf("a failed Put left %v", got)
	}
	if err := os.Mkdir(filepath.Join(dir, "x.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Lookup(ctx); !ok || ReasonOf(err) != ReasonArtifactExists {
		t.Errorf("a directory in the way: %v %v", ok, err)
	}
}

func TestNewDirStoreValidates(t *testing.T) {
	for _, tc := range []struct{ dir, file, claim, path string }{
		{"rel/dir", "x.db", "c", "x.db"},
		{"/d", "a/x.db", "c", "x.db"},
		{"/d", "x.db", "C", "x.db"},
		{"/d", "x.db", "c", "../x.db"},
		{"/d", "x.db", "c", "/x.db"},
	} {
		if _, err := NewDirStore(tc.dir, tc.file, tc.claim, tc.path); err == nil {
			t.Errorf("NewDirStore(%+v) accepted", tc)
		}
	}
}

func TestFileSource(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "x.db")
	if err := os.WriteFile(file, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n, err := (FileSource{Path: file}).Size(ctx); n != 5 || err != nil {
		t.Errorf("Size: %d %v", n, err)
	}
	rc, err := FileSource{Path: file}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "12345" {
		t.Errorf("read %q", b)
	}
	for _, p := range []string{dir, filepath.Join(dir, "missing.db")} {
		if _, err := (FileSource{Path: p}).Size(ctx); ReasonOf(err) != ReasonSourceNotFound {
			t.Errorf("Size(%s): %v, want SourceNotFound", p, err)
		}
	}
}
