// Package etcdtest is an in-memory etcd for tests: the operator's etcd.Factory and etcd.Client
// without a real cluster, with etcd's own errors. It is test support only: no production
// package imports it.
package etcdtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// FakeFactory is an in-memory etcd for tests: one FakeCluster per key, formed by its seed the
// first time a client is requested (as if the seed's Pod had started), with etcd's own errors.
type FakeFactory struct {
	mu       sync.Mutex
	clusters map[string]*FakeCluster
	// Version is reported by Status for every member.
	Version string
	// Alive, when set, says whether a member's process runs (by member name). Only a live seed
	// forms its cluster and only live members answer Status, as with real Pods.
	Alive func(name string) bool
	// Refuses, when set, says whether a member's client listener refuses a client dialing TLS
	// (or plaintext), by member name: such a member does not answer it, and a cluster all of
	// whose members refuse it does not either.
	Refuses func(name string, tls bool) bool
}

var _ etcd.Factory = (*FakeFactory)(nil)

// NewFakeFactory returns a fake with no clusters.
func NewFakeFactory() *FakeFactory {
	return &FakeFactory{clusters: map[string]*FakeCluster{}, Version: "3.6.16"}
}

// Cluster returns (creating if needed) the fake cluster for key.
func (f *FakeFactory) Cluster(key string) *FakeCluster {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[key]
	if !ok {
		c = &FakeCluster{clusterID: uint64(len(f.clusters)+1) << 32, version: f.Version, refusals: map[string][]error{},
			alive: f.Alive, refuses: f.Refuses, dbSizes: map[uint64]dbSize{}, quota: DefaultQuota}
		f.clusters[key] = c
	}
	return c
}

// Client implements etcd.Factory. An empty cluster is formed by the member behind the first endpoint.
// Like clientv3.New, a client with credentials authenticates at once (once auth is on).
func (f *FakeFactory) Client(_ context.Context, t etcd.Target) (etcd.Client, error) {
	if len(t.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd cluster %s: no endpoints", t.Key)
	}
	c := f.Cluster(t.Key)
	c.formFrom(t.Endpoints[0])
	c.dialed(t.TLS != nil)
	if err := c.authenticate(t.Username, t.Password); err != nil {
		return nil, err
	}
	user := t.Username
	if user == "" {
		user = c.knownUser(certificateUser(t.TLS))
	}
	return &fakeSession{FakeCluster: c, user: user, tls: t.TLS != nil}, nil
}

// Forget implements etcd.Factory.
func (f *FakeFactory) Forget(string) {}

// FakeCluster is one simulated etcd cluster. It implements etcd.Client.
type FakeCluster struct {
	mu        sync.Mutex
	clusterID uint64
	nextID    uint64
	leader    uint64
	version   string
	members   []etcd.Member
	ops       []string
	refusals  map[string][]error
	down      map[uint64]bool
	alive     func(name string) bool
	refuses   func(name string, tls bool) bool
	auth      fakeAuth
	dbSizes   map[uint64]dbSize
	quota     int64
	alarms    []etcd.Alarm
	// downgradeTo is the minor etcd's downgrade is enabled to ("": none).
	downgradeTo string
	// schemes logs the scheme of the clients handed out, each time it changes.
	schemes []string
	// kv is the keyspace, under its own lock (watches wait on it).
	kv fakeKV
}

// Schemes lists the schemes ("plaintext", "tls") clients of the cluster dialed, in order, one
// entry per change.
func (c *FakeCluster) Schemes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.schemes)
}

func (c *FakeCluster) dialed(tls bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := schemeName(tls)
	if len(c.schemes) == 0 || c.schemes[len(c.schemes)-1] != s {
		c.schemes = append(c.schemes, s)
	}
}

func schemeName(tls bool) string {
	if tls {
		return "tls"
	}
	return "plaintext"
}

// reachable: the member answers a client dialing tls (or plaintext).
func (c *FakeCluster) reachable(name string, tls bool) bool {
	return c.refuses == nil || !c.refuses(name, tls)
}

// Refuse makes the next calls of op ("add", "promote", "remove", "list", "status", "move",
// "defrag", "alarm-list", "alarm-disarm") fail with errs, one per call, in order.
func (c *FakeCluster) Refuse(op string, errs ...error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refusals[op] = append(c.refusals[op], errs...)
}

// SetDown makes Status fail for a member, as if its process were gone.
func (c *FakeCluster) SetDown(id uint64, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down == nil {
		c.down = map[uint64]bool{}
	}
	c.down[id] = down
}

// Ops is the log of successful changes, e.g. "add m-2", "promote m-2", "remove m-1",
// "defrag m-1", "alarm-disarm NOSPACE m-1".
func (c *FakeCluster) Ops() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ops)
}

// Members is a copy of the current membership.
func (c *FakeCluster) Members() []etcd.Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.members)
}

// Leader is the current leader's ID.
func (c *FakeCluster) Leader() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// RemoveMemberBehindOperator drops a member as if someone ran etcdctl member remove.
func (c *FakeCluster) RemoveMemberBehindOperator(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(id)
}

