//go:build e2e

package reliability

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestDuringReplacement: a tmpfs follower loses its data (its Pod deleted) while the workload
// runs, so the operator replaces it (remove, add a learner, promote); a second fault comes at a
// random moment of the replacement (the leader SIGKILLed, then a follower, then the operator
// killed and restarted, then the leader partitioned, then the replacement's node stopped (its
// tmpfs goes with the machine: a second loss of the same member, not of another), in turn). Two faults per replacement: one replacement by default,
// $RELIABILITY_FAULTS/2 (rounded up) otherwise.
func TestDuringReplacement(t *testing.T) {
	cp := newCampaign(t, "member replacement", "repl", 2)
	e2eutil.CreateCluster(t, cp.c, cp.ns, "repl", 3, e2eutil.Tmpfs)
	e2eutil.WaitConverged(t, cp.c, cp.ns, "repl", 3, convergeTimeout)
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, "repl"))
	for i := range (cp.faults + 1) / 2 {
		if i > 0 {
			cp.nextRound()
		}
		lost := cp.pick(false)
		before := map[string]bool{}
		for _, m := range e2eutil.Members(t, cp.c, cp.ns, "repl") {
			before[m.Name] = true
		}
		cp.pickNode = func() string { return newMember(t, cp, before) }
		start := time.Now()
		if err := cp.c.Client.Delete(context.Background(), e2eutil.Pod(t, cp.c, cp.ns, lost)); err != nil {
			t.Fatal(err)
		}
		cp.row.Faults++
		t.Logf("fault %d: the Pod of tmpfs follower %s deleted: its data is gone", cp.row.Faults, lost)
		over := cp.injectSoon(cp.kind(i))
		cp.converge(start, fmt.Sprintf("replacement %d: %s replaced, 3 voters", i+1, lost), 2*convergeTimeout, over, func() bool {
			return !slices.ContainsFunc(e2eutil.Members(t, cp.c, cp.ns, "repl"), func(m v1alpha2.EtcdMember) bool { return m.Name == lost }) &&
				e2eutil.Converged(t, cp.c, cp.ns, "repl", 3)
		})
	}
	cp.finish()
}

// newMember waits for the member the operator adds in place of a lost one (the only one not
// in before) and names it.
func newMember(t *testing.T, cp *campaign, before map[string]bool) string {
	var name string
	e2eutil.WaitFor(t, convergeTimeout, "the replacement member", func() bool {
		for _, m := range e2eutil.Members(t, cp.c, cp.ns, "repl") {
			if !before[m.Name] {
				name = m.Name
				return true
			}
		}
		return false
	})
	return name
}
