//go:build e2e

package reliability

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestDuringScale: the cluster is scaled 3→5→3 while the workload runs; during each change a
// member (the leader on the way up, a follower on the way down) is SIGKILLed at a random moment.
func TestDuringScale(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "scale", 3)
	e2eutil.WaitConverged(t, c, ns, "scale", 3, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.EtcdClient(t, c, ns, "scale"), "/campaign", 4, 6)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var slowest time.Duration
	for _, step := range []struct {
		replicas int32
		leader   bool
	}{{5, true}, {3, false}} {
		start := time.Now()
		e2eutil.Scale(t, c, ns, "scale", step.replicas)
		injectAfter(t, c, ns, "scale", r, step.leader)
		e2eutil.WaitConverged(t, c, ns, "scale", int(step.replicas), convergeTimeout)
		slowest = max(slowest, time.Since(start))
	}
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign during scale 3→5→3: 2 faults, %d operations, %d unknown outcomes, linearizable %v, slowest step %s",
		rep.Ops, rep.Unknown, rep.Linearizable, slowest.Round(100*time.Millisecond))
}

// TestDuringRollout: a version upgrade rolls the members while the workload runs, and the
// leader is SIGKILLed at a random moment of it.
func TestDuringRollout(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	vs := e2eutil.EtcdVersions
	from, to := vs[len(vs)-2], vs[len(vs)-1]
	e2eutil.CreateCluster(t, c, ns, "roll", 3, e2eutil.Version(from))
	e2eutil.WaitConverged(t, c, ns, "roll", 3, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.EtcdClient(t, c, ns, "roll"), "/campaign", 4, 6)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	start := time.Now()
	ec := e2eutil.GetCluster(t, c, ns, "roll")
	ec.Spec.Version = to
	if err := c.Client.Update(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	injectAfter(t, c, ns, "roll", r, true)
	e2eutil.WaitFor(t, 2*convergeTimeout, "every member on "+to, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "roll") {
			if m.Status.Version != to {
				return false
			}
		}
		return e2eutil.Converged(t, c, ns, "roll", 3)
	})
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign during the rollout %s→%s: 1 fault, %d operations, %d unknown outcomes, linearizable %v, converged %s after the edit",
		from, to, rep.Ops, rep.Unknown, rep.Linearizable, time.Since(start).Round(100*time.Millisecond))
}

// injectAfter SIGKILLs the leader (or a follower) after a random 0–3 s, while the change runs.
func injectAfter(t *testing.T, c *framework.Cluster, ns, cluster string, r *rand.Rand, leader bool) {
	t.Helper()
	time.Sleep(time.Duration(r.IntN(3000)) * time.Millisecond) // a random moment of the change: the point of the campaign
	victim := member(t, c, ns, cluster, leader)
	if err := c.KillContainer(context.Background(), ns, victim, "etcd"); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL %s (%s)", victim, map[bool]string{true: "leader", false: "follower"}[leader])
}