func (c *FakeCluster) formFrom(clientURL string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := hostLabel(clientURL)
	if len(c.members) > 0 || (c.alive != nil && !c.alive(name)) {
		return
	}
	peer := strings.Replace(clientURL, ":2379", ":2380", 1)
	c.nextID++
	m := etcd.Member{ID: c.clusterID + c.nextID, Name: name, PeerURLs: []string{peer}, ClientURLs: []string{clientURL}}
	c.members = append(c.members, m)
	c.leader = m.ID
	c.ops = append(c.ops, "bootstrap "+name)
}

func (c *FakeCluster) refused(op string) error {
	errs := c.refusals[op]
	if len(errs) == 0 {
		return nil
	}
	c.refusals[op] = errs[1:]
	return errs[0]
}

func (c *FakeCluster) MemberList(context.Context) (etcd.MemberList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("list"); err != nil {
		return etcd.MemberList{}, err
	}
	if len(c.members) == 0 {
		return etcd.MemberList{}, fmt.Errorf("fake etcd: no member is serving yet")
	}
	return etcd.MemberList{ClusterID: c.clusterID, Members: slices.Clone(c.members)}, nil
}

func (c *FakeCluster) MemberAddAsLearner(_ context.Context, peerURL string) (etcd.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("add"); err != nil {
		return etcd.Member{}, err
	}
	for _, m := range c.members {
		if slices.Contains(m.PeerURLs, peerURL) {
			return etcd.Member{}, rpctypes.ErrPeerURLExist
		}
		if m.IsLearner {
			return etcd.Member{}, rpctypes.ErrTooManyLearners
		}
	}
	c.nextID++
	name := hostLabel(peerURL)
	m := etcd.Member{ID: c.clusterID + c.nextID, Name: name, PeerURLs: []string{peerURL},
		ClientURLs: []string{strings.Replace(peerURL, ":2380", ":2379", 1)}, IsLearner: true}
	c.members = append(c.members, m)
	c.ops = append(c.ops, "add "+name)
	return m, nil
}

func (c *FakeCluster) MemberPromote(_ context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("promote"); err != nil {
		return err
	}
	i := c.index(id)
	switch {
	case i < 0:
		return rpctypes.ErrMemberNotFound
	case !c.members[i].IsLearner:
		return rpctypes.ErrMemberNotLearner
	}
	c.members[i].IsLearner = false
	c.ops = append(c.ops, "promote "+c.members[i].Name)
	return nil
}

func (c *FakeCluster) MemberRemove(_ context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("remove"); err != nil {
		return err
	}
	i := c.index(id)
	if i < 0 {
		return rpctypes.ErrMemberNotFound
	}
	c.ops = append(c.ops, "remove "+c.members[i].Name)
	c.remove(id)
	return nil
}

func (c *FakeCluster) Status(_ context.Context, endpoint string) (etcd.EndpointStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("status"); err != nil {
		return etcd.EndpointStatus{}, err
	}
	m, err := c.serving(endpoint)
	if err != nil {
		return etcd.EndpointStatus{}, err
	}
	db := c.dbSizes[m.ID]
	st := etcd.EndpointStatus{MemberID: m.ID, Leader: c.leader, Version: c.version, IsLearner: m.IsLearner,
		DBSize: db.size, DBSizeInUse: db.inUse, DBQuota: c.quota, StorageVersion: c.storageVersion()}
	if c.downgradeTo != "" {
		st.DowngradeEnabled, st.DowngradeTarget = true, c.downgradeTo+".0"
	}
	return st, nil
}

// serving is the member behind a client URL, if its process runs. The caller holds c.mu.
func (c *FakeCluster) serving(endpoint string) (etcd.Member, error) {
	for _, m := range c.members {
		if slices.Contains(m.ClientURLs, endpoint) && !c.down[m.ID] && (c.alive == nil || c.alive(m.Name)) {
			return m, nil
		}
	}
	return etcd.Member{}, fmt.Errorf("fake etcd: endpoint %s unreachable", endpoint)
}

func (c *FakeCluster) MoveLeader(_ context.Context, id uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("move"); err != nil {
		return err
	}
	i := c.index(id)
	if i < 0 || c.members[i].IsLearner {
		return rpctypes.ErrBadLeaderTransferee
	}
	c.leader = id
	c.ops = append(c.ops, "move-leader "+c.members[i].Name)
	return nil
}

// Close implements etcd.Client.
func (c *FakeCluster) Close() error { return nil }

func (c *FakeCluster) index(id uint64) int {
	return slices.IndexFunc(c.members, func(m etcd.Member) bool { return m.ID == id })
}

// remove deletes a member and, like raft, elects another voter when the leader leaves.
func (c *FakeCluster) remove(id uint64) {
	c.members = slices.DeleteFunc(c.members, func(m etcd.Member) bool { return m.ID == id })
	if c.leader != id {
		return
	}
	c.leader = 0
	for _, m := range c.members {
		if !m.IsLearner {
			c.leader = m.ID
			return
		}
	}
}

// hostLabel is the first DNS label of a URL's host: the member name in this operator's URLs.
func hostLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return strings.SplitN(u.Hostname(), ".", 2)[0]
}

// Snapshot streams a small stand-in database followed by its sha256, as etcd ends a snapshot.
func (c *FakeCluster) Snapshot(context.Context) (io.ReadCloser, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("snapshot"); err != nil {
		return nil, err
	}
	db := []byte(fmt.Sprintf("fake etcd database of cluster %x", c.clusterID))
	sum := sha256.Sum256(db)
	return io.NopCloser(bytes.NewReader(append(db, sum[:]...))), nil
}
