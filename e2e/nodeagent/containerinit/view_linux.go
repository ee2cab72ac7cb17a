package containerinit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// view builds the container's filesystem view in its private mount namespace.
type view struct {
	scratch string
	// ours are directories that belong to the pod (tmpfs made here, or writable volume mounts):
	// creating entries in them does not touch the host.
	ours   map[string]bool
	stages int
	roots  int // pivot_roots done
}

// mount applies m; source gives the O_PATH descriptor of m.Source (unused for a tmpfs).
func (v *view) mount(m Mount, source func() (*os.File, error)) error {
	isDir := true
	sourcePath := ""
	if !m.Tmpfs {
		f, err := source()
		if err != nil {
			return err
		}
		// Through the descriptor: an earlier mount (the private /tmp) may hide the path by now.
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("mount source %s: %w", m.Source, err)
		}
		isDir = st.IsDir()
	}
	if err := v.ensure(m.Target, isDir); err != nil {
		return fmt.Errorf("mount target %s: %w", m.Target, err)
	}
	if !m.Tmpfs {
		f, err := source() // again: ensure may have pivoted to a new root
		if err != nil {
			return err
		}
		sourcePath = fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	}
	if m.Tmpfs {
		if err := syscall.Mount("tmpfs", m.Target, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, m.Options); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", m.Target, err)
		}
	} else if err := syscall.Mount(sourcePath, m.Target, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", m.Source, m.Target, err)
	}
	if m.ReadOnly {
		flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
		if err := syscall.Mount("", m.Target, "", flags, ""); err != nil {
			return fmt.Errorf("read-only remount of %s: %w", m.Target, err)
		}
	} else if isDir {
		v.ours[filepath.Clean(m.Target)] = true
	}
	return nil
}

// ensure makes path exist (a directory, or an empty file when !isDir) without writing to the host.
func (v *view) ensure(path string, isDir bool) error {
	path = filepath.Clean(path)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	ancestor, err := existingAncestor(path)
	if err != nil {
		return err
	}
	if !v.ours[ancestor] {
		if ancestor == "/" {
			err = v.newRoot()
		} else {
			err = v.mimic(ancestor)
		}
		if err != nil {
			return err
		}
	}
	return v.create(path, isDir)
}

// create makes the missing part of path below an ancestor that is ours.
func (v *view) create(path string, isDir bool) error {
	dir := path
	if !isDir {
		dir = filepath.Dir(path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for d := dir; d != "/" && !v.ours[d]; d = filepath.Dir(d) {
		v.ours[d] = true
	}
	if isDir {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// existingAncestor is the deepest existing directory above path, with symlinks resolved.
func existingAncestor(path string) (string, error) {
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil {
			if !st.IsDir() {
				return "", fmt.Errorf("%s is not a directory", d)
			}
			return filepath.EvalSymlinks(d)
		}
		if d == "/" {
			return "/", nil
		}
	}
}

// mimic replaces dir by a tmpfs that shows dir's original entries through bind mounts.
func (v *view) mimic(dir string) error {
	stage, err := v.stage()
	if err != nil {
		return err
	}
	if err := syscall.Mount(dir, stage, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("stage %s: %w", dir, err)
	}
	if err := mountTmpfsLike(dir, dir); err != nil {
		return err
	}
	if err := replicate(stage, dir); err != nil {
		return err
	}
	v.ours[dir] = true
	if err := unix.Unmount(stage, unix.MNT_DETACH); err != nil {
		return err
	}
	return os.Remove(stage)
}

// newRoot pivots into a tmpfs root that shows the old root's entries through bind mounts.
func (v *view) newRoot() error {
	root, err := v.stage()
	if err != nil {
		return err
	}
	if err := mountTmpfsLike("/", root); err != nil {
		return err
	}
	if err := replicate("/", root); err != nil {
		return err
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root on the new one; detaching it leaves only the new root.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	v.ours["/"] = true
	v.roots++
	return nil
}

func (v *view) stage() (string, error) {
	v.stages++
	dir := filepath.Join(v.scratch, "stage-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(v.stages))
	return dir, os.MkdirAll(dir, 0o700)
}

// mountTmpfsLike mounts a tmpfs at target with the owner and mode of like.
func mountTmpfsLike(like, target string) error {
	st, err := os.Stat(like)
	if err != nil {
		return err
	}
	sys := st.Sys().(*syscall.Stat_t)
	opts := fmt.Sprintf("mode=%o,uid=%d,gid=%d", st.Mode().Perm()|modeSticky(st.Mode()), sys.Uid, sys.Gid)
	if err := syscall.Mount("tmpfs", target, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("tmpfs over %s: %w", target, err)
	}
	return nil
}

func modeSticky(m os.FileMode) os.FileMode {
	if m&os.ModeSticky != 0 {
		return 0o1000
	}
	return 0
}

// replicate recreates every entry of src in dst: symlinks as symlinks, everything else as a bind mount.
func replicate(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if e.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
			continue
		}
		if e.IsDir() {
			err = os.Mkdir(to, 0o755)
		} else {
			var f *os.File
			if f, err = os.Create(to); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			return err
		}
		if err := syscall.Mount(from, to, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s back: %w", from, err)
		}
	}
	return nil
}
