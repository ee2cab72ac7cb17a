package snapshot

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// URI schemes of an artifact.
const (
	SchemeS3  = "s3://"
	SchemePVC = "pvc://"
)

// ArtifactExt ends every artifact's name.
const ArtifactExt = ".db"

// maxKeyBytes is S3's limit on an object key.
const maxKeyBytes = 1024

// ArtifactName is a snapshot's file name: <snapshot>.db.
func ArtifactName(snapshot string) string { return snapshot + ArtifactExt }

// A snapshot's S3 key and path within a claim are v1alpha2.SnapshotObjectKey and
// v1alpha2.SnapshotFilePath: users find them in their stores, so they are part of the API.

// S3URI is s3://<bucket>/<key>.
func S3URI(bucket, key string) string { return SchemeS3 + bucket + "/" + key }

// PVCURI is pvc://<claim>/<path>.
func PVCURI(claim, p string) string { return SchemePVC + claim + "/" + p }

// Location is a parsed artifact URI: a bucket and key, or a claim and path.
type Location struct {
	// Scheme is DestS3 or DestPVC.
	Scheme string
	// Container is the bucket or the claim; Name the key or the path within the claim.
	Container, Name string
}

// String formats the location as its URI.
func (l Location) String() string {
	if l.Scheme == DestPVC {
		return PVCURI(l.Container, l.Name)
	}
	return S3URI(l.Container, l.Name)
}

// ParseURI parses and validates an artifact URI.
func ParseURI(uri string) (Location, error) {
	var l Location
	rest, ok := strings.CutPrefix(uri, SchemeS3)
	if ok {
		l.Scheme = DestS3
	} else if rest, ok = strings.CutPrefix(uri, SchemePVC); ok {
		l.Scheme = DestPVC
	} else {
		return l, fmt.Errorf("artifact URI %q: want %s<bucket>/<key> or %s<claim>/<path>", uri, SchemeS3, SchemePVC)
	}
	l.Container, l.Name, _ = strings.Cut(rest, "/")
	if err := l.validate(); err != nil {
		return Location{}, fmt.Errorf("artifact URI %q: %w", uri, err)
	}
	return l, nil
}

func (l Location) validate() error {
	if l.Scheme == DestS3 {
		if err := ValidateBucket(l.Container); err != nil {
			return err
		}
		return ValidateKey(l.Name)
	}
	if err := ValidateClaim(l.Container); err != nil {
		return err
	}
	return ValidateClaimPath(l.Name)
}

// ValidateBucket accepts any non-empty bucket name without a slash: S3-compatible stores differ
// in what else they allow, and they refuse what they do not.
func ValidateBucket(b string) error {
	if b == "" || strings.Contains(b, "/") {
		return fmt.Errorf("bucket %q: must be non-empty and without '/'", b)
	}
	return nil
}

// ValidateKey accepts what S3 does: a non-empty UTF-8 key of at most 1024 bytes.
func ValidateKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("object key is empty")
	case len(k) > maxKeyBytes:
		return fmt.Errorf("object key is %d bytes, more than S3's %d", len(k), maxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("object key is not UTF-8")
	}
	return nil
}

// ValidateClaim accepts a DNS-1123 subdomain, as a PersistentVolumeClaim's name is.
func ValidateClaim(c string) error {
	if c == "" || len(c) > 253 {
		return fmt.Errorf("claim %q: must be 1 to 253 characters", c)
	}
	for i, r := range c {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		edge := i == 0 || i == len(c)-1
		if !alnum && (edge || r != '-' && r != '.') {
			return fmt.Errorf("claim %q: not a DNS-1123 subdomain", c)
		}
	}
	return nil
}

// ValidateClaimPath accepts a clean relative path that stays inside the claim.
func ValidateClaimPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("path within the claim is empty")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q within the claim must be relative", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q within the claim is not clean (want %q)", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("path %q leaves the claim", p)
	}
	return nil
}

// ValidateFileName accepts a plain file name (no directory, not . or ..).
func ValidateFileName(f string) error {
	if f == "" || f == "." || f == ".." || strings.ContainsRune(f, '/') {
		return fmt.Errorf("file name %q: must be a plain name without '/'", f)
	}
	return nil
}
