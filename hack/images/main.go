// Command images is `make images`: it builds the manager (with the Dockerfile's flags) and the
// pause program, then writes the operator, etcd and pause images as OCI layout tarballs into
// -out (package internal/ociimage says what they hold and what they are named).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cozystack/etcd-operator/internal/ociimage"
)

func main() {
	out := flag.String("out", "bin/images", "folder the tarballs are written to")
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
	if err := run(ctx, *out, *chart, *tools, strings.Fields(strings.Trim(*versions, `"'`))); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

// image is one archive to write, and the spec it packs.
type image struct {
	file string
	spec func() (ociimage.Spec, error)
}

func run(ctx context.Context, out, chart, tools string, versions []string) error {
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
	manager, pause := filepath.Join(build, "manager"), filepath.Join(build, "pause")
	if err := goBuild(ctx, manager, ociimage.ManagerPackage, ociimage.ManagerBuildFlags); err != nil {
		return err
	}
	if err := goBuild(ctx, pause, ociimage.PausePackage, ociimage.ManagerBuildFlags); err != nil {
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
	for _, im := range images {
		if err := write(filepath.Join(out, im.file), im.spec); err != nil {
			return err
		}
	}
	return nil
}

// goBuild builds pkg statically into out.
func goBuild(ctx context.Context, out, pkg string, flags []string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, pkg)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func write(path string, spec func() (ociimage.Spec, error)) error {
	start := time.Now()
	s, err := spec()
	if err != nil {
		return err
	}
	img, err := ociimage.Build(s)
	if err != nil {
		return err
	}
	if err := ociimage.WriteArchive(path, s.Name, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Printf("%-45s %s %s %5.1f MB %4.1fs\n", s.Name, path, digest.Hex[:12], float64(info.Size())/1e6, time.Since(start).Seconds())
	return nil
}
