package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// TrailerSize is the length of the sha256 etcd appends to a snapshot stream: the hash of every
// byte before it. `etcdutl snapshot restore` checks it unless told to skip.
const TrailerSize = sha256.Size

// ChecksumPrefix starts a checksum string: "sha256:<64 hex>".
const ChecksumPrefix = "sha256:"

// ErrNotIntact is the trailer check's failure.
var ErrNotIntact = errors.New("the file is not an intact etcd snapshot")

// Digest watches a snapshot go by without keeping it: the sha256 and length of every byte, and
// etcd's own check, the sha256 of all but the last TrailerSize bytes against those bytes. One
// hash serves both: the body's state, with the held-back tail written into a copy of it, is the
// hash of every byte (hashing a gigabyte twice costs seconds of the agent's CPU).
type Digest struct {
	body hash.Hash
	n    int64
	// tail holds the last min(n, TrailerSize) bytes, not yet hashed into body.
	tail    [TrailerSize]byte
	tailLen int
}

// NewDigest returns an empty Digest.
func NewDigest() *Digest { return &Digest{body: sha256.New()} }

// Write never fails.
func (d *Digest) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	if len(p) >= TrailerSize {
		d.body.Write(d.tail[:d.tailLen])
		d.body.Write(p[:len(p)-TrailerSize])
		d.tailLen = copy(d.tail[:], p[len(p)-TrailerSize:])
		return len(p), nil
	}
	var joined [2 * TrailerSize]byte
	k := copy(joined[:], d.tail[:d.tailLen])
	k += copy(joined[k:], p)
	if over := k - TrailerSize; over > 0 {
		d.body.Write(joined[:over])
		d.tailLen = copy(d.tail[:], joined[over:k])
	} else {
		d.tailLen = copy(d.tail[:], joined[:k])
	}
	return len(p), nil
}

// Size is the number of bytes written.
func (d *Digest) Size() int64 { return d.n }

// Checksum is "sha256:<hex>" of every byte written.
func (d *Digest) Checksum() string {
	all := sha256.New()
	state, err := d.body.(encoding.BinaryMarshaler).MarshalBinary()
	if err == nil {
		err = all.(encoding.BinaryUnmarshaler).UnmarshalBinary(state)
	}
	if err != nil { // crypto/sha256 always marshals its state
		panic(err)
	}
	all.Write(d.tail[:d.tailLen])
	return ChecksumPrefix + hex.EncodeToString(all.Sum(nil))
}

// Intact reports whether what was written ends with etcd's sha256 of what precedes it.
func (d *Digest) Intact() error {
	if d.n <= TrailerSize {
		return fmt.Errorf("%w: %d bytes is too short", ErrNotIntact, d.n)
	}
	if !bytes.Equal(d.body.Sum(nil), d.tail[:]) {
		return fmt.Errorf("%w: its trailing sha256 does not match the %d bytes before it", ErrNotIntact, d.n-TrailerSize)
	}
	return nil
}

// Sum is what a Digest learned about a complete stream.
type Sum struct {
	Size     int64
	Checksum string
}

// Sum returns the size and checksum so far.
func (d *Digest) Sum() Sum { return Sum{Size: d.n, Checksum: d.Checksum()} }

// Verify reads r to its end and checks it is an intact etcd snapshot.
func Verify(r io.Reader) (Sum, error) {
	d := NewDigest()
	if _, err := io.CopyBuffer(d, r, make([]byte, copyBuffer)); err != nil {
		return d.Sum(), err
	}
	return d.Sum(), WithReason(ReasonChecksumMismatch, d.Intact())
}

// copyBuffer is the read size of local copies and verifications.
const copyBuffer = 1 << 20

// ParseChecksum validates "sha256:<64 hex>" and returns it lower-cased.
func ParseChecksum(s string) (string, error) {
	hexPart, ok := strings.CutPrefix(s, ChecksumPrefix)
	if !ok {
		return "", fmt.Errorf("checksum %q: want %s<64 hex digits>", s, ChecksumPrefix)
	}
	if b, err := hex.DecodeString(hexPart); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("checksum %q: want %s<64 hex digits>", s, ChecksumPrefix)
	}
	return ChecksumPrefix + strings.ToLower(hexPart), nil
}

// Tee passes a stream through a Digest. At the end of the stream it checks the trailer and
// returns a ChecksumMismatch error instead of io.EOF when the stream is not intact, so that a
// store never completes a broken artifact. Err says whether (and how) the source failed.
type Tee struct {
	r   io.Reader
	d   *Digest
	err error
}

// NewTee reads r through a new Digest.
func NewTee(r io.Reader) *Tee { return &Tee{r: r, d: NewDigest()} }

func (t *Tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.d.Write(p[:n])
	switch {
	case err == io.EOF:
		if bad := t.d.Intact(); bad != nil {
			t.err = &Error{Reason: ReasonChecksumMismatch, Err: bad}
			return n, t.err
		}
	case err != nil:
		t.err = err
	}
	return n, err
}

// Err is the source's failure (or the trailer mismatch), nil while it streamed cleanly.
func (t *Tee) Err() error { return t.err }

// Sum is what went through so far.
func (t *Tee) Sum() Sum { return t.d.Sum() }
