package snapshot

import (
	"io"
	"sync"
)

// Tee passes a stream through a Digest. At the end of the stream it checks the trailer and
// returns a ChecksumMismatch error instead of io.EOF when the stream is not intact, so that a
// store never completes a broken artifact. Err says whether (and how) the source failed.
//
// The hashing runs on a goroutine of its own, fed copies of what was read in chunks of
// teeChunk: sha256 of a gigabyte is most of a second of CPU, which then overlaps with the
// reading and the writing instead of adding to them. At most teeChunks chunks are in flight.
type Tee struct {
	r   io.Reader
	d   *Digest
	err error

	cur      []byte        // the chunk being filled
	work     chan []byte   // full chunks, to hash
	free     chan []byte   // hashed chunks, to reuse
	hashed   chan struct{} // closed when the hasher is done
	finished sync.Once
}

const (
	teeChunk  = 1 << 20
	teeChunks = 4
)

// NewTee reads r through a new Digest.
func NewTee(r io.Reader) *Tee {
	t := &Tee{r: r, d: NewDigest(), work: make(chan []byte, teeChunks), free: make(chan []byte, teeChunks),
		hashed: make(chan struct{})}
	for range teeChunks {
		t.free <- make([]byte, 0, teeChunk)
	}
	go t.hash()
	return t
}

func (t *Tee) hash() {
	defer close(t.hashed)
	for b := range t.work {
		t.d.Write(b)
		t.free <- b[:0]
	}
}

func (t *Tee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.feed(p[:n])
	switch {
	case err == io.EOF:
		t.finish()
		if bad := t.d.Intact(); bad != nil {
			t.err = &Error{Reason: ReasonChecksumMismatch, Err: bad}
			return n, t.err
		}
	case err != nil:
		t.err = err
	}
	return n, err
}

// feed copies p into chunks and hands each full one to the hasher.
func (t *Tee) feed(p []byte) {
	for len(p) > 0 {
		if t.cur == nil {
			t.cur = <-t.free
		}
		k := min(len(p), cap(t.cur)-len(t.cur))
		t.cur = append(t.cur, p[:k]...)
		p = p[k:]
		if len(t.cur) == cap(t.cur) {
			t.work <- t.cur
			t.cur = nil
		}
	}
}

// finish hands over the last partial chunk and waits until everything read is hashed.
func (t *Tee) finish() {
	t.finished.Do(func() {
		if len(t.cur) > 0 {
			t.work <- t.cur
		}
		t.cur = nil
		close(t.work)
		<-t.hashed
	})
}

// Err is the source's failure (or the trailer mismatch), nil while it streamed cleanly.
func (t *Tee) Err() error { return t.err }

// Sum is what went through: it ends the Tee (a store that gave up reading calls it too, which
// also stops the hasher), so nothing may be read after it.
func (t *Tee) Sum() Sum {
	t.finish()
	return t.d.Sum()
}
