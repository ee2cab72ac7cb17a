package agent

import (
	"context"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/cozystack/etcd-operator/operator/internal/archive"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// UnknownLeaseTTL is the TTL (seconds) restore grants a lease the archive recorded without one:
// it had expired or been revoked when the archiver asked, so its keys were about to go.
const UnknownLeaseTTL = 60

// DeltaRestore replays a plan's segments into an etcd restored from the plan's base and serving
// nothing else yet: each archived revision is one transaction, so that revision r of the
// original cluster becomes r+Offset, checked at every step.
type DeltaRestore struct {
	Client etcd.Client
	Folder snapshot.Folder
	Plan   archive.Plan
	// Offset is what the base's restore added to its revisions (etcdutl's --bump-revision; 0
	// without). With --mark-compacted too, every revision a client saw before the restore is
	// compacted in the restored etcd, and the replayed ones lie above it (see package archive).
	Offset int64
	Log    *Logger
}

// DeltaResult is what a replay reached.
type DeltaResult struct {
	// Revision is the last original revision applied (the base's when none was); the restored
	// etcd is at Revision+Offset.
	Revision  int64
	Revisions int
	Events    int
	// ClusterID is the original cluster's, from the segments (0 when none was read).
	ClusterID uint64
}

// Run applies the plan's steps in order and stops exactly at its revision, or before the first
// revision marked after its stop time.
func (d *DeltaRestore) Run(ctx context.Context) (DeltaResult, error) {
	res := DeltaResult{Revision: d.Plan.Base.Revision}
	granted := map[int64]bool{}
	for _, step := range d.Plan.Steps {
		seg, err := d.read(ctx, step.Segment.Name)
		if err != nil {
			return res, err
		}
		if res.ClusterID != 0 && seg.ClusterID != res.ClusterID {
			return res, fmt.Errorf("segment %s is of etcd cluster %s, the ones before of %s", step.Segment.Name,
				etcd.FormatID(seg.ClusterID), etcd.FormatID(res.ClusterID))
		}
		res.ClusterID = seg.ClusterID
		done, err := d.apply(ctx, seg, step, granted, &res)
		if err != nil || done {
			return res, err
		}
	}
	d.Log.Printf("replayed %d revisions (%d events) onto the base at %d: at revision %d", res.Revisions, res.Events,
		d.Plan.Base.Revision, res.Revision)
	return res, nil
}

// read downloads and decodes one segment (it is checked whole before anything of it applies).
func (d *DeltaRestore) read(ctx context.Context, name string) (*archive.Segment, error) {
	rc, err := d.Folder.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rc.Close() }()
	seg, err := archive.Decode(rc)
	if err != nil {
		return nil, fmt.Errorf("segment %s: %w", name, err)
	}
	return seg, nil
}

// apply replays the step's revisions of seg; done is true once the stop time is passed.
func (d *DeltaRestore) apply(ctx context.Context, seg *archive.Segment, step archive.Step, granted map[int64]bool,
	res *DeltaResult) (done bool, err error) {
	ttls := map[int64]int64{}
	for _, l := range seg.Leases {
		ttls[l.ID] = l.TTL
	}
	for _, events := range seg.Revisions() {
		rev := events[0].Kv.ModRevision
		if rev < step.From || rev > step.To {
			continue
		}
		if stop := d.Plan.StopTime; !stop.IsZero() && seg.TimeOf(rev).After(stop) {
			return true, nil
		}
		if err := d.grant(ctx, events, ttls, granted); err != nil {
			return false, err
		}
		got, err := d.Client.Write(ctx, ops(events))
		if err != nil {
			return false, fmt.Errorf("applying revision %d: %w", rev, err)
		}
		if got != rev+d.Offset {
			return false, fmt.Errorf("applying archived revision %d made revision %d, want %d: the etcd restored is not at the base's revision %d+%d, or was written to",
				rev, got, rev+d.Offset, d.Plan.Base.Revision, d.Offset)
		}
		res.Revision, res.Revisions, res.Events = rev, res.Revisions+1, res.Events+len(events)
	}
	return false, nil
}

// grant gives the restored etcd the leases the revision's puts carry, under their IDs and with
// the TTL they were granted (a lease the base already holds stays as it is).
func (d *DeltaRestore) grant(ctx context.Context, events []*mvccpb.Event, ttls map[int64]int64, granted map[int64]bool) error {
	for _, ev := range events {
		id := ev.Kv.Lease
		if ev.Type != mvccpb.Event_PUT || id == 0 || granted[id] {
			continue
		}
		ttl := ttls[id]
		if ttl <= 0 {
			ttl = UnknownLeaseTTL
		}
		if err := d.Client.LeaseGrant(ctx, id, ttl); err != nil && !etcd.IsLeaseExists(err) {
			return fmt.Errorf("granting lease %x (TTL %s): %w", id, time.Duration(ttl)*time.Second, err)
		}
		granted[id] = true
	}
	return nil
}

// ops is one archived revision as the writes of a transaction.
func ops(events []*mvccpb.Event) []etcd.Op {
	out := make([]etcd.Op, 0, len(events))
	for _, ev := range events {
		if ev.Type == mvccpb.Event_DELETE {
			out = append(out, etcd.Op{Key: ev.Kv.Key, Delete: true})
			continue
		}
		out = append(out, etcd.Op{Key: ev.Kv.Key, Value: ev.Kv.Value, Lease: ev.Kv.Lease})
	}
	return out
}
