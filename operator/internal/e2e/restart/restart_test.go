//go:build e2e

package restart

import (
	"fmt"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// TestKilledBetweenScaleUpSteps scales 1 -> 3 -> 5 and SIGKILLs the operator each time the
// observable state moves, then starts it again; it must still converge with exactly the
// desired voters, one EtcdMember per etcd member and the data intact.
func TestKilledBetweenScaleUpSteps(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	op := e2eutil.StartOperator(t, c)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "crash", 1)
	e2eutil.WaitConverged(t, c, ns, "crash", 1, 3*time.Minute)
	e2eutil.PutGet(t, c, ns, "crash", "before", "kills")

	for _, n := range []int32{3, 5} {
		e2eutil.Scale(t, c, ns, "crash", n)
		kills := 0
		last := e2eutil.Fingerprint(t, c, ns, "crash")
		e2eutil.WaitFor(t, 6*time.Minute, fmt.Sprintf("convergence at %d through kills", n), func() bool {
			if e2eutil.Converged(t, c, ns, "crash", int(n)) {
				return true
			}
			if fp := e2eutil.Fingerprint(t, c, ns, "crash"); fp != last {
				t.Logf("state moved, killing the operator (kill %d): %s", kills+1, fp)
				if err := op.Kill(); err != nil {
					t.Fatal(err)
				}
				if err := op.Start(); err != nil {
					t.Fatal(err)
				}
				last, kills = fp, kills+1
			}
			return false
		})
		t.Logf("scale to %d converged after %d operator kills", n, kills)
		if kills == 0 {
			t.Errorf("scale to %d: no step was observed, so nothing was tested", n)
		}
		e2eutil.AssertOneToOne(t, c, ns, "crash")
	}
	e2eutil.AssertKey(t, c, ns, "crash", "before", "kills")
	if t.Failed() {
		t.Logf("operator log:\n%s", op.LogTail(80))
	}
}
