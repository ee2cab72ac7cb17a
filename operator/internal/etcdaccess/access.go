// Package etcdaccess turns "this cluster (and optionally this member)" into a ready etcd client:
// the endpoints of its registered members, the TLS material the operator dials with, the
// credentials auth needs (the operator's own etcd user, root as the fallback) and a pooled
// client. Every controller reaches etcd through it, and so do the CLIs (reading Secrets and
// members through the API server instead of a cache); nothing else builds an etcd client
// (TestOnlyEtcdAccessDialsEtcd).
package etcdaccess

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// ErrNoEndpoints: no member of the cluster is registered in etcd yet (or all are parked).
var ErrNoEndpoints = errors.New("no member of the cluster is registered in etcd")

// Access dials clusters. One Access (and so one client pool and one TLS source) must be shared
// by every controller of a manager: the pool rebuilds a cluster's client whenever the endpoints,
// TLS configuration or credentials it is asked for differ from the last ones.
type Access struct {
	factory etcd.Factory
	secrets *tlsmaterial.Source
	members client.Reader
	// dial reaches members for their metrics (nil with a fake factory).
	metricsDial topology.DialFunc
}

// New returns an Access dialing through factory (a Pool, or etcdtest's fake), reading TLS
// Secrets and credentials through secrets and EtcdMembers through members.
func New(factory etcd.Factory, secrets *tlsmaterial.Source, members client.Reader) *Access {
	return &Access{factory: factory, secrets: secrets, members: members}
}

// NewPooled is the production Access: real clients, one pooled per cluster. Connections to a
// member's DNS name go to its Pod's IP read through reader (see topology.PodDialer), everything
// else through next (nil: a plain dialer); EtcdMembers are listed through reader too.
func NewPooled(reader client.Reader, next topology.DialFunc, secrets *tlsmaterial.Source) *Access {
	p := etcd.NewPool()
	p.Dial = topology.PodDialer(reader, next)
	a := New(p, secrets, reader)
	a.metricsDial = p.Dial
	return a
}

// NewThrough is an Access whose every connection goes through dial (the kubectl plugin: a
// port-forward to the member's Pod through the API server), reading everything through reader.
func NewThrough(reader client.Reader, dial topology.DialFunc) *Access {
	p := etcd.NewPool()
	p.Dial = dial
	return New(p, tlsmaterial.NewSource(reader, nil), reader)
}

// Close closes every pooled client (the manager is stopping).
func (a *Access) Close() {
	if c, ok := a.factory.(interface{ Close() }); ok {
		c.Close()
	}
}

// Latches are the facts of a cluster's status that decide how it is dialled.
type Latches struct {
	// ClientTLSServing: every member serves client TLS (status.clientTLSServing).
	ClientTLSServing bool
	// AuthEnabled: etcd auth is on (status.authEnabled).
	AuthEnabled bool
}

// LatchesOf are the latches a stored status holds.
func LatchesOf(s *v1alpha2.EtcdClusterStatus) Latches {
	return Latches{ClientTLSServing: s.ClientTLSServing, AuthEnabled: s.AuthEnabled}
}

// Request says which cluster to dial and how much of it the caller already knows.
type Request struct {
	Cluster *v1alpha2.EtcdCluster
	// Members are the cluster's EtcdMembers (topology.ListMembers); nil lists them.
	Members []v1alpha2.EtcdMember
	// Latches the caller goes by, e.g. a pass that latched one before writing status; nil
	// means the cluster's stored status.
	Latches *Latches
	// Member pins the client to that member's endpoint (a snapshot from a chosen follower);
	// "" balances over every registered member.
	Member string
}

// Conn is a ready client and how it was made.
type Conn struct {
	etcd.Client
	// Target is what the client was dialled with: endpoints, TLS, user.
	Target etcd.Target
	// AsRoot: the operator's own user was refused or its Secret is gone, so root was used:
	// with the password of spec.auth.rootCredentialsSecretRef, or by the client certificate
	// (spec.auth.passwordlessRoot).
	AsRoot bool
}

