package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"filippo.io/age"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/artifact"
)

// ReadKeyring reads the age keys of an encryption Secret mounted at dir (its identities and
// recipients files; either may be absent, not both). Errors name the file, never a key.
func ReadKeyring(dir string) (artifact.Keyring, error) {
	read := func(key string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, key))
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return b, err
	}
	ids, err := read(v1alpha2.EncryptionIdentitiesKey)
	if err != nil {
		return artifact.Keyring{}, Fail(ReasonEncryptionKeyMissing, "encryption keys: %w", err)
	}
	recs, err := read(v1alpha2.EncryptionRecipientsKey)
	if err != nil {
		return artifact.Keyring{}, Fail(ReasonEncryptionKeyMissing, "encryption keys: %w", err)
	}
	k, err := artifact.ParseKeyring(ids, recs)
	if err != nil {
		return k, Fail(ReasonEncryptionKeyMissing, "encryption keys in %s: %w", dir, err)
	}
	return k, nil
}

// Opened is what reading a stored artifact through learned.
type Opened struct {
	// Stored is the sum of the bytes as stored: what status records and a restore checks.
	Stored Sum
	Format artifact.Format
	// Plain is the sum of the etcd snapshot inside, its trailer checked; zero when Sealed.
	Plain Sum
	// Sealed: the artifact is encrypted and no identity was given, so only Stored was
	// computed (ReadOptions.AllowSealed).
	Sealed bool
}

// ReadOptions says how ReadArtifact reads.
type ReadOptions struct {
	// Identities decrypt an encrypted artifact.
	Identities []age.Identity
	// Plain receives the etcd snapshot (nil: nowhere). Its errors are returned as they are, so
	// it should give them their reason.
	Plain io.Writer
	// AllowSealed accepts an encrypted artifact without identities, hashing it only: the
	// snapshot agent of a Secret that holds only recipients.
	AllowSealed bool
}

// ReadArtifact reads src to its end: the sum of the stored bytes, and of the etcd snapshot
// inside them (decompressed and decrypted as detected), whose trailer it checks. describe
// names src in errors: a key that does not fit is DecryptionFailed, a damaged frame or trailer
// ChecksumMismatch, the source's own failure Failed.
func ReadArtifact(src io.Reader, describe string, o ReadOptions) (Opened, error) {
	var out Opened
	stored := NewDigest()
	tee := io.TeeReader(src, stored)
	r, f, err := artifact.NewReader(tee, o.Identities)
	out.Format = f
	if errors.Is(err, artifact.ErrKeyMissing) && o.AllowSealed {
		out.Sealed = true
		_, err = io.CopyBuffer(io.Discard, tee, make([]byte, copyBuffer))
		out.Stored = stored.Sum()
		return out, readError(describe, err)
	}
	if err != nil {
		out.Stored = stored.Sum()
		return out, readError(describe, err)
	}
	defer func() { _ = r.Close() }()
	plain := NewDigest()
	dst := io.Writer(plain)
	if o.Plain != nil {
		dst = io.MultiWriter(o.Plain, plain)
	}
	err = copyFrom(dst, r, describe)
	if err == nil { // a frame may end before its source: what is stored is hashed to its end
		_, err = io.CopyBuffer(io.Discard, tee, make([]byte, copyBuffer))
		err = readError(describe, err)
	}
	out.Stored, out.Plain = stored.Sum(), plain.Sum()
	if err != nil {
		return out, err
	}
	if bad := plain.Intact(); bad != nil {
		return out, Fail(ReasonChecksumMismatch, "%s (%s): %w", describe, f, bad)
	}
	return out, nil
}

// copyFrom copies src into dst; read errors are classified, write errors returned as they are.
func copyFrom(dst io.Writer, src io.Reader, describe string) error {
	buf := make([]byte, copyBuffer)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return readError(describe, rerr)
		}
	}
}

func readError(describe string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, artifact.ErrKeyMissing), errors.Is(err, artifact.ErrKeyMismatch):
		return Fail(ReasonDecryptionFailed, "%s: %w", describe, err)
	case errors.Is(err, artifact.ErrDamaged):
		return Fail(ReasonChecksumMismatch, "%s: %w", describe, err)
	}
	return WithReason(ReasonFailed, fmt.Errorf("reading %s: %w", describe, err))
}
