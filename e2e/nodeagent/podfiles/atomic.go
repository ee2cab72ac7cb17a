package podfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DataLink is the symlink that names the current generation of a volume's files, as in the
// kubelet's atomic writer: `<dir>/..data -> ..<generation>`, and every user-visible top-level
// entry is `<dir>/<name> -> ..data/<name>`. Swapping ..data with one rename switches all files
// at once, so a reader (etcd loading tls.crt and tls.key per handshake) never sees a new
// certificate beside an old key for longer than its own two reads, and never a half-written file.
const DataLink = "..data"

// WriteAtomic makes dir hold exactly files, owned by uid/gid when they are >= 0. It reports
// whether anything changed; identical content leaves the directory untouched. A directory in
// the older flat layout (plain files) is converted.
func WriteAtomic(dir string, files []File, uid, gid int) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	old, _ := os.Readlink(filepath.Join(dir, DataLink))
	if old != "" && sameContent(filepath.Join(dir, old), files) && linksInPlace(dir, files) {
		return false, nil
	}
	gen, err := writeGeneration(dir, files, uid, gid)
	if err != nil {
		return false, err
	}
	if err := replaceSymlink(dir, DataLink, gen); err != nil {
		return false, err
	}
	if err := linkTopLevel(dir, files); err != nil {
		return false, err
	}
	if err := removeStaleEntries(dir, files, gen); err != nil {
		return false, err
	}
	return true, nil
}

// writeGeneration writes files into a fresh ..<generation> folder and returns its name.
func writeGeneration(dir string, files []File, uid, gid int) (string, error) {
	gen, err := os.MkdirTemp(dir, "..gen_")
	if err != nil {
		return "", err
	}
	// MkdirTemp makes 0700; a non-root container user must traverse it.
	if err := os.Chmod(gen, 0o755); err != nil {
		return "", err
	}
	for _, f := range files {
		p := filepath.Join(gen, filepath.Clean("/"+f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return "", err
		}
		if err := os.Chmod(p, f.Mode); err != nil { // WriteFile's mode is filtered by the umask
			return "", err
		}
		if uid >= 0 || gid >= 0 {
			if err := os.Lchown(p, uid, gid); err != nil {
				return "", err
			}
		}
	}
	return filepath.Base(gen), nil
}

// replaceSymlink points dir/name at target with a rename, which is atomic; a plain file or
// folder of the flat layout in its way is removed first.
func replaceSymlink(dir, name, target string) error {
	path := filepath.Join(dir, name)
	if cur, err := os.Readlink(path); err == nil && cur == target {
		return nil
	}
	if st, err := os.Lstat(path); err == nil && st.IsDir() {
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "..tmp_"+name)
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// linkTopLevel makes every top-level name of files a relative link through ..data, so the
// links stay valid inside the container, where the folder is bind-mounted elsewhere.
func linkTopLevel(dir string, files []File) error {
	for name := range topLevel(files) {
		if err := replaceSymlink(dir, name, filepath.Join(DataLink, name)); err != nil {
			return err
		}
	}
	return nil
}

// removeStaleEntries deletes the older generations and the top-level entries of keys that are
// gone (and the plain files of the flat layout).
func removeStaleEntries(dir string, files []File, gen string) error {
	keep := topLevel(files)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if name == DataLink || name == gen || keep[name] {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
	}
	return errors.Join(errs...)
}

func topLevel(files []File) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		rel := strings.TrimPrefix(filepath.Clean("/"+f.Path), "/")
		first, _, _ := strings.Cut(rel, "/")
		out[first] = true
	}
	return out
}

func linksInPlace(dir string, files []File) bool {
	for name := range topLevel(files) {
		if cur, err := os.Readlink(filepath.Join(dir, name)); err != nil || cur != filepath.Join(DataLink, name) {
			return false
		}
	}
	return true
}

// sameContent reports whether generation folder gen holds exactly files, with their modes.
func sameContent(gen string, files []File) bool {
	want := map[string]File{}
	for _, f := range files {
		want[strings.TrimPrefix(filepath.Clean("/"+f.Path), "/")] = f
	}
	seen := 0
	err := filepath.WalkDir(gen, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(gen, path)
		f, ok := want[rel]
		if !ok {
			return fmt.Errorf("extra file %s", rel)
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.Mode.Perm() {
			return fmt.Errorf("mode of %s", rel)
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(data, f.Data) {
			return fmt.Errorf("content of %s", rel)
		}
		seen++
		return nil
	})
	return err == nil && seen == len(want)
}
