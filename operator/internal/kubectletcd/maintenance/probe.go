// Package maintenance is `kubectl etcd defrag`, `move-leader` and `alarm list|disarm`: the
// operations etcd's maintenance API offers, taken one member at a time and gated on health.
package maintenance

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// live is a registered member and what it answered.
type live struct {
	member v1alpha2.EtcdMember
	status etcd.EndpointStatus
}

// healthy probes every registered member and refuses (ExitUnhealthy) unless each answers
// without errors but NOSPACE and all agree on one leader: a disruptive step starts only on a
// healthy cluster.
func healthy(ctx context.Context, s *kubectletcd.Session, conn etcdaccess.Conn) ([]live, error) {
	var out []live
	leader := uint64(0)
	for _, p := range s.Probe(ctx, conn) {
		st := p.Status
		switch {
		case p.Err != nil:
			return nil, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "cluster %s is not healthy, nothing done: member %s does not answer: %v", s.Cluster.Name, p.Member.Name, p.Err)
		case len(serious(st.Errors)) > 0:
			return nil, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "cluster %s is not healthy, nothing done: member %s reports %s", s.Cluster.Name, p.Member.Name, serious(st.Errors)[0])
		case st.Leader == 0 || (leader != 0 && st.Leader != leader):
			return nil, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "cluster %s is not healthy, nothing done: its members do not agree on a leader", s.Cluster.Name)
		}
		leader = st.Leader
		out = append(out, live{member: p.Member, status: st})
	}
	if len(out) == 0 {
		return nil, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "cluster %s has no member registered in etcd", s.Cluster.Name)
	}
	return out, nil
}

// serious are a member's errors but a NOSPACE alarm: a cluster out of space still has its
// quorum and leader, and defragmentation is how it gets space back.
func serious(errs []string) []string {
	var out []string
	for _, e := range errs {
		if !strings.Contains(e, etcd.AlarmNoSpace) {
			out = append(out, e)
		}
	}
	return out
}

// byID finds the member with etcd ID id.
func byID(ls []live, id uint64) (live, bool) {
	for _, l := range ls {
		if l.status.MemberID == id {
			return l, true
		}
	}
	return live{}, false
}

// waitAnswering waits until the member answers again with a leader and no error but NOSPACE
// (after a defrag: a member still over its quota keeps that alarm until it is disarmed).
func waitAnswering(ctx context.Context, conn etcdaccess.Conn, m *v1alpha2.EtcdMember, timeout time.Duration) (etcd.EndpointStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := kubectletcd.ProbeMember(ctx, conn, m)
		if err == nil && len(serious(st.Errors)) == 0 && st.Leader != 0 {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("member %s does not answer healthy after %s: %v", m.Name, timeout, err)
		case <-tick.C:
		}
	}
}
