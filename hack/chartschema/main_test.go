package main

import (
	"os"
	"path/filepath"
	"testing"
)

// The committed charts must match what the generator writes now (make verify checks the same
// thing; this catches it in `go test` without the tools cache).
func TestRepoChartsUpToDate(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "..", "charts", "*", "values.yaml"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no charts found: %v", err)
	}
	for _, v := range dirs {
		dir := filepath.Dir(v)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			schema, readme, err := plan(dir)
			if err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string]string{"values.schema.json": string(schema), "README.md": readme} {
				got, err := os.ReadFile(filepath.Join(dir, file))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Errorf("%s/%s is stale; run `make manifests`", dir, file)
				}
			}
		})
	}
}
