// Package golden compares objects, rendered as YAML, with files under testdata/ for tests of
// pure builders. `go test -update` rewrites the files; review them with git diff.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Assert compares obj, as YAML, with testdata/<name>.yaml of the calling package.
func Assert(t testing.TB, name string, obj any) {
	t.Helper()
	got, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name+".yaml")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file; diff it with -update and git diff:\n%s", path, got)
	}
}

// AssertText compares text with testdata/<name> of the calling package (for rendered output
// that is not an object: a plan, a table).
func AssertText(t testing.TB, name, text string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if text != string(want) {
		t.Errorf("%s differs from the golden file; diff it with -update and git diff:\n%s", path, text)
	}
}
