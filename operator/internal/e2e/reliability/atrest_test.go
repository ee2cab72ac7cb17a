//go:build e2e

package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestAtRestUnderKills: a 3-member cluster at rest (no operation of the operator in flight)
// under the recording workload while faults follow one another: the leader SIGKILLed, a
// follower, the operator killed and restarted, the leader cut off the network and healed, a
// follower's node stopped and started, in turn (5 faults, one of each kind;
// $RELIABILITY_FAULTS sets how many). The histories must be linearizable and the cluster must converge back to 3
// voters after each.
func TestAtRestUnderKills(t *testing.T) {
	cp := newCampaign(t, "at rest", "rest", int(faultKinds))
	e2eutil.CreateCluster(t, cp.c, cp.ns, "rest", 3)
	e2eutil.WaitConverged(t, cp.c, cp.ns, "rest", 3, convergeTimeout)
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, "rest"))
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		start := time.Now()
		over := cp.inject(cp.kind(i))
		cp.converge(start, fmt.Sprintf("converged after fault %d", i+1), convergeTimeout, over, cp.converged(3))
	}
	cp.finish()
}

// member names the cluster's leader, or a follower, as etcd reports it.
func member(t *testing.T, c *framework.Cluster, ns, cluster string, leader bool) string {
	t.Helper()
	var name string
	e2eutil.WaitNoError(t, time.Minute, "finding the leader", func() error {
		for _, m := range e2eutil.Members(t, c, ns, cluster) {
			cli, err := e2eutil.MemberClient(c, ns, cluster, m.Name)
			if err != nil {
				continue // a member not serving yet (a new learner) is neither
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			st, err := cli.Status(ctx, cli.Endpoints()[0])
			cancel()
			_ = cli.Close()
			if err != nil {
				continue
			}
			if (st.Leader == st.Header.MemberId) == leader {
				name = m.Name
				return nil
			}
		}
		return fmt.Errorf("no %s found", map[bool]string{true: "leader", false: "follower"}[leader])
	})
	return name
}
