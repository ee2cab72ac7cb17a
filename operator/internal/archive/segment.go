package archive

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

// Magic opens every segment; FormatVersion is the layout this package writes and reads.
const (
	Magic         = "ETCDSEG\x00"
	FormatVersion = 1
)

// MaxEventBytes bounds one encoded event a reader accepts: etcd refuses requests over
// --max-request-bytes (1.5 MiB by default, at most a few MiB in practice); a larger length is a
// corrupt segment, not a reason to allocate.
const MaxEventBytes = 64 << 20

// ErrCorrupt is wrapped by every error Decode returns for bytes that are not a valid segment.
var ErrCorrupt = errors.New("corrupt segment")

// Lease is a lease some key of the segment carries: its ID and the TTL it was granted with (0:
// the lease was gone when the archiver asked; restore grants it UnknownLeaseTTL).
type Lease struct {
	ID  int64
	TTL int64
}

// Mark says that by Time the archiver had seen every revision up to Revision: its wall clock when
// a watch response or progress notification arrived. A revision's time is that of the first mark
// at or after it, late by the watch's delivery (milliseconds when the archiver keeps up).
type Mark struct {
	Revision int64
	Time     time.Time
}

// Header describes a segment.
type Header struct {
	// ClusterID and MemberID: the etcd cluster, and the member the watch streamed from.
	ClusterID, MemberID uint64
	// First and Last revision: every revision in between has at least one event in the segment.
	First, Last int64
	// Marks are the archiver's times of revision boundaries, ascending.
	Marks []Mark
}

// FirstTime and LastTime are the times of First and Last (zero when no mark says).
func (h Header) FirstTime() time.Time { return h.TimeOf(h.First) }
func (h Header) LastTime() time.Time  { return h.TimeOf(h.Last) }

// TimeOf is the time of the first mark at or after rev (zero when none is).
func (h Header) TimeOf(rev int64) time.Time {
	for _, m := range h.Marks {
		if m.Revision >= rev {
			return m.Time
		}
	}
	return time.Time{}
}

// Segment is a revision range of etcd's keyspace changes.
type Segment struct {
	Header
	// Leases are those the events' keys carry, each once.
	Leases []Lease
	// Events in revision order, as the watch delivered them (prev-kv included).
	Events []*mvccpb.Event
}

// Ref is what the segment's name says of it.
func (s *Segment) Ref() Ref {
	return Ref{Name: SegmentName(s.First, s.Last, s.FirstTime(), s.LastTime()), First: s.First, Last: s.Last,
		FirstTime: s.FirstTime(), LastTime: s.LastTime()}
}

// fixed is the header's fixed part after the magic: version, cluster, member, first, last and
// the counts of marks, leases and events.
type fixed struct {
	Version             uint16
	ClusterID, MemberID uint64
	First, Last         int64
	Marks, Leases       uint32
	Events              uint32
}

type wireMark struct{ Revision, UnixNano int64 }

