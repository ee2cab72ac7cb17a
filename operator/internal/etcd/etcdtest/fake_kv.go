package etcdtest

import (
	"context"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/proto"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// fakeKV is the fake's keyspace: a revision counter, the current keys, the history of events
// since the compacted revision (what a watch replays), and leases (which never expire by
// themselves: RevokeLease stands for an expiry).
type fakeKV struct {
	mu        sync.Mutex
	revision  int64
	compacted int64
	keys      map[string]*mvccpb.KeyValue
	history   []*mvccpb.Event
	leases    map[int64]int64
	// changed is closed and replaced by every write, waking the watches; ended likewise by
	// EndWatches, whose error the watches then end with.
	changed, ended chan struct{}
	endErr         error
}

func (kv *fakeKV) init() {
	if kv.keys == nil {
		kv.revision, kv.keys, kv.leases = 1, map[string]*mvccpb.KeyValue{}, map[int64]int64{}
		kv.changed, kv.ended = make(chan struct{}), make(chan struct{})
	}
}

// Revision is the keyspace's current revision (1 when empty, as in etcd).
func (c *FakeCluster) Revision() int64 {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.init()
	return c.kv.revision
}

// Keyspace is a copy of every key and its value.
func (c *FakeCluster) Keyspace() map[string]string {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	out := map[string]string{}
	for k, v := range c.kv.keys {
		out[k] = string(v.Value)
	}
	return out
}

// KeyLease is the lease a key carries (0: none or no such key).
func (c *FakeCluster) KeyLease(key string) int64 {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	if v := c.kv.keys[key]; v != nil {
		return v.Lease
	}
	return 0
}

// Compact drops the history up to rev: a watch from before it fails as etcd's does.
func (c *FakeCluster) Compact(rev int64) {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.compacted = max(c.kv.compacted, rev)
	i := 0
	for i < len(c.kv.history) && c.kv.history[i].Kv.ModRevision <= rev {
		i++
	}
	c.kv.history = c.kv.history[i:]
}

// RevokeLease ends a lease as its expiry would: its keys are deleted in one revision.
func (c *FakeCluster) RevokeLease(id int64) {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	var ops []etcd.Op
	for k, v := range c.kv.keys {
		if v.Lease == id {
			ops = append(ops, etcd.Op{Key: []byte(k), Delete: true})
		}
	}
	delete(c.kv.leases, id)
	_, _ = c.kv.write(ops)
}

// EndWatches ends every watch open now with err, as the death of the member they stream from
// or its loss of the leader would.
func (c *FakeCluster) EndWatches(err error) {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.init()
	c.kv.endErr = err
	close(c.kv.ended)
	c.kv.ended = make(chan struct{})
}

// Write implements etcd.Client: the ops as one revision, refused whole as etcd refuses a
// transaction that names a key twice or a lease it does not have.
func (c *FakeCluster) Write(_ context.Context, ops []etcd.Op) (int64, error) {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.init()
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[string(o.Key)] {
			return 0, rpctypes.ErrDuplicateKey
		}
		seen[string(o.Key)] = true
		if _, ok := c.kv.leases[o.Lease]; !o.Delete && o.Lease != 0 && !ok {
			return 0, rpctypes.ErrLeaseNotFound
		}
	}
	return c.kv.write(ops)
}

// write applies ops at the next revision; one that changes nothing makes no revision. The
// caller holds kv.mu.
func (kv *fakeKV) write(ops []etcd.Op) (int64, error) {
	kv.init()
	rev := kv.revision + 1
	var events []*mvccpb.Event
	for _, o := range ops {
		prev := kv.keys[string(o.Key)]
		if o.Delete {
			if prev != nil {
				delete(kv.keys, string(o.Key))
				events = append(events, &mvccpb.Event{Type: mvccpb.Event_DELETE,
					Kv: &mvccpb.KeyValue{Key: o.Key, ModRevision: rev}, PrevKv: prev})
			}
			continue
		}
		next := &mvccpb.KeyValue{Key: o.Key, Value: o.Value, Lease: o.Lease, ModRevision: rev, CreateRevision: rev, Version: 1}
		if prev != nil {
			next.CreateRevision, next.Version = prev.CreateRevision, prev.Version+1
		}
		kv.keys[string(o.Key)] = next
		events = append(events, &mvccpb.Event{Type: mvccpb.Event_PUT, Kv: next, PrevKv: prev})
	}
	if len(events) == 0 {
		return kv.revision, nil
	}
	kv.revision = rev
	kv.history = append(kv.history, events...)
	close(kv.changed)
	kv.changed = make(chan struct{})
	return rev, nil
}

// LeaseGrant implements etcd.Client.
func (c *FakeCluster) LeaseGrant(_ context.Context, id, ttl int64) error {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.init()
	if _, ok := c.kv.leases[id]; ok {
		return rpctypes.ErrLeaseExist
	}
	c.kv.leases[id] = ttl
	return nil
}

// LeaseTimeToLive implements etcd.Client.
func (c *FakeCluster) LeaseTimeToLive(_ context.Context, id int64) (int64, bool, error) {
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	ttl, ok := c.kv.leases[id]
	return ttl, ok, nil
}

// Watch implements etcd.Client: the history from `from` on, then each write as it happens, as
// the leader streams it; a watch whose next revision is below the compacted one ends with
// etcd.CompactedError.
func (c *FakeCluster) Watch(ctx context.Context, from int64) <-chan etcd.WatchBatch {
	out := make(chan etcd.WatchBatch, 1)
	c.kv.mu.Lock()
	c.kv.init()
	ended := c.kv.ended
	c.kv.mu.Unlock()
	go func() {
		defer close(out)
		for next := from; ; {
			b, wait := c.pending(next)
			if len(b.Events) > 0 || b.Err != nil {
				select {
				case out <- b:
				case <-ctx.Done():
					return
				}
				if b.Err != nil {
					return
				}
				if len(b.Events) > 0 {
					next = b.Events[len(b.Events)-1].Kv.ModRevision + 1
				}
				continue
			}
			select {
			case <-wait:
			case <-ended:
				c.kv.mu.Lock()
				err := c.kv.endErr
				c.kv.mu.Unlock()
				select {
				case out <- etcd.WatchBatch{Err: err}:
				case <-ctx.Done():
				}
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// watchBatchRevisions is how many revisions one watch response holds at most (etcd's is 1000:
// fewer here, so that tests see a backlog arrive in several responses).
const watchBatchRevisions = 8

// pending is the batch of events from revision next on (copies: the watcher owns them), and the
// channel the next write closes.
func (c *FakeCluster) pending(next int64) (etcd.WatchBatch, <-chan struct{}) {
	c.mu.Lock()
	b := etcd.WatchBatch{ClusterID: c.clusterID, MemberID: c.leader}
	c.mu.Unlock()
	c.kv.mu.Lock()
	defer c.kv.mu.Unlock()
	c.kv.init()
	b.Revision = c.kv.revision
	if next < c.kv.compacted { // etcd ends a watch that falls behind a compaction likewise
		b.Err = &etcd.CompactedError{From: next, CompactRevision: c.kv.compacted}
		return b, nil
	}
	for _, ev := range c.kv.history {
		if ev.Kv.ModRevision >= next && ev.Kv.ModRevision < next+watchBatchRevisions {
			b.Events = append(b.Events, proto.Clone(ev).(*mvccpb.Event))
		}
	}
	return b, c.kv.changed
}
