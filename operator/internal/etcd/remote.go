package etcd

import (
	"context"
	"fmt"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
)

// remote adapts a clientv3 client to Client.
type remote struct {
	c      *clientv3.Client
	target Target
	// pool owns c; nil for a standalone client (Dial), which Close closes.
	pool *Pool
	dial DialFunc
}

// Dial returns a standalone client, not pooled: for a one-shot process such as a snapshot
// agent. Close it when done.
func Dial(target Target, dial DialFunc) (Client, error) {
	if len(target.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd: no endpoints")
	}
	cfg := config(target, target.Endpoints, dial)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithDefaultCallOptions(grpc.ForceCodecV2(streamCodec{})))
	c, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	return &remote{c: c, target: target, dial: dial}, nil
}

// streamCodec is gRPC's proto codec, except that a message arriving in several pieces is joined
// in a buffer from streamBufferPool. etcd streams a snapshot in messages of a 32 KiB blob and a
// few bytes more; the codec's own pool (gRPC's default, not configurable per connection) has
// nothing between 32 KiB and 1 MiB, and zeroes the 1 MiB buffer it hands out for each: 32 times
// the snapshot, about a seventh of a snapshot agent's CPU.
type streamCodec struct{}

var protoCodec = encoding.GetCodecV2(grpcproto.Name)

func (streamCodec) Name() string                           { return protoCodec.Name() }
func (streamCodec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec.Marshal(v) }
func (streamCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if len(data) <= 1 { // nothing to join: the codec uses the buffer as it is
		return protoCodec.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(streamBufferPool)
	defer buf.Free()
	return protoCodec.Unmarshal(mem.BufferSlice{buf}, v)
}

// streamBufferPool is gRPC's default pool (256 B, 4, 16, 32 KiB and 1 MiB) with 64 KiB added.
var streamBufferPool = func() mem.BufferPool {
	p, err := mem.NewBinaryTieredBufferPool(8, 12, 14, 15, 16, 20)
	if err != nil {
		panic(err)
	}
	return p
}()

func (r *remote) MemberList(ctx context.Context) (MemberList, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := r.c.MemberList(ctx)
	if err != nil {
		return MemberList{}, err
	}
	out := MemberList{ClusterID: resp.Header.GetClusterId()}
	for _, m := range resp.Members {
		out.Members = append(out.Members, Member{
			ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner,
		})
	}
	return out, nil
}

func (r *remote) MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := r.c.MemberAddAsLearner(ctx, []string{peerURL})
	if err != nil {
		return Member{}, err
	}
	return Member{ID: resp.Member.ID, PeerURLs: resp.Member.PeerURLs, IsLearner: true}, nil
}

// MemberPromote is asked of the leader: a learner refuses it ("rpc not supported for learner",
// etcd 3.5), and the balanced client may pick the very learner being promoted.
func (r *remote) MemberPromote(ctx context.Context, id uint64) error {
	return r.onLeader(ctx, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.MemberPromote(ctx, id)
		return err
	})
}

func (r *remote) MemberRemove(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.MemberRemove(ctx, id)
	return err
}

func (r *remote) Status(ctx context.Context, endpoint string) (EndpointStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout/2)
	defer cancel()
	resp, err := r.c.Status(ctx, r.target.url(endpoint))
	if err != nil {
		return EndpointStatus{}, err
	}
	return EndpointStatus{
		MemberID: resp.Header.GetMemberId(), ClusterID: resp.Header.GetClusterId(), Revision: resp.Header.GetRevision(),
		Leader: resp.Leader, Version: resp.Version, RaftIndex: resp.RaftIndex, RaftAppliedIndex: resp.RaftAppliedIndex,
		IsLearner: resp.IsLearner, DBSize: resp.DbSize, DBSizeInUse: resp.DbSizeInUse, DBQuota: resp.DbSizeQuota,
		Errors: resp.Errors, StorageVersion: resp.StorageVersion,
		DowngradeEnabled: resp.DowngradeInfo.GetEnabled(), DowngradeTarget: resp.DowngradeInfo.GetTargetVersion(),
	}, nil
}

