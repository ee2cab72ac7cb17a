package dryrun

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var env *Env

// TestMain starts one envtest for the package. Cozystack's ApplicationDefinition CRD is added
// when the compatibility fixtures beside the clone have it; without it that kind is skipped.
func TestMain(m *testing.M) {
	var extra []string
	if shared, ok := sharedDir(); ok {
		if dir := filepath.Join(shared, "crds", "cozystack"); isDir(dir) {
			extra = append(extra, dir)
		}
	}
	var err error
	if env, err = Start(extra...); err != nil {
		fmt.Fprintln(os.Stderr, "dryrun:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "dryrun: stopping envtest:", err)
	}
	os.Exit(code)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
