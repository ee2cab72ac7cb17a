// Command chartfile vendors the third-party charts pinned in Chartfile.yaml, the way Tanka's
// `tk tool charts vendor` does: a chart whose vendored Chart.yaml already has the pinned version
// is left alone; any other is pulled with `helm pull --untar` into a temporary folder and then
// swapped in, so a failed pull (no network, wrong pin) changes nothing on disk.
//
// Usage (from the repository root, through `make vendor-charts`):
//
//	go run ./hack/chartfile -helm /path/to/helm [-file Chartfile.yaml]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/chartfile"
)

func main() {
	helm := flag.String("helm", "", "path to the helm binary (the tools cache's, from `make tools`)")
	file := flag.String("file", chartfile.FileName, "the Chartfile")
	flag.Parse()
	if err := run(*helm, *file); err != nil {
		fmt.Fprintln(os.Stderr, "vendor-charts:", err)
		os.Exit(1)
	}
}

func run(helm, file string) error {
	cf, err := chartfile.Load(file)
	if err != nil {
		return err
	}
	if err := cf.Validate(); err != nil {
		return fmt.Errorf("%s is invalid:\n%w", file, err)
	}
	if fi, err := os.Stat(helm); err != nil || fi.IsDir() {
		return fmt.Errorf("no helm binary at %q: run `make tools` first", helm)
	}
	base := filepath.Join(filepath.Dir(file), cf.Directory)
	repos := map[string]chartfile.Repository{}
	for _, r := range cf.Repositories {
		repos[r.Name] = r
	}
	for _, req := range cf.Requires {
		target := filepath.Join(base, req.Dir())
		if vendoredVersion(target) == req.Version {
			fmt.Printf("%s %s: already in %s\n", req.Chart, req.Version, target)
			continue
		}
		if err := pull(helm, repos[req.Repo()], req, target); err != nil {
			return err
		}
		fmt.Printf("%s %s: vendored into %s\n", req.Chart, req.Version, target)
	}
	return nil
}

func vendoredVersion(dir string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return ""
	}
	var meta struct {
		Version string `json:"version"`
	}
	if yaml.Unmarshal(raw, &meta) != nil {
		return ""
	}
	return meta.Version
}

func pull(helm string, repo chartfile.Repository, req chartfile.Requirement, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(target), ".pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// --repo pulls straight from the URL, without `helm repo add`: the user's helm configuration
	// is neither read nor changed.
	args := []string{"pull", req.Name(), "--repo", repo.URL, "--version", req.Version, "--untar", "--untardir", tmp}
	for flag, v := range map[string]string{"--ca-file": repo.CAFile, "--cert-file": repo.CertFile,
		"--key-file": repo.KeyFile, "--username": repo.Username, "--password": repo.Password} {
		if v != "" {
			args = append(args, flag, v)
		}
	}
	out, err := exec.Command(helm, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot pull %s %s from %s (%v):\n%s\n"+
			"This needs network access to the chart repository, and the pinned version must exist there. "+
			"Nothing was changed in %s", req.Chart, req.Version, repo.URL, err, strings.TrimSpace(string(out)), filepath.Dir(target))
	}
	pulled := filepath.Join(tmp, req.Name())
	if got := vendoredVersion(pulled); got != req.Version {
		return fmt.Errorf("helm pulled %s version %q, want %q", req.Chart, got, req.Version)
	}
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	return os.Rename(pulled, target)
}
