package etcd

import (
	"context"
	"fmt"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// WatchBatch is one response of a keyspace watch: events (of one or more whole revisions), or a
// progress notification (no events: every revision up to Revision was delivered), or the error
// that ended the watch (the last batch before the channel closes).
type WatchBatch struct {
	// ClusterID and MemberID are from the response header: the cluster, and the member the watch
	// streams from (it changes when clientv3 moves the stream to another endpoint).
	ClusterID, MemberID uint64
	// Revision is the member's store revision when it sent the response.
	Revision int64
	Events   []*mvccpb.Event
	Progress bool
	Err      error
}

// CompactedError is a watch refused because its start revision is compacted: the changes up to
// CompactRevision are gone from etcd's history.
type CompactedError struct{ From, CompactRevision int64 }

func (e *CompactedError) Error() string {
	return fmt.Sprintf("etcd compacted its history up to revision %d: a watch from revision %d cannot see the changes between",
		e.CompactRevision, e.From)
}

// Op is one write of a transaction: a put (with the lease it carries, 0 for none) or a delete
// of one key.
type Op struct {
	Key, Value []byte
	Lease      int64
	Delete     bool
}

// watchBuffer is how many responses Watch's channel holds between clientv3's stream and its
// reader; clientv3 itself buffers what its reader has not taken (see docs in package archive).
const watchBuffer = 1

// Watch streams every change of the keyspace from revision `from` on, each event with the
// key's previous version (prev-kv), plus progress notifications; the watch requires a leader,
// so a member cut off from its cluster ends it rather than falling silent. The channel closes
// after the batch carrying Err (a CompactedError when `from` is compacted), or when ctx ends.
func (r *remote) Watch(ctx context.Context, from int64) <-chan WatchBatch {
	out := make(chan WatchBatch, watchBuffer)
	wch := r.c.Watch(clientv3.WithRequireLeader(ctx), "", clientv3.WithPrefix(), clientv3.WithRev(from),
		clientv3.WithPrevKV(), clientv3.WithProgressNotify())
	go func() {
		defer close(out)
		for resp := range wch {
			b := WatchBatch{ClusterID: resp.Header.GetClusterId(), MemberID: resp.Header.GetMemberId(),
				Revision: resp.Header.GetRevision(), Progress: resp.IsProgressNotify()}
			for _, ev := range resp.Events {
				b.Events = append(b.Events, (*mvccpb.Event)(ev))
			}
			switch err := resp.Err(); {
			case resp.CompactRevision != 0:
				b.Err = &CompactedError{From: from, CompactRevision: resp.CompactRevision}
			case err != nil:
				b.Err = err
			}
			select {
			case out <- b:
			case <-ctx.Done():
				return
			}
			if b.Err != nil {
				return
			}
		}
		select {
		case out <- WatchBatch{Err: fmt.Errorf("etcd watch from revision %d ended", from)}:
		case <-ctx.Done():
		}
	}()
	return out
}

// LeaseTimeToLive is the TTL a lease was granted with; found is false when it no longer exists
// (expired or revoked).
func (r *remote) LeaseTimeToLive(ctx context.Context, id int64) (ttl int64, found bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := r.c.TimeToLive(ctx, clientv3.LeaseID(id))
	if err != nil {
		if is(err, rpctypes.ErrGRPCLeaseNotFound) {
			return 0, false, nil
		}
		return 0, false, err
	}
	if resp.TTL == -1 {
		return 0, false, nil
	}
	return resp.GrantedTTL, true, nil
}

// LeaseGrant grants a lease with a chosen ID (clientv3's Grant lets etcd choose); a lease that
// exists already is ErrLeaseExist (IsLeaseExists).
func (r *remote) LeaseGrant(ctx context.Context, id, ttl int64) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := clientv3.RetryLeaseClient(r.c).LeaseGrant(ctx, &pb.LeaseGrantRequest{ID: id, TTL: ttl})
	return err
}

// Write applies ops as one transaction and returns the revision it made.
func (r *remote) Write(ctx context.Context, ops []Op) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	var then []clientv3.Op
	for _, o := range ops {
		if o.Delete {
			then = append(then, clientv3.OpDelete(string(o.Key)))
			continue
		}
		var opts []clientv3.OpOption
		if o.Lease != 0 {
			opts = append(opts, clientv3.WithLease(clientv3.LeaseID(o.Lease)))
		}
		then = append(then, clientv3.OpPut(string(o.Key), string(o.Value), opts...))
	}
	resp, err := r.c.Txn(ctx).Then(then...).Commit()
	if err != nil {
		return 0, err
	}
	return resp.Header.GetRevision(), nil
}

// IsLeaseExists reports a LeaseGrant of an ID etcd already has.
func IsLeaseExists(err error) bool { return is(err, rpctypes.ErrGRPCLeaseExist) }
