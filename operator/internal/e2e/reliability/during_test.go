//go:build e2e

package reliability

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestDuringScale: the cluster is scaled 3→5, 5→3, … while the workload runs, one fault at a
// random moment of each change: the leader SIGKILLed on the first, a follower on the second,
// the operator killed and restarted on the third, the leader partitioned on the fourth, a
// follower's node stopped on the fifth, in turn (2 changes; $RELIABILITY_FAULTS sets how many).
func TestDuringScale(t *testing.T) {
	cp := newCampaign(t, "scale 3→5→3", "scale", 2)
	e2eutil.CreateCluster(t, cp.c, cp.ns, "scale", 3)
	e2eutil.WaitConverged(t, cp.c, cp.ns, "scale", 3, convergeTimeout)
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, "scale"))
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		replicas := []int32{5, 3}[i%2]
		start := time.Now()
		e2eutil.Scale(t, cp.c, cp.ns, "scale", replicas)
		over := cp.injectSoon(cp.kind(i))
		cp.converge(start, fmt.Sprintf("change %d: converged at %d", i+1, replicas), convergeTimeout, over, cp.converged(int(replicas)))
	}
	cp.finish()
}

// TestDuringRollout: a version upgrade by one minor rolls the members while the workload runs,
// with a fault at a random moment of it; a longer campaign downgrades back and upgrades again,
// one fault per rollout.
func TestDuringRollout(t *testing.T) {
	vs := e2eutil.EtcdVersions
	versionCampaign(t, "rollout (upgrade, then down and up)", "roll", vs[len(vs)-2], vs[len(vs)-1])
}

// TestDuringDowngrade: a one-minor downgrade (etcd's procedure: enable, storage migrated,
// members restarted onto the older binary) while the workload runs, with a fault at a random
// moment of it; a longer campaign upgrades back and downgrades again.
func TestDuringDowngrade(t *testing.T) {
	vs := e2eutil.EtcdVersions
	versionCampaign(t, "downgrade (then up and down)", "down", vs[len(vs)-1], vs[len(vs)-2])
}

// versionCampaign creates a 3-member cluster on from and moves it to to and back, once per
// fault (1 by default), each move with a fault at a random moment. Its snapshot count is small,
// so a downgrade's storage migrates soon under the workload's writes.
func versionCampaign(t *testing.T, title, name, from, to string) {
	cp := newCampaign(t, title, name, 1)
	e2eutil.CreateCluster(t, cp.c, cp.ns, name, 3, e2eutil.Version(from), func(s *v1alpha2.EtcdClusterSpec) {
		s.Options = &v1alpha2.EtcdOptions{SnapshotCount: ptr.To[int64](1000)}
	})
	e2eutil.WaitConverged(t, cp.c, cp.ns, name, 3, convergeTimeout)
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, name))
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		target := []string{to, from}[i%2]
		start := time.Now()
		cp.setVersion(target)
		over := cp.injectSoon(cp.kind(i))
		cp.converge(start, fmt.Sprintf("move %d: every member on %s", i+1, target), 2*convergeTimeout, over, cp.onVersion(target, 3))
	}
	cp.finish()
}
