package localcluster

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// BuildBinary runs `go build -o out [buildFlags] ./pkg` in the module root. go build leaves an
// up-to-date binary untouched, so a warm call only checks build IDs. Concurrent
// callers (parallel test binaries) are serialised by a lock file next to out.
func BuildBinary(moduleRoot, pkg, out string, buildFlags ...string) error {
	if moduleRoot == "" {
		return fmt.Errorf("build %s: module root unknown (set the binary path instead)", pkg)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(out+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	cmd := exec.Command("go", append(append([]string{"build", "-o", out}, buildFlags...), pkg)...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-trimpath")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, buf.String())
	}
	return nil
}

// sharedBinDir caches binaries built by the harness for every cluster under root.
func sharedBinDir(root string) string { return filepath.Join(root, ".bin") }

// EnsureNodeAgent returns the node agent binary: o.NodeAgentBin, $LC_NODEAGENT_BIN,
// or a fresh build of ./e2e/cmd/nodeagent (shared by every cluster under StateRoot).
func EnsureNodeAgent(o Options) (string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return "", err
	}
	return ensureNodeAgent(o)
}

func ensureNodeAgent(o Options) (string, error) {
	if o.NodeAgentBin != "" {
		if _, err := os.Stat(o.NodeAgentBin); err != nil {
			return "", fmt.Errorf("node agent binary: %w", err)
		}
		return o.NodeAgentBin, nil
	}
	out := filepath.Join(sharedBinDir(o.StateRoot), "nodeagent")
	return out, BuildBinary(o.ModuleRoot, "./e2e/cmd/nodeagent", out)
}

// podToolsDir mirrors the tools cache's etcd-v* folders (and kube-apiserver of the
// kubernetes-v* ones, for tenant control planes) into <StateRoot>/.tools, a
// world-traversable path: the cache usually sits in /root (mode 0700), where a
// container running as a non-root uid cannot reach the etcd binary. Files are
// hard-linked (copied across filesystems) and refreshed when their size changes.
func podToolsDir(o Options) (string, error) {
	if err := os.MkdirAll(o.StateRoot, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(o.StateRoot, 0o755); err != nil {
		return "", err
	}
	root := filepath.Join(o.StateRoot, ".tools")
	lock, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil { // parallel test binaries
		return "", err
	}
	dirs, err := filepath.Glob(filepath.Join(o.ToolsDir, "etcd-v*"))
	if err != nil {
		return "", err
	}
	for _, src := range dirs {
		if err := mirrorDir(src, filepath.Join(root, filepath.Base(src)), nil); err != nil {
			return "", err
		}
	}
	kube, err := filepath.Glob(filepath.Join(o.ToolsDir, "kubernetes-v*"))
	if err != nil {
		return "", err
	}
	for _, src := range kube {
		if err := mirrorDir(src, filepath.Join(root, filepath.Base(src)), map[string]bool{"kube-apiserver": true}); err != nil {
			return "", err
		}
	}
	return root, os.Chmod(root, 0o755)
}

// mirrorDir mirrors src's files (only those in only, when it is not nil) into dst.
func mirrorDir(src, dst string, only map[string]bool) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || (only != nil && !only[e.Name()]) {
			continue
		}
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := os.Stat(from)
		if err != nil {
			return err
		}
		if ti, err := os.Stat(to); err == nil && ti.Size() == fi.Size() && os.SameFile(fi, ti) {
			continue
		}
		tmp := to + ".tmp"
		_ = os.Remove(tmp)
		if err := os.Link(from, tmp); err != nil {
			if err := copyFile(from, tmp); err != nil {
				return err
			}
		}
		if err := os.Chmod(tmp, 0o755); err != nil {
			return err
		}
		if err := os.Rename(tmp, to); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
