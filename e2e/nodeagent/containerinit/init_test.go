package containerinit

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLookPathUsesContainerPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "etcd")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notexec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=/", "PATH=/nonexistent:" + dir}
	cases := []struct {
		argv0, want string
		wantErr     bool
	}{
		{argv0: "etcd", want: bin},
		{argv0: "/bin/sh", want: "/bin/sh"},
		{argv0: "notexec", wantErr: true},
		{argv0: "missing", wantErr: true},
	}
	for _, tc := range cases {
		got, err := lookPath(tc.argv0, env)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("lookPath(%q) = %q, %v", tc.argv0, got, err)
		}
	}
}

func TestExistingAncestor(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	cases := map[string]string{
		filepath.Join(dir, "a", "b", "c", "d"): filepath.Join(real, "a", "b"),
		filepath.Join(dir, "link", "x"):        filepath.Join(real, "a"),
		"/nonexistent-top/x":                   "/",
	}
	for path, want := range cases {
		if got, err := existingAncestor(path); err != nil || got != want {
			t.Errorf("existingAncestor(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
}

func TestSpecRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spec.json")
	in := Spec{Argv: []string{"etcd"}, Env: []string{"A=b"}, UID: 65532, GID: 65532,
		Mounts: []Mount{{Source: "/s", Target: "/t", ReadOnly: true}, {Target: "/tmp", Tmpfs: true, Options: "size=1m"}}}
	if err := WriteSpec(path, in); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("spec mode %o: it holds the environment and must be private", st.Mode().Perm())
	}
	out, err := ReadSpec(path)
	if err != nil || out.UID != 65532 || len(out.Mounts) != 2 || !out.Mounts[1].Tmpfs || out.Mounts[0].Target != "/t" {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
}
