package containerinit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main runs container-init with args ["--spec", path]; it only returns on error.
func Main(args []string) error {
	if len(args) != 2 || args[0] != "--spec" {
		return fmt.Errorf("usage: %s --spec <file>", Subcommand)
	}
	spec, err := ReadSpec(args[1])
	if err != nil {
		return err
	}
	if err := os.Remove(args[1]); err != nil { // the env may hold secrets: keep it off the disk
		return err
	}
	return run(spec)
}

func run(spec Spec) error {
	// unshare --propagation private did this already; repeat it so nothing can leak to the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if spec.Hostname != "" {
		if err := syscall.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("sethostname: %w", err)
		}
	}
	v := &view{scratch: spec.ScratchDir, ours: map[string]bool{}}
	// Sources are opened before anything is mounted: a mount target (a private /tmp, say) may
	// shadow the path of a later source, such as the agent's state directory.
	sources, err := openSources(spec.Mounts)
	if err != nil {
		return err
	}
	openedAt := v.roots
	for i, m := range spec.Mounts {
		source := func() (*os.File, error) {
			// Descriptors opened under the old root cannot be bind sources after a pivot_root;
			// the new root shows the same host paths, so open them again.
			if v.roots != openedAt {
				reopened, err := openSources(spec.Mounts[i:])
				if err != nil {
					return nil, err
				}
				copy(sources[i:], reopened)
				openedAt = v.roots
			}
			return sources[i], nil
		}
		if err := v.mount(m, source); err != nil {
			return err
		}
	}
	if spec.WorkingDir != "" {
		if err := v.ensure(spec.WorkingDir, true); err != nil {
			return err
		}
	}
	if err := dropPrivileges(spec); err != nil {
		return err
	}
	if spec.WorkingDir != "" {
		if err := os.Chdir(spec.WorkingDir); err != nil {
			return err
		}
	}
	binary, err := lookPath(spec.Argv[0], spec.Env)
	if err != nil {
		return err
	}
	return syscall.Exec(binary, spec.Argv, spec.Env)
}

func dropPrivileges(spec Spec) error {
	if spec.UID < 0 && spec.GID < 0 {
		return nil
	}
	gid := spec.GID
	if gid < 0 {
		gid = 0
	}
	if err := syscall.Setgroups(spec.Groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if spec.UID >= 0 {
		if err := syscall.Setuid(spec.UID); err != nil {
			return fmt.Errorf("setuid: %w", err)
		}
	}
	return nil
}

// lookPath finds argv0 on the container's PATH (not the agent's).
func lookPath(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		return argv0, nil
	}
	path := ""
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	for _, dir := range filepath.SplitList(path) {
		candidate := filepath.Join(dir, argv0)
		if st, err := os.Stat(candidate); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q: %w", argv0, path, exec.ErrNotFound)
}

// openSources opens every bind source as an O_PATH descriptor (nil for tmpfs mounts).
func openSources(mounts []Mount) ([]*os.File, error) {
	files := make([]*os.File, len(mounts))
	for i, m := range mounts {
		if m.Tmpfs {
			continue
		}
		fd, err := unix.Open(m.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("mount source %s: %w", m.Source, err)
		}
		files[i] = os.NewFile(uintptr(fd), m.Source)
	}
	return files, nil
}
