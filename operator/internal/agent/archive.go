package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/proto"

	"github.com/cozystack/etcd-operator/operator/internal/archive"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Defaults of an Archiver: a segment is cut DefaultArchivePeriod after its first event or at
// DefaultSegmentBytes of events, whichever comes first.
const (
	DefaultArchivePeriod = 10 * time.Second
	DefaultSegmentBytes  = 8 << 20
	defaultArchiveRetry  = 2 * time.Second
	// flushTimeout bounds writing the last segment once the archiver is told to stop.
	flushTimeout = 30 * time.Second
)

// ArchiveGapError is a chain the archiver cannot continue: etcd compacted its history past the
// next revision to archive, so the changes between are lost to the archive. The chain must start
// anew from a new full snapshot; the archiver never skips ahead.
type ArchiveGapError struct {
	// Next is the first revision not archived; Compacted is etcd's compacted revision.
	Next, Compacted int64
}

func (e *ArchiveGapError) Error() string {
	return fmt.Sprintf("archive gap: revisions %d-%d were compacted before the archiver saw them; take a new full snapshot",
		e.Next, e.Compacted)
}

// Archiver streams a cluster's changes after a full snapshot's revision into segments (package
// archive) in a folder. It resumes after the last complete segment the folder holds, so a
// restarted archiver neither leaves a gap nor writes a revision twice (a crash between a
// segment's upload and nothing else loses nothing: the watch restarts from the folder's state).
type Archiver struct {
	Client etcd.Client
	Folder snapshot.Folder
	// BaseRevision is the full snapshot's revision: the chain starts at BaseRevision+1.
	BaseRevision int64
	// Period and MaxBytes cut segments (defaults DefaultArchivePeriod, DefaultSegmentBytes).
	Period   time.Duration
	MaxBytes int
	// Retry is the wait before watching again after a failure that is not a gap.
	Retry time.Duration
	Log   *Logger
	// Now is the archiver's clock for marks (time.Now when nil).
	Now func() time.Time
	// Written, when set, is told each segment stored.
	Written func(archive.Ref)
}

