package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is every entry's mtime and every config's creation time: builds are reproducible.
var epoch = time.Unix(0, 0).UTC()

// Entry is one directory, file or symbolic link of a layer, at an absolute path in the image.
// A file's content is Data, or the host file Source (read when the layer is written).
type Entry struct {
	Path     string
	Mode     fs.FileMode // permission bits, and fs.ModeSticky
	UID, GID int
	Dir      bool
	Link     string // a symbolic link's target
	Data     []byte
	Source   string
}

// Dir is a directory owned by root.
func Dir(p string, mode fs.FileMode) Entry { return Entry{Path: p, Mode: mode, Dir: true} }

// File is a file owned by root with the given content.
func File(p string, mode fs.FileMode, data []byte) Entry {
	return Entry{Path: p, Mode: mode, Data: data}
}

// HostFile is a file owned by root copied from the host file source.
func HostFile(p string, mode fs.FileMode, source string) Entry {
	return Entry{Path: p, Mode: mode, Source: source}
}

// Symlink is a symbolic link owned by root.
func Symlink(p, target string) Entry { return Entry{Path: p, Mode: 0o777, Link: target} }

// Owned is e owned by uid:gid.
func (e Entry) Owned(uid, gid int) Entry { e.UID, e.GID = uid, gid; return e }

// HostTree is the host folder source as entries under dir (directories, regular files and
// symbolic links, as they are; owned by root).
func HostTree(dir, source string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(source, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(source, p)
		at := path.Join(dir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			out = append(out, Dir(at, info.Mode().Perm()))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out = append(out, Symlink(at, target))
		case info.Mode().IsRegular():
			out = append(out, HostFile(at, info.Mode().Perm(), p))
		default:
			return fmt.Errorf("%s: neither a directory, a regular file nor a symbolic link", p)
		}
		return nil
	})
	return out, err
}

// Layer is an uncompressed layer of the entries, sorted by path, with every missing parent
// directory added (0755, root). Uncompressed: a layer is written once per build and read once
// per import on this machine, where gzip would cost more time than the bytes it saves.
func Layer(entries []Entry) (v1.Layer, error) {
	byPath := map[string]Entry{}
	for _, e := range entries {
		if !path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || e.Path == "/" {
			return nil, fmt.Errorf("entry path %q is not a clean absolute path below /", e.Path)
		}
		if _, dup := byPath[e.Path]; dup {
			return nil, fmt.Errorf("two entries at %s", e.Path)
		}
		byPath[e.Path] = e
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if _, ok := byPath[dir]; !ok {
				byPath[dir] = Dir(dir, 0o755)
			}
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range slices.Sorted(maps.Keys(byPath)) {
		if err := writeEntry(tw, byPath[p]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer), nil
}

func writeEntry(tw *tar.Writer, e Entry) error {
	h := &tar.Header{
		Name: strings.TrimPrefix(e.Path, "/"), Mode: tarMode(e.Mode), Uid: e.UID, Gid: e.GID,
		ModTime: epoch,
	}
	switch {
	case e.Dir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		return tw.WriteHeader(h)
	case e.Link != "":
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		return tw.WriteHeader(h)
	}
	h.Typeflag = tar.TypeReg
	if e.Source == "" {
		h.Size = int64(len(e.Data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(e.Data)
		return err
	}
	f, err := os.Open(e.Source)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	h.Size = info.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", e.Source, err)
	}
	return nil
}

// tarMode is the permission bits and the sticky bit in tar's encoding.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