// Encode writes s: the magic, the fixed header, the marks, the leases, each event as a uvarint
// length and its protobuf, then a sha256 of everything before it. It checks s first (Validate),
// so that nothing unreadable is stored.
func Encode(w io.Writer, s *Segment) error {
	if err := s.Validate(); err != nil {
		return err
	}
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	f := fixed{Version: FormatVersion, ClusterID: s.ClusterID, MemberID: s.MemberID, First: s.First, Last: s.Last,
		Marks: uint32(len(s.Marks)), Leases: uint32(len(s.Leases)), Events: uint32(len(s.Events))}
	_, _ = bw.WriteString(Magic)
	_ = binary.Write(bw, binary.BigEndian, f)
	for _, m := range s.Marks {
		_ = binary.Write(bw, binary.BigEndian, wireMark{m.Revision, m.Time.UnixNano()})
	}
	for _, l := range s.Leases {
		_ = binary.Write(bw, binary.BigEndian, l)
	}
	var buf []byte
	for _, ev := range s.Events {
		var err error
		buf = binary.AppendUvarint(buf[:0], uint64(proto.Size(ev)))
		if buf, err = (proto.MarshalOptions{Deterministic: true}).MarshalAppend(buf, ev); err != nil {
			return fmt.Errorf("encoding the event at revision %d: %w", ev.GetKv().GetModRevision(), err)
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}

// Decode reads a segment Encode wrote and checks all of it: magic, version, checksum, and that
// the content is consistent (Validate). Every failure wraps ErrCorrupt and says what is wrong.
func Decode(r io.Reader) (*Segment, error) {
	d := &decoder{r: &hashingReader{r: bufio.NewReader(r), h: sha256.New()}}
	s, err := d.segment()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return s, nil
}

type decoder struct{ r *hashingReader }

// hashingReader hashes exactly what the decoder consumes (a tee under the bufio.Reader would also
// hash what it reads ahead, the checksum among it).
type hashingReader struct {
	r *bufio.Reader
	h hash.Hash
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

func (h *hashingReader) ReadByte() (byte, error) {
	b, err := h.r.ReadByte()
	if err == nil {
		h.h.Write([]byte{b})
	}
	return b, err
}

func (d *decoder) segment() (*Segment, error) {
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(d.r, magic); err != nil {
		return nil, fmt.Errorf("reading the magic: %w", eof(err))
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("not a segment: magic %q, want %q", magic, Magic)
	}
	var f fixed
	if err := binary.Read(d.r, binary.BigEndian, &f); err != nil {
		return nil, fmt.Errorf("reading the header: %w", eof(err))
	}
	if f.Version != FormatVersion {
		return nil, fmt.Errorf("format version %d; this reader knows %d", f.Version, FormatVersion)
	}
	s := &Segment{Header: Header{ClusterID: f.ClusterID, MemberID: f.MemberID, First: f.First, Last: f.Last}}
	if err := d.marks(s, f.Marks); err != nil {
		return nil, err
	}
	if err := d.leases(s, f.Leases); err != nil {
		return nil, err
	}
	if err := d.events(s, f.Events); err != nil {
		return nil, err
	}
	return s, d.trailer()
}

// capped bounds a preallocation by a count read from the stream.
func capped(n uint32) int { return int(min(n, 1024)) }

func (d *decoder) marks(s *Segment, n uint32) error {
	s.Marks = make([]Mark, 0, capped(n))
	for i := range n {
		var m wireMark
		if err := binary.Read(d.r, binary.BigEndian, &m); err != nil {
			return fmt.Errorf("reading mark %d of %d: %w", i+1, n, eof(err))
		}
		s.Marks = append(s.Marks, Mark{Revision: m.Revision, Time: time.Unix(0, m.UnixNano).UTC()})
	}
	return nil
}

func (d *decoder) leases(s *Segment, n uint32) error {
	s.Leases = make([]Lease, 0, capped(n))
	for i := range n {
		var l Lease
		if err := binary.Read(d.r, binary.BigEndian, &l); err != nil {
			return fmt.Errorf("reading lease %d of %d: %w", i+1, n, eof(err))
		}
		s.Leases = append(s.Leases, l)
	}
	return nil
}

func (d *decoder) events(s *Segment, n uint32) error {
	s.Events = make([]*mvccpb.Event, 0, capped(n))
	var buf []byte
	for i := range n {
		size, err := binary.ReadUvarint(d.r)
		if err != nil {
			return fmt.Errorf("reading the length of event %d of %d: %w", i+1, n, eof(err))
		}
		if size > MaxEventBytes {
			return fmt.Errorf("event %d of %d claims %d bytes, more than %d", i+1, n, size, MaxEventBytes)
		}
		if uint64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		if _, err := io.ReadFull(d.r, buf); err != nil {
			return fmt.Errorf("reading event %d of %d: %w", i+1, n, eof(err))
		}
		ev := &mvccpb.Event{}
		if err := proto.Unmarshal(buf, ev); err != nil {
			return fmt.Errorf("event %d of %d: %w", i+1, n, err)
		}
		s.Events = append(s.Events, ev)
	}
	return nil
}

// trailer checks the sha256 of everything read so far and that nothing follows it.
func (d *decoder) trailer() error {
	want := d.r.h.Sum(nil)
	got := make([]byte, sha256.Size)
	if _, err := io.ReadFull(d.r.r, got); err != nil {
		return fmt.Errorf("reading the checksum: %w", eof(err))
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("checksum mismatch: the segment says %x, its content hashes to %x", got, want)
	}
	if n, _ := io.Copy(io.Discard, d.r.r); n > 0 {
		return fmt.Errorf("%d bytes follow the checksum", n)
	}
	return nil
}

// eof names a stream that ended early.
func eof(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated: %w", io.ErrUnexpectedEOF)
	}
	return err
}
