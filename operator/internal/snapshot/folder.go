package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Folder is a location holding many artifacts side by side: continuous archiving's segments of
// one cluster, under a key prefix (S3Folder) or in a directory of a claim (DirFolder). Names are
// plain (no '/'); an artifact is visible under its name only once complete.
type Folder interface {
	// URI names the folder (s3://bucket/prefix/, pvc://claim/path/).
	URI() string
	// List names the complete artifacts, sorted.
	List(ctx context.Context) ([]string, error)
	Put(ctx context.Context, name string, r io.Reader) error
	// Open reads an artifact; a missing one is SourceNotFound.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Delete removes an artifact; a missing one is no error.
	Delete(ctx context.Context, name string) error
}

var (
	_ Folder = (*DirFolder)(nil)
	_ Folder = (*S3Folder)(nil)
)

// DirFolder keeps artifacts as files of a directory; Put writes <name>.part and renames it.
type DirFolder struct{ Dir, uri string }

// NewDirFolder is the directory dir (absolute), named by claim and claimPath in its URI.
func NewDirFolder(dir, claim, claimPath string) (*DirFolder, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("%q: must be an absolute path", dir)
	}
	return &DirFolder{Dir: dir, uri: PVCURI(claim, claimPath) + "/"}, nil
}

func (d *DirFolder) URI() string { return d.uri }

func (d *DirFolder) path(name string) (string, error) {
	if err := ValidateFileName(name); err != nil {
		return "", err
	}
	return filepath.Join(d.Dir, name), nil
}

// List skips parts, sidecars and directories.
func (d *DirFolder) List(context.Context) ([]string, error) {
	entries, err := os.ReadDir(d.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fileError(ReasonFailed, err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && !strings.HasSuffix(n, PartSuffix) && !strings.HasSuffix(n, OwnerSuffix) {
			out = append(out, n)
		}
	}
	return out, nil
}

// Put writes and syncs <name>.part, renames it into place and syncs the directory: a crash
// leaves the complete artifact or none (a stray part, which List skips and the next Put of the
// name replaces).
func (d *DirFolder) Put(_ context.Context, name string, r io.Reader) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, dirMode); err != nil {
		return fileError(ReasonFailed, err)
	}
	if err := writeSynced(p+PartSuffix, r); err != nil {
		_ = os.Remove(p + PartSuffix)
		return err
	}
	if err := os.Rename(p+PartSuffix, p); err != nil {
		return fileError(ReasonFailed, err)
	}
	return fileError(ReasonFailed, syncDir(d.Dir))
}

func (d *DirFolder) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	p, err := d.path(name)
	if err != nil {
		return nil, err
	}
	return FileSource{Path: p}.Open(ctx)
}

func (d *DirFolder) Delete(_ context.Context, name string) error {
	p, err := d.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fileError(ReasonFailed, err)
	}
	return nil
}

// S3Folder keeps artifacts as objects under cfg.Key, a prefix ending in '/'.
type S3Folder struct{ store *S3Store }

// NewS3Folder validates cfg (its Key is the prefix; a '/' is added when missing).
func NewS3Folder(cfg S3Config) (*S3Folder, error) {
	if !strings.HasSuffix(cfg.Key, "/") {
		cfg.Key += "/"
	}
	s, err := NewS3Store(cfg)
	if err != nil {
		return nil, err
	}
	return &S3Folder{store: s}, nil
}

func (f *S3Folder) URI() string { return f.store.URI() }

// object is the store of one artifact, sharing the folder's client.
func (f *S3Folder) object(name string) (*S3Store, error) {
	if err := ValidateFileName(name); err != nil {
		return nil, err
	}
	s := *f.store
	s.cfg.Key += name
	return &s, nil
}

// List pages through the prefix; names are what follows it (deeper keys are skipped).
func (f *S3Folder) List(ctx context.Context) ([]string, error) {
	cfg := f.store.cfg
	var out []string
	p := s3.NewListObjectsV2Paginator(f.store.client, &s3.ListObjectsV2Input{Bucket: &cfg.Bucket, Prefix: aws.String(cfg.Key)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, f.store.fail("LIST", err)
		}
		for _, o := range page.Contents {
			if name := strings.TrimPrefix(aws.ToString(o.Key), cfg.Key); name != "" && !strings.Contains(name, "/") {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

func (f *S3Folder) Put(ctx context.Context, name string, r io.Reader) error {
	s, err := f.object(name)
	if err != nil {
		return err
	}
	return s.Put(ctx, r, Meta{})
}

func (f *S3Folder) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	s, err := f.object(name)
	if err != nil {
		return nil, err
	}
	return s.Open(ctx)
}

func (f *S3Folder) Delete(ctx context.Context, name string) error {
	s, err := f.object(name)
	if err != nil {
		return err
	}
	return s.Delete(ctx)
}
