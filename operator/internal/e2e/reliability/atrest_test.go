//go:build e2e

package reliability

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const convergeTimeout = 4 * time.Minute

// TestAtRestUnderKills: a 3-member cluster at rest (no operation of the operator in flight)
// while its leader and then a follower are SIGKILLed, twice over, under the recording workload.
// The history must be linearizable and the cluster must converge back to 3 voters.
func TestAtRestUnderKills(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "rest", 3)
	e2eutil.WaitConverged(t, c, ns, "rest", 3, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.EtcdClient(t, c, ns, "rest"), "/campaign", 4, 6)
	faults := 0
	var slowest time.Duration
	for round := range 2 {
		for _, role := range []string{"leader", "follower"} {
			e2eutil.WaitFor(t, time.Minute, "the workload going", func() bool { return h.Len() > 50*(faults+1) })
			victim := member(t, c, ns, "rest", role == "leader")
			before := restarts(e2eutil.Pod(t, c, ns, victim))
			start := time.Now()
			if err := c.KillContainer(context.Background(), ns, victim, "etcd"); err != nil {
				t.Fatal(err)
			}
			faults++
			e2eutil.WaitFor(t, convergeTimeout, victim+" restarted", func() bool { return restarts(e2eutil.Pod(t, c, ns, victim)) > before })
			e2eutil.WaitFor(t, convergeTimeout, fmt.Sprintf("round %d: converged after SIGKILL of the %s %s", round, role, victim), func() bool {
				return e2eutil.Converged(t, c, ns, "rest", 3)
			})
			took := time.Since(start)
			slowest = max(slowest, took)
		}
	}
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign at rest: %d faults, %d operations, %d unknown outcomes, linearizable %v, slowest convergence %s",
		faults, rep.Ops, rep.Unknown, rep.Linearizable, slowest.Round(100*time.Millisecond))
}

func restarts(p *corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "etcd" {
			return s.RestartCount
		}
	}
	return 0
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
