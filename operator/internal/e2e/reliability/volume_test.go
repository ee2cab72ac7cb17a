//go:build e2e

package reliability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestVolumeFull: a follower's data volume (a 256 MiB tmpfs) is filled to the last byte while
// the workload runs: etcd's next WAL write fails, the member stops, and it cannot start again
// while the volume is full. After a random 2–6 s the space is freed; the cluster must converge
// back to 3 voters. One fault by default,
// $RELIABILITY_FAULTS otherwise.
func TestVolumeFull(t *testing.T) {
	cp := newCampaign(t, "a follower's volume full", "full", 1)
	e2eutil.CreateCluster(t, cp.c, cp.ns, "full", 3, e2eutil.Tmpfs)
	e2eutil.WaitConverged(t, cp.c, cp.ns, "full", 3, convergeTimeout)
	cp.watch(e2eutil.EtcdClient(t, cp.c, cp.ns, "full"))
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		start := time.Now()
		victim, before := cp.fillVolume()
		cp.converge(start, fmt.Sprintf("converged after %s's volume was freed", victim), convergeTimeout,
			func() bool { return true }, cp.converged(3))
		cp.reportVolumeVictim(victim, before)
	}
	cp.finish()
}

// reportVolumeVictim logs what the full volume did to its member: restarts of etcd, or its Pod replaced.
func (cp *campaign) reportVolumeVictim(victim string, before *corev1.Pod) {
	if p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim); p == nil || before == nil || p.UID != before.UID {
		cp.t.Logf("member %s's Pod was replaced after its volume was freed", victim)
	} else {
		cp.t.Logf("member %s: etcd restarted %d times while its volume was full", victim, restarts(p)-restarts(before))
	}
}

// fillVolume fills a follower's data volume, holds it full for a random 2–6 s, and frees it; it
// returns the follower and its Pod as it was before.
func (cp *campaign) fillVolume() (string, *corev1.Pod) {
	cp.t.Helper()
	victim := cp.pick(false)
	before := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
	path, err := cp.c.FillVolume(context.Background(), cp.ns, victim, "data", 1<<30) // more than the tmpfs holds
	if path != "" {
		cp.t.Cleanup(func() { _ = os.Remove(path) }) // the space back whatever fails first
	}
	if err != nil {
		cp.t.Fatal(err)
	}
	cp.row.Faults++
	cp.t.Logf("fault %d: the data volume of follower %s filled", cp.row.Faults, victim)
	if cp.whileFull != nil {
		cp.whileFull(victim)
	}
	time.Sleep(time.Duration(2000+cp.r.IntN(4000)) * time.Millisecond) // how long it stays full: the fault itself
	switch err := os.Remove(path); {
	case errors.Is(err, os.ErrNotExist):
		// The operator replaced the member meanwhile (a crash-looping tmpfs member loses its
		// Pod, and the volume goes with it): freed all the same.
		cp.t.Logf("%s's volume went with its Pod", victim)
	case err != nil:
		cp.t.Fatal(err)
	default:
		cp.t.Logf("%s's volume freed", victim)
	}
	return victim, before
}