// Run archives until ctx ends (then it stores what it holds and returns ctx's error) or a gap
// (an *ArchiveGapError). Other failures (a watch ended by a leader loss or a member's death, a
// store refusing a segment) drop the segment in progress, wait Retry and resume from the folder.
func (a *Archiver) Run(ctx context.Context) error {
	for {
		next, err := a.resume(ctx)
		if err == nil {
			err = a.stream(ctx, next)
		}
		var gap *ArchiveGapError
		switch {
		case errors.As(err, &gap):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		a.Log.Printf("archiving stopped (%v); resuming in %s", err, a.retry())
		select {
		case <-time.After(a.retry()):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (a *Archiver) retry() time.Duration  { return cmpOr(a.Retry, defaultArchiveRetry) }
func (a *Archiver) period() time.Duration { return cmpOr(a.Period, DefaultArchivePeriod) }
func (a *Archiver) maxBytes() int         { return cmpOr(a.MaxBytes, DefaultSegmentBytes) }

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func (a *Archiver) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// resume is the first revision the folder's chain from the base does not hold.
func (a *Archiver) resume(ctx context.Context) (int64, error) {
	names, err := a.Folder.List(ctx)
	if err != nil {
		return 0, err
	}
	refs := archive.ParseSegmentNames(names)
	chain := archive.Analyze([]archive.Base{{Revision: a.BaseRevision}}, refs).Chains[0]
	a.Log.Printf("archiving %s from revision %d (the base is at %d, %d segments stored)",
		a.Folder.URI(), chain.Reach+1, a.BaseRevision, len(refs))
	return chain.Reach + 1, nil
}

// stream watches from `next` and cuts segments until the watch or a write fails, or ctx ends.
func (a *Archiver) stream(ctx context.Context, next int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := a.Client.Watch(wctx, next)
	seg := &pendingSegment{next: next}
	cut := time.NewTimer(time.Hour)
	cut.Stop()
	for {
		select {
		case b, ok := <-batches:
			if !ok {
				return a.stop(seg, errors.New("the watch ended"))
			}
			if b.Err != nil {
				return a.stop(seg, watchError(b.Err, seg.next))
			}
			if err := a.take(ctx, seg, b, cut); err != nil {
				return err
			}
		case <-cut.C:
			if err := a.flush(ctx, seg); err != nil {
				return err
			}
		case <-ctx.Done():
			return a.stop(seg, ctx.Err())
		}
	}
}

// stop stores what the segment holds (its events are complete revisions) and returns why the
// stream ended; it writes even after ctx ended, within flushTimeout, so that a stopped archiver
// keeps what it had seen.
func (a *Archiver) stop(seg *pendingSegment, why error) error {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := a.flush(ctx, seg); err != nil {
		return errors.Join(why, err)
	}
	return why
}

func watchError(err error, next int64) error {
	var compacted *etcd.CompactedError
	if errors.As(err, &compacted) {
		return &ArchiveGapError{Next: next, Compacted: compacted.CompactRevision}
	}
	return err
}

// take adds a batch's events; a member change or a full segment is cut first or after.
func (a *Archiver) take(ctx context.Context, seg *pendingSegment, b etcd.WatchBatch, cut *time.Timer) error {
	if len(b.Events) == 0 {
		return nil // a progress notification: nothing to keep
	}
	if !seg.empty() && seg.s.MemberID != b.MemberID {
		if err := a.flush(ctx, seg); err != nil {
			return err
		}
	}
	if seg.empty() {
		seg.s.ClusterID, seg.s.MemberID = b.ClusterID, b.MemberID
		cut.Reset(a.period())
	}
	for _, ev := range b.Events {
		if err := seg.add(ctx, ev, a.Client); err != nil {
			return err
		}
	}
	if !seg.empty() {
		seg.s.Marks = append(seg.s.Marks, archive.Mark{Revision: seg.s.Last, Time: a.now()})
	}
	if seg.bytes >= a.maxBytes() {
		cut.Stop()
		return a.flush(ctx, seg)
	}
	return nil
}

// flush writes the segment, whole, and starts the next one after it.
func (a *Archiver) flush(ctx context.Context, seg *pendingSegment) error {
	if seg.empty() {
		return nil
	}
	ref := seg.s.Ref()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(archive.Encode(pw, &seg.s)) }()
	err := a.Folder.Put(ctx, ref.Name, pr)
	_ = pr.CloseWithError(err) // unblocks the encoder when the store gave up early
	if err != nil {
		return fmt.Errorf("storing segment %s: %w", ref.Name, err)
	}
	a.Log.Printf("stored %s: revisions %d-%d, %d events, %d bytes of events", ref.Name, ref.First, ref.Last,
		len(seg.s.Events), seg.bytes)
	if a.Written != nil {
		a.Written(ref)
	}
	*seg = pendingSegment{next: seg.next}
	return nil
}

// pendingSegment is the segment being filled; next is the first revision not yet in it (nor
// stored before it).
type pendingSegment struct {
	s      archive.Segment
	bytes  int
	leases map[int64]bool
	next   int64
}

func (p *pendingSegment) empty() bool { return len(p.s.Events) == 0 }

// add appends an event of revision next-1 (the revision in progress) or next. An earlier
// revision is one already archived (skipped); a later one means the watch skipped revisions,
// which must never pass silently.
func (p *pendingSegment) add(ctx context.Context, ev *mvccpb.Event, c etcd.Client) error {
	rev := ev.GetKv().GetModRevision()
	inProgress := !p.empty() && rev == p.s.Last
	switch {
	case rev < p.next && !inProgress:
		return nil
	case rev > p.next:
		return fmt.Errorf("the watch delivered revision %d while %d was expected", rev, p.next)
	}
	if err := p.recordLease(ctx, ev, c); err != nil {
		return err
	}
	if p.empty() {
		p.s.First = rev
	}
	p.s.Last, p.next = rev, rev+1
	p.s.Events = append(p.s.Events, ev)
	size := proto.Size(ev)
	p.bytes += size + binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(size))
	return nil
}

// recordLease asks the TTL of a lease the first time a put of the segment carries it. A lease
// gone already (expired, revoked) is recorded with TTL 0: restore grants it UnknownLeaseTTL.
func (p *pendingSegment) recordLease(ctx context.Context, ev *mvccpb.Event, c etcd.Client) error {
	id := ev.GetKv().GetLease()
	if ev.Type != mvccpb.Event_PUT || id == 0 || p.leases[id] {
		return nil
	}
	ttl, found, err := c.LeaseTimeToLive(ctx, id)
	if err != nil {
		return fmt.Errorf("asking the TTL of lease %x: %w", id, err)
	}
	if !found {
		ttl = 0
	}
	if p.leases == nil {
		p.leases = map[int64]bool{}
	}
	p.leases[id] = true
	p.s.Leases = append(p.s.Leases, archive.Lease{ID: id, TTL: ttl})
	return nil
}
