package artifact

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/klauspost/compress/zstd"
)

// Format is how an artifact is framed.
type Format struct {
	// Compressed: zstd (inside the encryption when both).
	Compressed bool
	// Encrypted: age.
	Encrypted bool
}

func (f Format) String() string {
	switch {
	case f.Compressed && f.Encrypted:
		return "zstd+age"
	case f.Compressed:
		return "zstd"
	case f.Encrypted:
		return "age"
	}
	return "plain"
}

// First bytes that tell the frames apart.
var (
	ageMagic   = []byte("age-encryption.org/")
	armorMagic = []byte(armor.Header)
	zstdMagic  = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Errors a reader returns; each is wrapped with what failed.
var (
	// ErrKeyMissing: the artifact is encrypted and no identity was given.
	ErrKeyMissing = errors.New("the artifact is encrypted with age but no identity (AGE-SECRET-KEY-…) was given to decrypt it")
	// ErrKeyMismatch: none of the identities given is one the artifact was encrypted to.
	ErrKeyMismatch = errors.New("none of the identities given can decrypt the artifact")
	// ErrDamaged: the frame is truncated or its bytes were altered.
	ErrDamaged = errors.New("the artifact is damaged or truncated")
)

var errNoRecipient = errors.New("encryption needs at least one age recipient (age1…)")

// NewWriter frames what is written to it into dst. With f.Encrypted, to must name at least one
// recipient. Close flushes the frames (it does not close dst).
func NewWriter(dst io.Writer, f Format, to []age.Recipient) (io.WriteCloser, error) {
	var closers []io.Closer
	w := dst
	if f.Encrypted {
		if len(to) == 0 {
			return nil, errNoRecipient
		}
		enc, err := age.Encrypt(w, to...)
		if err != nil {
			return nil, fmt.Errorf("age: %w", err)
		}
		w, closers = enc, append(closers, enc)
	}
	if f.Compressed {
		// One encoder goroutine: the agent runs beside etcd and gets a small CPU share.
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		w, closers = zw, append(closers, zw)
	}
	return &chain{Writer: w, closers: closers}, nil
}

// chain closes the innermost frame first.
type chain struct {
	io.Writer
	closers []io.Closer
}

func (c *chain) Close() error {
	for i := len(c.closers) - 1; i >= 0; i-- {
		if err := c.closers[i].Close(); err != nil {
			return err
		}
	}
	return nil
}

// Encode returns src framed as f, read as it is produced (a pipe fed by one goroutine, which
// ends when src does or the returned reader is closed). An error of src is the reader's error.
// A plain format is src itself: not one byte changes.
func Encode(src io.Reader, f Format, to []age.Recipient) (io.ReadCloser, error) {
	if !f.Compressed && !f.Encrypted {
		return io.NopCloser(src), nil
	}
	if f.Encrypted && len(to) == 0 {
		return nil, errNoRecipient
	}
	pr, pw := io.Pipe()
	go func() {
		// The writer is made here: age writes its header at once, into the pipe.
		w, err := NewWriter(pw, f, to)
		if err == nil {
			_, err = io.Copy(w, src)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		_ = pw.CloseWithError(err)
	}()
	return pr, nil
}

// NewReader detects how src is framed and returns the etcd snapshot inside. Any of ids may
// decrypt it. Errors of the frames wrap ErrKeyMissing, ErrKeyMismatch or ErrDamaged (also
// from Read); errors of src itself come back as they are.
func NewReader(src io.Reader, ids []age.Identity) (io.ReadCloser, Format, error) {
	var f Format
	s := &sourceReader{r: src}
	r, head, err := peek(s, len(armorMagic))
	if err != nil {
		return nil, f, err
	}
	if bytes.HasPrefix(head, ageMagic) || bytes.HasPrefix(head, armorMagic) {
		f.Encrypted = true
		if r, err = decrypt(r, bytes.HasPrefix(head, armorMagic), ids, s); err != nil {
			return nil, f, err
		}
		if r, head, err = peek(r, len(zstdMagic)); err != nil {
			return nil, f, err
		}
	}
	if !bytes.HasPrefix(head, zstdMagic) {
		return io.NopCloser(r), f, nil
	}
	f.Compressed = true
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, f, fmt.Errorf("%w: zstd: %w", ErrDamaged, s.or(err))
	}
	return &zstdReader{zr: zr, src: s}, f, nil
}

func decrypt(r io.Reader, armored bool, ids []age.Identity, s *sourceReader) (io.Reader, error) {
	if len(ids) == 0 {
		return nil, ErrKeyMissing
	}
	if armored {
		r = armor.NewReader(r)
	}
	dec, err := age.Decrypt(r, ids...)
	var nomatch *age.NoIdentityMatchError
	switch {
	case errors.As(err, &nomatch):
		return nil, fmt.Errorf("%w: it was encrypted to %d recipient(s) of type %s and none of the %d identities given is one of them (was the key that wrote it removed from the Secret?)",
			ErrKeyMismatch, len(nomatch.StanzaTypes), strings.Join(dedupe(nomatch.StanzaTypes), ", "), len(ids))
	case err != nil:
		return nil, frameError("age header", s, err)
	}
	return &errReader{r: dec, layer: "age", src: s}, nil
}

// peek returns a reader of r's bytes and its first n (fewer when r is shorter).
func peek(r io.Reader, n int) (io.Reader, []byte, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	return br, head, nil
}

// sourceReader remembers the source's own failure, so that a network error reading the
// store is not reported as a damaged artifact.
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// or is the source's failure when there was one, else err.
func (s *sourceReader) or(err error) error {
	if s.err != nil {
		return s.err
	}
	return err
}

func frameError(layer string, s *sourceReader, err error) error {
	if s.err != nil {
		return s.err
	}
	return fmt.Errorf("%w: %s: %w", ErrDamaged, layer, err)
}

// errReader marks a frame's read errors as damage (the source's own pass through).
type errReader struct {
	r     io.Reader
	layer string
	src   *sourceReader
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		err = frameError(e.layer, e.src, err)
	}
	return n, err
}

type zstdReader struct {
	zr  *zstd.Decoder
	src *sourceReader
}

func (z *zstdReader) Read(p []byte) (int, error) {
	n, err := z.zr.Read(p)
	if err != nil && err != io.EOF && !errors.Is(err, ErrDamaged) {
		err = frameError("zstd", z.src, err)
	}
	return n, err
}

func (z *zstdReader) Close() error {
	z.zr.Close()
	return nil
}

func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
