//go:build e2e

package reliability

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestDuringReplacement: a tmpfs follower loses its data (its Pod deleted) while the workload
// runs, so the operator replaces it (remove, add a learner, promote); the leader is SIGKILLed at a
// random moment of the replacement.
func TestDuringReplacement(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "repl", 3, e2eutil.Tmpfs)
	e2eutil.WaitConverged(t, c, ns, "repl", 3, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.EtcdClient(t, c, ns, "repl"), "/campaign", 4, 6)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	e2eutil.WaitFor(t, time.Minute, "the workload going", func() bool { return h.Len() > 50 })
	lost := member(t, c, ns, "repl", false)
	start := time.Now()
	if err := c.Client.Delete(context.Background(), e2eutil.Pod(t, c, ns, lost)); err != nil {
		t.Fatal(err)
	}
	t.Logf("deleted the Pod of tmpfs follower %s: its data is gone", lost)
	injectAfter(t, c, ns, "repl", r, true)
	e2eutil.WaitFor(t, 2*convergeTimeout, "the lost member replaced, 3 voters", func() bool {
		names := []string{}
		for _, m := range e2eutil.Members(t, c, ns, "repl") {
			names = append(names, m.Name)
		}
		return !slices.Contains(names, lost) && e2eutil.Converged(t, c, ns, "repl", 3)
	})
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign during a member replacement: 2 faults (data loss, leader SIGKILL), %d operations, %d unknown outcomes, linearizable %v, converged %s after the loss",
		rep.Ops, rep.Unknown, rep.Linearizable, time.Since(start).Round(100*time.Millisecond))
}

// TestDuringDowngrade: a one-minor downgrade (etcd's procedure: enable, storage migrated,
// members restarted onto the older binary) while the workload runs, with the leader SIGKILLed
// at a random moment of it. Its snapshot count is small, so the storage migrates soon under
// the workload's writes.
func TestDuringDowngrade(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	vs := e2eutil.EtcdVersions
	from, to := vs[len(vs)-1], vs[len(vs)-2]
	e2eutil.CreateCluster(t, c, ns, "down", 3, e2eutil.Version(from), func(s *v1alpha2.EtcdClusterSpec) {
		s.Options = &v1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](1000)}
	})
	e2eutil.WaitConverged(t, c, ns, "down", 3, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.EtcdClient(t, c, ns, "down"), "/campaign", 4, 6)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	start := time.Now()
	ec := e2eutil.GetCluster(t, c, ns, "down")
	ec.Spec.Version = to
	if err := c.Client.Update(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
	injectAfter(t, c, ns, "down", r, true)
	e2eutil.WaitFor(t, 2*convergeTimeout, "every member on "+to, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "down") {
			if m.Status.Version != to {
				return false
			}
		}
		return e2eutil.Converged(t, c, ns, "down", 3)
	})
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign during the downgrade %s→%s: 1 fault, %d operations, %d unknown outcomes, linearizable %v, converged %s after the edit",
		from, to, rep.Ops, rep.Unknown, rep.Linearizable, time.Since(start).Round(100*time.Millisecond))
}
