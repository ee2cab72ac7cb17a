package kubectletcd

import (
	"context"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// ProbeTimeout bounds one member's answer: a member that does not answer is reported, not
// waited for.
const ProbeTimeout = 5 * time.Second

// MemberStatus is what one registered member answered (Err when it did not).
type MemberStatus struct {
	Member v1alpha2.EtcdMember
	Status etcd.EndpointStatus
	Err    error
}

// Probe asks every registered member for its status through conn, each within ProbeTimeout.
func (s *Session) Probe(ctx context.Context, conn etcdaccess.Conn) []MemberStatus {
	var out []MemberStatus
	for _, m := range s.Registered() {
		st, err := ProbeMember(ctx, conn, &m)
		out = append(out, MemberStatus{Member: m, Status: st, Err: err})
	}
	return out
}

// ProbeMember asks one member for its status within ProbeTimeout.
func ProbeMember(ctx context.Context, conn etcdaccess.Conn, m *v1alpha2.EtcdMember) (etcd.EndpointStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	return conn.Status(ctx, resources.ClientURL(m))
}
