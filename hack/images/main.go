// Command images is `make images`: it builds the manager (with the Dockerfile's flags) and the
// pause program, then writes the operator, etcd and pause images as OCI layout tarballs into
// -out (package internal/ociimage says what they hold and what they are named).
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cozystack/etcd-operator/internal/ociimage"
)

func main() {
	out := flag.String("out", "bin/images", "folder the tarballs are written to")
	manager := flag.String("manager", "bin/manager", "the manager binary to pack when it is built as the Dockerfile builds it (else one is built)")
	chart := flag.String("chart", "charts/etcd-operator", "the operator chart, whose default image the operator image is named")
	tools := flag.String("tools", os.Getenv("ETCD_OPERATOR_TOOLS"), "the tools cache (etcd-v<version>/ holds each etcd's binaries)")
	versions := flag.String("etcd-versions", os.Getenv("ETCD_VERSIONS"),
		"the etcd versions to build images of, space-separated (quotes around the list, as hack/versions.env has them, are ignored)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "images: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *out, *chart, *manager, *tools, strings.Fields(strings.Trim(*versions, `"'`))); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// image is one archive to write, and the spec it packs.
type image struct {
	file string
	spec func() (ociimage.Spec, error)
}

func run(ctx context.Context, out, chart, manager, tools string, versions []string) error {
	if tools == "" || len(versions) == 0 {
		return fmt.Errorf("-tools and -etcd-versions are required (the Makefile passes them)")
	}
	operatorRef, err := ociimage.OperatorImage(chart)
	if err != nil {
		return err
	}
	build := filepath.Join(out, ".build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		return err
	}
	manager, pause, err := binaries(ctx, build, manager)
	if err != nil {
		return err
	}
	images := []image{
		{ociimage.OperatorArchive, func() (ociimage.Spec, error) {
			return ociimage.OperatorSpec(operatorRef, manager, ociimage.DebianHost)
		}},
		{ociimage.PauseArchive, func() (ociimage.Spec, error) { return ociimage.PauseSpec(pause), nil }},
	}
	for _, v := range versions {
		bin := filepath.Join(tools, "etcd-v"+strings.TrimPrefix(v, "v"))
		images = append(images, image{ociimage.EtcdArchive(v), func() (ociimage.Spec, error) {
			return ociimage.EtcdSpec(v, bin, ociimage.DebianHost)
		}})
	}
	self, err := builderDigest()
	if err != nil {
		return err
	}
	var files []string
	for _, im := range images {
		if _, err := write(filepath.Join(out, im.file), filepath.Join(build, im.file+".inputs"), self, im.spec); err != nil {
			return err
		}
		files = append(files, im.file)
	}
	return prune(out, build, files)
}

// binaries are the manager to pack (the given one when built as the Dockerfile builds it, else
// one built so into build/) and the pause program, built into build/.
func binaries(ctx context.Context, build, manager string) (string, string, error) {
	built := filepath.Join(build, "manager")
	if err := ociimage.CheckManagerBuild(manager); err == nil {
		_ = os.Remove(built) // from a run that could not use the given one
	} else {
		fmt.Printf("building the manager as the Dockerfile does (%v)\n", err)
		manager = built
		if err := goBuild(ctx, manager, ociimage.ManagerPackage); err != nil {
			return "", "", err
		}
	}
	pause := filepath.Join(build, "pause")
	return manager, pause, goBuild(ctx, pause, ociimage.PausePackage)
}

// prune removes the archives in out (and their keys in build) that are not among keep: an etcd
// version dropped from ETCD_VERSIONS, say. Nodes import every archive of the folder.
func prune(out, build string, keep []string) error {
	archives, err := filepath.Glob(filepath.Join(out, "*.tar"))
	if err != nil {
		return err
	}
	for _, a := range archives {
		if slices.Contains(keep, filepath.Base(a)) {
			continue
		}
		fmt.Printf("removing %s: no longer built\n", a)
		for _, f := range []string{a, filepath.Join(build, filepath.Base(a)+".inputs")} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}

// builderDigest is this program's own content: a changed builder rewrites every archive.
func builderDigest() ([]byte, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(exe)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	return sum[:], nil
}

// goBuild builds pkg into out as the Dockerfile builds the manager (static, stripped).
func goBuild(ctx context.Context, out, pkg string) error {
	args := append(append([]string{"build"}, ociimage.ManagerBuildFlags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// write writes the archive at path unless the inputs key kept at keyFile says the archive there
// was written from the same inputs; it says whether it wrote.
func write(path, keyFile string, salt []byte, spec func() (ociimage.Spec, error)) (bool, error) {
	start := time.Now()
	s, err := spec()
	if err != nil {
		return false, err
	}
	key, err := ociimage.InputsKey(s, salt)
	if err != nil {
		return false, err
	}
	if upToDate(path, keyFile, key) {
		fmt.Printf("%-45s %s up to date\n", s.Name, path)
		return false, nil
	}
	// A failed write must not leave the old key beside a new archive.
	if err := os.Remove(keyFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	img, err := ociimage.Build(s)
	if err != nil {
		return false, err
	}
	if err := ociimage.WriteArchive(path, s.Name, img); err != nil {
		return false, err
	}
	digest, err := img.Digest()
	if err != nil {
		return false, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	fmt.Printf("%-45s %s %s %5.1f MB %4.1fs\n", s.Name, path, digest.Hex[:12], float64(info.Size())/1e6, time.Since(start).Seconds())
	return true, os.WriteFile(keyFile, []byte(key), 0o644)
}

func upToDate(path, keyFile, key string) bool {
	kept, err := os.ReadFile(keyFile)
	if err != nil || string(kept) != key {
		return false
	}
	_, err = os.Stat(path)
	return err == nil
}
