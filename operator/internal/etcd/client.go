// Package etcd is the only wrapper of etcd's clientv3. Its users reach it through package
// etcdaccess and talk to the small Client interface; a Pool keeps one real clientv3 client per
// EtcdCluster, Dial makes a standalone one, and etcdtest's fake stands in for both in tests.
package etcd

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"strings"
)

// Member is one entry of etcd's member list.
type Member struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// MemberList is etcd's member list plus the cluster ID from the response header.
type MemberList struct {
	ClusterID uint64
	Members   []Member
}

// EndpointStatus is what one member reports about itself (Maintenance.Status).
type EndpointStatus struct {
	MemberID uint64
	// ClusterID and Revision are from the response header: the member's view when it answered.
	ClusterID        uint64
	Revision         int64
	Leader           uint64
	Version          string
	RaftIndex        uint64
	RaftAppliedIndex uint64
	IsLearner        bool
	// DBSize is the backend database's size on disk, DBSizeInUse the part holding data: the
	// difference is what a defragmentation gives back. DBQuota is the member's
	// --quota-backend-bytes (etcd 3.6+; 0 from older members): at DBSize = DBQuota etcd raises
	// NOSPACE and refuses writes.
	DBSize, DBSizeInUse, DBQuota int64
	Errors                       []string
	// StorageVersion is the member's storage schema version, e.g. "3.6.0" (etcd 3.6+; "" from
	// 3.5). DowngradeEnabled and DowngradeTarget are the cluster's downgrade as the member
	// knows it (3.6+).
	StorageVersion   string
	DowngradeEnabled bool
	DowngradeTarget  string
}

// Downgrade actions, as etcd's DowngradeRequest names them.
const (
	// DowngradeValidate checks that the cluster can downgrade to a version (one minor below
	// its cluster version, no downgrade in flight).
	DowngradeValidate = "Validate"
	// DowngradeEnable sets the cluster version to the target: members migrate their storage to
	// it and may then run the older binary.
	DowngradeEnable = "Enable"
	// DowngradeCancel ends a downgrade in flight.
	DowngradeCancel = "Cancel"
)

// Alarm types, named as etcd's AlarmType.
const (
	// AlarmNoSpace: a member's database reached its quota; the cluster refuses writes until
	// space is freed (compact, defragment) and the alarm is disarmed.
	AlarmNoSpace = "NOSPACE"
	// AlarmCorrupt: the corruption check found members' data diverging.
	AlarmCorrupt = "CORRUPT"
)

// Alarm is one active alarm: which member raised it, and its type (AlarmNoSpace, AlarmCorrupt).
type Alarm struct {
	MemberID uint64
	Type     string
}

// Client is the subset of etcd's API the lifecycle controllers need.
type Client interface {
	MemberList(ctx context.Context) (MemberList, error)
	MemberAddAsLearner(ctx context.Context, peerURL string) (Member, error)
	MemberPromote(ctx context.Context, id uint64) error
	MemberRemove(ctx context.Context, id uint64) error
	Status(ctx context.Context, endpoint string) (EndpointStatus, error)
	MoveLeader(ctx context.Context, transfereeID uint64) error
	// Defragment rewrites the database of the one member at endpoint, which serves nothing
	// while it runs.
	Defragment(ctx context.Context, endpoint string) error
	// Downgrade runs one of etcd's downgrade actions (DowngradeValidate, DowngradeEnable with a
	// target "3.5"; DowngradeCancel ignores the version).
	Downgrade(ctx context.Context, action, version string) error
	// AlarmList is the cluster's active alarms; AlarmDisarm clears one of them.
	AlarmList(ctx context.Context) ([]Alarm, error)
	AlarmDisarm(ctx context.Context, a Alarm) error
	// Authentication (the root user and the operator's own user).
	AuthStatus(ctx context.Context) (enabled bool, err error)
	AuthEnable(ctx context.Context) error
	UserAdd(ctx context.Context, name, password string) error
	// UserAddNoPassword adds a user that can only authenticate by a client certificate
	// whose CN is its name (etcd's NoPassword option).
	UserAddNoPassword(ctx context.Context, name string) error
	UserChangePassword(ctx context.Context, name, password string) error
	UserGrantRole(ctx context.Context, name, role string) error
	// Snapshot streams the connected member's database (see remote.Snapshot).
	Snapshot(ctx context.Context) (io.ReadCloser, error)
	// Continuous archiving: Watch streams the keyspace's changes from a revision (see
	// remote.Watch); LeaseTimeToLive reads the TTL a lease was granted with. Its restore writes
	// each archived revision as one transaction (Write) after granting the leases its keys carry
	// under their original IDs (LeaseGrant).
	Watch(ctx context.Context, from int64) <-chan WatchBatch
	LeaseTimeToLive(ctx context.Context, id int64) (ttl int64, found bool, err error)
	LeaseGrant(ctx context.Context, id, ttl int64) error
	Write(ctx context.Context, ops []Op) (revision int64, err error)
	Close() error
}

// Target says how to reach one cluster. Key identifies the cluster (namespace/name) in a pool.
type Target struct {
	Key       string
	Endpoints []string
	// TLS and credentials; nil and empty mean plaintext and anonymous. Changing them rebuilds
	// the pooled client like an endpoint change does. With credentials, building the client
	// authenticates (clientv3 does so in New), so a rejected password fails Factory.Client.
	TLS      *tls.Config
	Username string
	Password string
}

// url is a member URL in the scheme this target dials: clientv3 picks transport credentials
// by scheme (https without TLS would mean the system's roots, http with TLS plaintext). While
// client TLS is added to a running cluster, members advertise https but also serve plaintext
// on the same port, and the operator keeps dialing plaintext until every member serves TLS.
func (t Target) url(u string) string {
	switch {
	case t.TLS == nil && strings.HasPrefix(u, "https://"):
		return "http://" + strings.TrimPrefix(u, "https://")
	case t.TLS != nil && strings.HasPrefix(u, "http://"):
		return "https://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

// Factory hands out clients for clusters. Forget drops a cluster's cached client.
type Factory interface {
	Client(ctx context.Context, target Target) (Client, error)
	Forget(key string)
}

// FormatID renders an etcd ID the way etcdctl does, as 16 hex digits.
func FormatID(id uint64) string { return fmt.Sprintf("%016x", id) }

// ParseID is the inverse of FormatID; it returns 0 for an empty or malformed string.
func ParseID(s string) uint64 {
	var id uint64
	if _, err := fmt.Sscanf(s, "%x", &id); err != nil {
		return 0
	}
	return id
}
