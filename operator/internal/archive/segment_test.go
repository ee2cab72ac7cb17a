package archive

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"
)

func put(rev int64, key, value string, lease int64) *mvccpb.Event {
	return &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value),
		ModRevision: rev, CreateRevision: rev, Version: 1, Lease: lease}}
}

func del(rev int64, key, prev string) *mvccpb.Event {
	return &mvccpb.Event{Type: mvccpb.Event_DELETE, Kv: &mvccpb.KeyValue{Key: []byte(key), ModRevision: rev},
		PrevKv: &mvccpb.KeyValue{Key: []byte(key), Value: []byte(prev), ModRevision: rev - 1, CreateRevision: rev - 1, Version: 1}}
}

var t0 = time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC)

// sample has a put with a lease, a two-key transaction and a delete with its prev-kv.
func sample() *Segment {
	return &Segment{
		Header: Header{ClusterID: 0xc1, MemberID: 0xa1, First: 11, Last: 13,
			Marks: []Mark{{11, t0}, {13, t0.Add(time.Second)}}},
		Leases: []Lease{{ID: 0x77, TTL: 30}},
		Events: []*mvccpb.Event{put(11, "a", "1", 0x77), put(12, "b", "2", 0), put(12, "c", "3", 0), del(13, "a", "1")},
	}
}

func encode(t *testing.T, s *Segment) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSegmentRoundTrip(t *testing.T) {
	s := sample()
	got, err := Decode(bytes.NewReader(encode(t, s)))
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID != s.ClusterID || got.MemberID != s.MemberID || got.First != 11 || got.Last != 13 ||
		len(got.Marks) != 2 || !got.Marks[1].Time.Equal(s.Marks[1].Time) || len(got.Leases) != 1 || got.Leases[0] != s.Leases[0] {
		t.Fatalf("header %+v leases %+v", got.Header, got.Leases)
	}
	if len(got.Events) != len(s.Events) {
		t.Fatalf("%d events, want %d", len(got.Events), len(s.Events))
	}
	for i := range s.Events {
		if !proto.Equal(got.Events[i], s.Events[i]) {
			t.Errorf("event %d: %v, want %v", i, got.Events[i], s.Events[i])
		}
	}
	if g := got.Revisions(); len(g) != 3 || len(g[1]) != 2 {
		t.Errorf("revisions grouped as %v", g)
	}
	if !got.FirstTime().Equal(t0) || !got.LastTime().Equal(t0.Add(time.Second)) || !got.TimeOf(12).Equal(t0.Add(time.Second)) {
		t.Errorf("times %s %s %s", got.FirstTime(), got.LastTime(), got.TimeOf(12))
	}
	if r := s.Ref(); r.First != 11 || r.Last != 13 || !strings.HasSuffix(r.Name, SegmentExt) {
		t.Errorf("ref %+v", r)
	}
}

// Every damage to the bytes is refused with a message naming it.
func TestDecodeRefusesDamage(t *testing.T) {
	good := encode(t, sample())
	flip := func(i int) []byte { b := bytes.Clone(good); b[i] ^= 0x40; return b }
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":             {nil, "truncated"},
		"magic":             {flip(0), "not a segment"},
		"version":           {flip(len(Magic) + 1), "format version"},
		"a value bit":       {flip(len(good) - 40), "checksum mismatch"},
		"the checksum":      {flip(len(good) - 1), "checksum mismatch"},
		"truncated events":  {good[:len(good)-45], "truncated"},
		"no checksum":       {good[:len(good)-32], "truncated"},
		"trailing bytes":    {append(bytes.Clone(good), 0), "1 bytes follow the checksum"},
		"huge event length": {hugeEvent(t), "claims"},
	} {
		_, err := Decode(bytes.NewReader(tc.b))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrCorrupt naming %q", name, err, tc.want)
		}
	}
}

// hugeEvent is a segment whose one event claims a length far past MaxEventBytes.
func hugeEvent(t *testing.T) []byte {
	s := &Segment{Header: Header{First: 1, Last: 1}, Events: []*mvccpb.Event{put(1, "k", "v", 0)}}
	b := encode(t, s)
	at := len(Magic) + 2 + 8*4 + 4*3
	return append(append(bytes.Clone(b[:at]), 0xff, 0xff, 0xff, 0xff, 0x7f), b[at+1:]...)
}

// Encode refuses an inconsistent segment, and so would Decode.
func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*Segment)
		want string
	}{
		"empty range":        {func(s *Segment) { s.Last = 10 }, "empty"},
		"no events":          {func(s *Segment) { s.Events = nil }, "no events"},
		"missing revision":   {func(s *Segment) { s.Events = append(s.Events[:1], s.Events[3]) }, "revisions 12-12 are missing"},
		"first missing":      {func(s *Segment) { s.Events = s.Events[1:] }, "revisions 11-11 are missing"},
		"header past events": {func(s *Segment) { s.Last = 14 }, "end at revision 13"},
		"key twice":          {func(s *Segment) { s.Events[2].Kv.Key = []byte("b") }, `changes key "b" twice`},
		"no key":             {func(s *Segment) { s.Events[1].Kv.Key = nil }, "no key"},
		"unknown type":       {func(s *Segment) { s.Events[1].Type = 7 }, "unknown type"},
		"lease unrecorded":   {func(s *Segment) { s.Leases = nil }, "does not record"},
		"lease twice":        {func(s *Segment) { s.Leases = append(s.Leases, s.Leases[0]) }, "repeated"},
		"mark outside":       {func(s *Segment) { s.Marks[0].Revision = 10 }, "outside"},
		"mark back in time":  {func(s *Segment) { s.Marks[1].Time = t0.Add(-time.Second) }, "goes back"},
	} {
		s := sample()
		tc.edit(s)
		err := Encode(&bytes.Buffer{}, s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, tc.want)
		}
	}
}
