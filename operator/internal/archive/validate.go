package archive

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Validate checks that s is a consistent segment: a non-empty revision range whose every
// revision has events (etcd gives each revision at least one, and the archiver watches the
// whole keyspace, so a missing revision is a lost event); each revision's keys distinct, as
// etcd requires within one transaction; every lease a put carries recorded once; marks inside
// the range and ascending.
func (s *Segment) Validate() error {
	if s.First < 1 || s.Last < s.First {
		return fmt.Errorf("revision range %d-%d is empty or starts below 1", s.First, s.Last)
	}
	if len(s.Events) == 0 {
		return fmt.Errorf("revisions %d-%d: no events", s.First, s.Last)
	}
	if err := s.validateEvents(); err != nil {
		return err
	}
	if err := s.validateLeases(); err != nil {
		return err
	}
	return s.validateMarks()
}

func (s *Segment) validateEvents() error {
	prev := s.First - 1
	var keys map[string]bool
	for i, ev := range s.Events {
		if ev == nil || ev.Kv == nil || len(ev.Kv.Key) == 0 {
			return fmt.Errorf("event %d has no key", i+1)
		}
		if ev.Type != mvccpb.Event_PUT && ev.Type != mvccpb.Event_DELETE {
			return fmt.Errorf("event %d (key %q) has unknown type %d", i+1, ev.Kv.Key, ev.Type)
		}
		rev := ev.Kv.ModRevision
		switch rev {
		case prev:
		case prev + 1:
			prev, keys = rev, map[string]bool{}
		default:
			return fmt.Errorf("event %d (key %q) is at revision %d after revision %d: revisions %d-%d are missing or out of order",
				i+1, ev.Kv.Key, rev, prev, min(prev+1, rev), max(prev+1, rev)-1)
		}
		if keys[string(ev.Kv.Key)] {
			return fmt.Errorf("revision %d changes key %q twice", rev, ev.Kv.Key)
		}
		keys[string(ev.Kv.Key)] = true
	}
	if prev != s.Last {
		return fmt.Errorf("the events end at revision %d, the header says %d", prev, s.Last)
	}
	return nil
}

func (s *Segment) validateLeases() error {
	known := map[int64]bool{}
	for _, l := range s.Leases {
		if l.ID == 0 || l.TTL < 0 || known[l.ID] {
			return fmt.Errorf("lease record %x (TTL %d) is zero, negative or repeated", l.ID, l.TTL)
		}
		known[l.ID] = true
	}
	for _, ev := range s.Events {
		if ev.Type == mvccpb.Event_PUT && ev.Kv.Lease != 0 && !known[ev.Kv.Lease] {
			return fmt.Errorf("key %q at revision %d carries lease %x, which the segment does not record",
				ev.Kv.Key, ev.Kv.ModRevision, ev.Kv.Lease)
		}
	}
	return nil
}

func (s *Segment) validateMarks() error {
	for i, m := range s.Marks {
		if m.Revision < s.First || m.Revision > s.Last {
			return fmt.Errorf("mark %d at revision %d is outside %d-%d", i+1, m.Revision, s.First, s.Last)
		}
		if i > 0 && (m.Revision < s.Marks[i-1].Revision || m.Time.Before(s.Marks[i-1].Time)) {
			return fmt.Errorf("mark %d (revision %d, %s) goes back from the one before", i+1, m.Revision, m.Time)
		}
	}
	return nil
}

// Revisions groups the events by revision, in order: each group is what one transaction of the
// original cluster changed, and restore applies it as one transaction.
func (s *Segment) Revisions() [][]*mvccpb.Event {
	var out [][]*mvccpb.Event
	for i, ev := range s.Events {
		if i == 0 || ev.Kv.ModRevision != s.Events[i-1].Kv.ModRevision {
			out = append(out, nil)
		}
		out[len(out)-1] = append(out[len(out)-1], ev)
	}
	return out
}