func (r *remote) Downgrade(ctx context.Context, action, version string) error {
	actions := map[string]clientv3.DowngradeAction{DowngradeValidate: clientv3.DowngradeValidate,
		DowngradeEnable: clientv3.DowngradeEnable, DowngradeCancel: clientv3.DowngradeCancel}
	a, ok := actions[action]
	if !ok {
		return fmt.Errorf("unknown downgrade action %q", action)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.Downgrade(ctx, a, version)
	return err
}

// MoveLeader must be served by the current leader, so it finds the leader's client URL and asks
// it through a short-lived client pinned to that endpoint.
func (r *remote) MoveLeader(ctx context.Context, transfereeID uint64) error {
	return r.onLeader(ctx, func(ctx context.Context, c *clientv3.Client) error {
		_, err := c.MoveLeader(ctx, transfereeID)
		return err
	})
}

// onLeader runs call through a short-lived client pinned to the current leader's client URL.
func (r *remote) onLeader(ctx context.Context, call func(context.Context, *clientv3.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	leaderURL, err := r.leaderEndpoint(ctx)
	if err != nil {
		return err
	}
	c, err := clientv3.New(config(r.target, []string{leaderURL}, r.dial))
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	return call(ctx, c)
}

// defragTimeout bounds a defragmentation whose caller set no deadline: it rewrites the whole
// database, which for a few GiB takes far longer than rpcTimeout.
const defragTimeout = 5 * time.Minute

// Defragment asks the member at endpoint alone (clientv3 dials it for the call). The caller's
// deadline (EtcdDefrag's spec.memberTimeoutSeconds) wins over defragTimeout.
func (r *remote) Defragment(ctx context.Context, endpoint string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defragTimeout)
		defer cancel()
	}
	_, err := r.c.Defragment(ctx, r.target.url(endpoint))
	return err
}

func (r *remote) AlarmList(ctx context.Context) ([]Alarm, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := r.c.AlarmList(ctx)
	if err != nil {
		return nil, err
	}
	var out []Alarm
	for _, a := range resp.Alarms {
		out = append(out, Alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
	}
	return out, nil
}

// AlarmDisarm refuses a type etcd does not know: it would be sent as NONE, which with member 0
// clientv3 takes for "disarm every alarm".
func (r *remote) AlarmDisarm(ctx context.Context, a Alarm) error {
	typ, ok := pb.AlarmType_value[a.Type]
	if !ok || pb.AlarmType(typ) == pb.AlarmType_NONE {
		return fmt.Errorf("etcd: unknown alarm type %q", a.Type)
	}
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(typ)})
	return err
}

func (r *remote) leaderEndpoint(ctx context.Context) (string, error) {
	// Status only: a learner of etcd 3.5 answers nothing else (not even MemberList), and the
	// balanced client may pick it.
	for _, ep := range r.c.Endpoints() {
		st, err := r.Status(ctx, ep)
		if err == nil && st.Leader != 0 && st.MemberID == st.Leader {
			return ep, nil
		}
	}
	return "", fmt.Errorf("no reachable endpoint is the leader")
}

func (r *remote) AuthStatus(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	resp, err := r.c.AuthStatus(ctx)
	if err != nil {
		return false, err
	}
	return resp.Enabled, nil
}

func (r *remote) AuthEnable(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.AuthEnable(ctx)
	return err
}

func (r *remote) UserAdd(ctx context.Context, name, password string) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.UserAdd(ctx, name, password)
	return err
}

func (r *remote) UserAddNoPassword(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.UserAddWithOptions(ctx, name, "", &clientv3.UserAddOptions{NoPassword: true})
	return err
}

func (r *remote) UserChangePassword(ctx context.Context, name, password string) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.UserChangePassword(ctx, name, password)
	return err
}

func (r *remote) UserGrantRole(ctx context.Context, name, role string) error {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	_, err := r.c.UserGrantRole(ctx, name, role)
	return err
}

// Snapshot streams the database of the member the client is connected to (pin it to one
// endpoint to choose the member). The stream ends with etcd's own sha256 of what precedes it.
// It is not bounded by the RPC timeout: a large database takes as long as it takes; cancel ctx.
func (r *remote) Snapshot(ctx context.Context) (io.ReadCloser, error) {
	return r.c.Snapshot(ctx)
}

// Close is a no-op for a pooled client (the pool owns it); a standalone one is closed.
func (r *remote) Close() error {
	if r.pool != nil {
		return nil
	}
	return r.c.Close()
}