// Dial returns the cluster's (pooled) client. Errors are those of the parts: ErrNoEndpoints,
// a *tlsmaterial.MissingSecretError (TLS material not issued yet), an *authcred.MissingError
// (root's Secret or key missing), etcd's refusal of the credentials (etcd.IsAuthFailed), or a
// failure to connect.
func (a *Access) Dial(ctx context.Context, req Request) (Conn, error) {
	target, err := a.target(ctx, req)
	if err != nil {
		return Conn{}, err
	}
	latches := req.latches()
	if !latches.AuthEnabled {
		return a.dial(ctx, target, false)
	}
	user, pw, err := authcred.Credentials(ctx, a.secrets, req.Cluster)
	if err != nil {
		return Conn{}, err
	}
	target.Username, target.Password = user, pw
	asRoot := user == v1alpha2.RootUser || user == "" // "": root by its certificate (passwordless root)
	conn, err := a.dial(ctx, target, asRoot)
	if !etcd.IsAuthFailed(err) || asRoot {
		return conn, err
	}
	// etcd refuses the operator's own user (its Secret lost, data from another cluster): root
	// can recreate it (the cluster controller's ensureAuth does).
	if target.Username, target.Password, err = authcred.RootCredentials(ctx, a.secrets, req.Cluster); err != nil {
		return Conn{}, err
	}
	return a.dial(ctx, target, true)
}

// Redial drops the cluster's pooled client and dials again. A pooled client keeps the auth
// token it logged in with: credentials changed in etcd since then show only as refused calls,
// and a fresh login is what tells a refusal of the credentials themselves.
func (a *Access) Redial(ctx context.Context, req Request) (Conn, error) {
	target, err := a.target(ctx, req)
	if err != nil {
		return Conn{}, err
	}
	a.factory.Forget(target.Key)
	return a.Dial(ctx, req)
}

// Forget drops a cluster's pooled clients and cached TLS configuration (the cluster is gone).
func (a *Access) Forget(namespace, cluster string) {
	a.factory.Forget(topology.Key(namespace, cluster))
	etcd.ForgetRequests(topology.Key(namespace, cluster))
	a.secrets.Forget(namespace, cluster)
}

func (a *Access) dial(ctx context.Context, target etcd.Target, asRoot bool) (Conn, error) {
	cli, err := a.factory.Client(ctx, target)
	if err != nil {
		return Conn{}, err
	}
	return Conn{Client: cli, Target: target, AsRoot: asRoot}, nil
}

// target is where and with which TLS material the request dials; credentials come later.
func (a *Access) target(ctx context.Context, req Request) (etcd.Target, error) {
	c := req.Cluster
	members := req.Members
	if members == nil {
		var err error
		if members, err = topology.ListMembers(ctx, a.members, c.Namespace, c.Name, c.UID); err != nil {
			return etcd.Target{}, err
		}
	}
	target := etcd.Target{Key: topology.Key(c.Namespace, c.Name), Endpoints: topology.Endpoints(members)}
	if req.Member != "" {
		m := findMember(members, req.Member)
		if m == nil || !topology.Registered(m) {
			return etcd.Target{}, fmt.Errorf("member %s of cluster %s is not registered in etcd", req.Member, c.Name)
		}
		// A pool entry of its own: the cluster's balanced client stays as it is.
		target.Key, target.Endpoints = target.Key+"/"+m.Name, []string{resources.ClientURL(m)}
	}
	if len(target.Endpoints) == 0 {
		return etcd.Target{}, ErrNoEndpoints
	}
	if topology.DialsTLS(c.Spec.TLS, req.latches().ClientTLSServing, members) {
		cfg, err := a.secrets.ClientConfig(ctx, c)
		if err != nil {
			return etcd.Target{}, err
		}
		target.TLS = cfg
	}
	return target, nil
}

func (r Request) latches() Latches {
	if r.Latches != nil {
		return *r.Latches
	}
	return LatchesOf(&r.Cluster.Status)
}

func findMember(members []v1alpha2.EtcdMember, name string) *v1alpha2.EtcdMember {
	for i := range members {
		if members[i].Name == name {
			return &members[i]
		}
	}
	return nil
}

// CommittedIndex is the raft index up to which member m has committed, read from its metrics
// listener (plain HTTP, no credentials): without quorum, etcd's own API answers nothing, not even
// a login, but a member still says how much of the log it has.
func (a *Access) CommittedIndex(ctx context.Context, m *v1alpha2.EtcdMember) (uint64, error) {
	if a.metricsDial == nil {
		return 0, errors.New("no dialer for the members' metrics")
	}
	return committedIndex(ctx, a.metricsDial, fmt.Sprintf("http://%s:%d/metrics", v1alpha2.MemberHostOf(m), v1alpha2.MetricsPort))
}
