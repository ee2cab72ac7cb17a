package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Permissions of what the PVC store writes: the owner (the agents' uid) and the Pod's fsGroup
// may read a snapshot, which holds every key of the cluster; nobody else.
const (
	dirMode  fs.FileMode = 0o750
	fileMode fs.FileMode = 0o640
)

// PartSuffix marks a file still being written: <file>.part, renamed into place once complete.
const PartSuffix = ".part"

// DirStore keeps an artifact as a file in a directory of a mounted claim. The owner is recorded
// in a JSON sidecar, <file>.owner, written before the file appears (not an xattr: many
// volume types, NFS among them, have no user xattrs).
type DirStore struct {
	dir, file, uri string
}

var _ Store = (*DirStore)(nil)

// NewDirStore writes file in dir; claim and claimPath (the path within the claim) only form
// the URI.
func NewDirStore(dir, file, claim, claimPath string) (*DirStore, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%s %q: must be an absolute path", EnvPVCDir, dir)
	}
	if err := ValidateFileName(file); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPVCFile, err)
	}
	if err := ValidateClaim(claim); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPVCClaim, err)
	}
	if err := ValidateClaimPath(claimPath); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPVCPath, err)
	}
	return &DirStore{dir: dir, file: file, uri: PVCURI(claim, claimPath)}, nil
}

func (d *DirStore) URI() string       { return d.uri }
func (d *DirStore) path() string      { return filepath.Join(d.dir, d.file) }
func (d *DirStore) part() string      { return d.path() + PartSuffix }
func (d *DirStore) ownerFile() string { return d.path() + OwnerSuffix }

// Lookup: an existing file whose sidecar is missing or unreadable has an unknown (empty) owner.
func (d *DirStore) Lookup(context.Context) (Meta, bool, error) {
	fi, err := os.Lstat(d.path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Meta{}, false, nil
	case err != nil:
		return Meta{}, false, fileError(ReasonFailed, err)
	case !fi.Mode().IsRegular():
		return Meta{}, true, Fail(ReasonArtifactExists, "%s exists and is not a regular file", d.path())
	}
	var m Meta
	if b, err := os.ReadFile(d.ownerFile()); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	m.CompletionTime = FormatTime(fi.ModTime())
	return m, true, nil
}

// Put writes <file>.part, syncs it, records the owner, renames the part into place and syncs
// the directory, so that a crash leaves either no artifact or a complete one.
func (d *DirStore) Put(_ context.Context, r io.Reader, m Meta) (err error) {
	if err := os.MkdirAll(d.dir, dirMode); err != nil {
		return fileError(ReasonFailed, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(d.part())
		}
	}()
	if err := writeSynced(d.part(), r); err != nil {
		return err
	}
	owner, _ := json.Marshal(m)
	if err := writeSynced(d.ownerFile()+PartSuffix, bytes.NewReader(owner)); err != nil {
		_ = os.Remove(d.ownerFile() + PartSuffix)
		return err
	}
	if err := os.Rename(d.ownerFile()+PartSuffix, d.ownerFile()); err != nil {
		return fileError(ReasonFailed, err)
	}
	if err := os.Rename(d.part(), d.path()); err != nil {
		return fileError(ReasonFailed, err)
	}
	return fileError(ReasonFailed, syncDir(d.dir))
}

// writeSynced copies r into a new file at p and syncs it. (The snapshot agent tells a failed
// source from a failed volume by its Tee, not by this error.)
func writeSynced(p string, r io.Reader) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fileMode)
	if err != nil {
		return fileError(ReasonFailed, err)
	}
	_, err = io.CopyBuffer(f, r, make([]byte, copyBuffer))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return fileError(ReasonFailed, err)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func (d *DirStore) Open(context.Context) (io.ReadCloser, error) {
	f, err := os.Open(d.path())
	if err != nil {
		return nil, fileError(ReasonFailed, err)
	}
	return f, nil
}

func (d *DirStore) Delete(context.Context) error {
	err := os.Remove(d.path())
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if oerr := os.Remove(d.ownerFile()); oerr != nil && !errors.Is(oerr, fs.ErrNotExist) && err == nil {
		err = oerr
	}
	return fileError(ReasonFailed, err)
}

// FileSource reads a snapshot file (the restore agent's PVC source).
type FileSource struct{ Path string }

var _ Source = FileSource{}

func (f FileSource) Describe() string { return f.Path }

// Size is the file's length; a missing file or a directory is SourceNotFound.
func (f FileSource) Size(context.Context) (int64, error) {
	fi, err := os.Stat(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, Fail(ReasonSourceNotFound, "no snapshot file at %s", f.Path)
	case err != nil:
		return 0, fileError(ReasonFailed, err)
	case fi.IsDir():
		return 0, Fail(ReasonSourceNotFound, "%s is a directory, not a snapshot file", f.Path)
	case !fi.Mode().IsRegular():
		return 0, Fail(ReasonSourceNotFound, "%s is not a regular file", f.Path)
	}
	return fi.Size(), nil
}

func (f FileSource) Open(context.Context) (io.ReadCloser, error) {
	r, err := os.Open(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, Fail(ReasonSourceNotFound, "no snapshot file at %s", f.Path)
	case err != nil:
		return nil, fileError(ReasonFailed, err)
	}
	return r, nil
}
