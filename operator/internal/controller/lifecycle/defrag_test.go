package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

const mib = 1 << 20

func newDefrag(t *testing.T, ns, name, cluster string, mutate ...func(*v1alpha2.EtcdDefragSpec)) {
	t.Helper()
	d := &v1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}}}
	for _, m := range mutate {
		m(&d.Spec)
	}
	create(t, d)
}

func getDefrag(t *testing.T, ns, name string) *v1alpha2.EtcdDefrag {
	t.Helper()
	d := &v1alpha2.EtcdDefrag{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

func defragPhase(t *testing.T, ns, name string, phase v1alpha2.DefragPhase) func() bool {
	return func() bool { return getDefrag(t, ns, name).Status.Phase == phase }
}

func defragReason(t *testing.T, ns, name string) string {
	if c := meta.FindStatusCondition(getDefrag(t, ns, name).Status.Conditions, v1alpha2.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// memberIDs maps a cluster's member names to their etcd IDs.
func memberIDs(t *testing.T, ns, cluster string) map[string]uint64 {
	out := map[string]uint64{}
	for _, m := range members(t, ns, cluster) {
		out[m.Name] = etcd.ParseID(m.Status.MemberID)
	}
	return out
}

// Followers first, the leader last after leadership moved to a defragmented follower; a member
// below the default threshold is skipped with its reason; a NOSPACE alarm is disarmed once the
// member is below its quota; the finished run is deleted after its TTL.
func TestDefragOrderSkipsAndAlarm(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "d", 3)
	waitFor(t, ns, "3 members", converged(t, ns, "d", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "d"))
	leader := leaderName(t, ns, "d")
	ids := memberIDs(t, ns, "d")
	var followers []string
	for name := range ids {
		if name != leader {
			followers = append(followers, name)
		}
	}
	slices.Sort(followers)
	fragmented, small := followers[0], followers[1]
	fc.SetDBSize(ids[leader], 900*mib, 100*mib)
	fc.SetDBSize(ids[fragmented], 500*mib, 100*mib)
	fc.SetDBSize(ids[small], 150*mib, 100*mib) // 50Mi reclaimable: below the default 200Mi
	fc.SetQuota(800 * mib)
	fc.RaiseAlarm(ids[leader], etcd.AlarmNoSpace)
	before := len(fc.Ops())

	newDefrag(t, ns, "run", "d", func(s *v1alpha2.EtcdDefragSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](3) })
	waitFor(t, ns, "the run Complete", defragPhase(t, ns, "run", v1alpha2.DefragComplete))
	done := getDefrag(t, ns, "run")
	waitFor(t, ns, "the run deleted after its TTL", func() bool {
		return apierrors.IsNotFound(k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "run"}, &v1alpha2.EtcdDefrag{}))
	})
	ops := fc.Ops()[before:]
	want := []string{"defrag " + fragmented, "move-leader " + fragmented, "defrag " + leader, "alarm-disarm NOSPACE " + leader}
	if !slices.Equal(ops, want) {
		t.Errorf("etcd operations %v, want %v", ops, want)
	}
	if done.Status.Defragmented != 2 {
		t.Errorf("defragmented %d, want 2", done.Status.Defragmented)
	}
	var order []string
	for _, m := range done.Status.Members {
		order = append(order, m.Name)
		switch m.Name {
		case small:
			if m.Outcome != v1alpha2.DefragOutcomeSkipped || m.Reason != v1alpha2.ReasonBelowThreshold {
				t.Errorf("member %s: %s %s, want Skipped BelowThreshold", m.Name, m.Outcome, m.Reason)
			}
		default:
			if m.Outcome != v1alpha2.DefragOutcomeDefragmented || m.DBSizeAfter != 100*mib || m.ReclaimedBytes != m.DBSizeBefore-100*mib {
				t.Errorf("member %s: %+v", m.Name, m)
			}
		}
	}
	if order[len(order)-1] != leader || done.Status.Members[len(order)-1].Role != "leader" {
		t.Errorf("status order %v: the leader %s is not last", order, leader)
	}
	if len(events(t, ns, "run", v1alpha2.ReasonAlarmDisarmed)) != 1 {
		t.Error("no AlarmDisarmed Event")
	}
}

// A run of a cluster that does not exist yet waits (ClusterNotFound); a second run of the same
// cluster waits for the first (AnotherDefragRunning); both finish, in order, once it exists.
func TestDefragWaitsAndRunsOneAtATime(t *testing.T) {
	ns := newNamespace(t)
	newDefrag(t, ns, "first", "late")
	waitFor(t, ns, "first waits for its cluster", func() bool { return defragReason(t, ns, "first") == v1alpha2.ReasonClusterNotFound })
	newDefrag(t, ns, "second", "late", func(s *v1alpha2.EtcdDefragSpec) { s.Rule = &v1alpha2.DefragRule{All: true} })
	waitFor(t, ns, "second waits for first", func() bool { return defragReason(t, ns, "second") == v1alpha2.ReasonAnotherDefragRunning })

	newCluster(t, ns, "late", 1)
	waitFor(t, ns, "both complete", func() bool {
		return defragPhase(t, ns, "first", v1alpha2.DefragComplete)() && defragPhase(t, ns, "second", v1alpha2.DefragComplete)()
	})
	first, second := getDefrag(t, ns, "first"), getDefrag(t, ns, "second")
	if second.Status.StartedAt.Before(first.Status.CompletedAt) {
		t.Errorf("second started %s, before first completed %s", second.Status.StartedAt, first.Status.CompletedAt)
	}
	if first.Status.Defragmented != 0 || second.Status.Defragmented != 1 {
		t.Errorf("defragmented %d and %d, want 0 (nothing to reclaim) and 1 (rule.all)", first.Status.Defragmented, second.Status.Defragmented)
	}
}

// etcd refusing a member's defrag fails the run: that member Failed (RPCError), the ones after
// it not touched (Skipped, RunFailed), a Warning Event.
func TestDefragFailureStopsTheRun(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "f", 3)
	waitFor(t, ns, "3 members", converged(t, ns, "f", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "f"))
	fc.Refuse("defrag", errors.New("etcdserver: request timed out"))
	newDefrag(t, ns, "bad", "f", func(s *v1alpha2.EtcdDefragSpec) { s.Rule = &v1alpha2.DefragRule{All: true} })
	waitFor(t, ns, "the run Failed", defragPhase(t, ns, "bad", v1alpha2.DefragFailed))
	d := getDefrag(t, ns, "bad")
	var outcomes []string
	for _, m := range d.Status.Members {
		outcomes = append(outcomes, string(m.Outcome)+"/"+m.Reason)
	}
	if want := []string{"Failed/RPCError", "Skipped/RunFailed", "Skipped/RunFailed"}; !slices.Equal(outcomes, want) {
		t.Errorf("outcomes %v, want %v", outcomes, want)
	}
	if c := meta.FindStatusCondition(d.Status.Conditions, v1alpha2.ConditionReady); c == nil || c.Reason != v1alpha2.ReasonRPCError ||
		!strings.Contains(c.Message, "request timed out") {
		t.Errorf("Ready %+v, want RPCError naming etcd's error", c)
	}
	if len(events(t, ns, "bad", v1alpha2.ReasonRPCError)) == 0 {
		t.Error("no RPCError Event")
	}
	for _, op := range fc.Ops() {
		if strings.HasPrefix(op, "defrag ") || strings.HasPrefix(op, "move-leader") {
			t.Errorf("etcd changed by a failed run: %s", op)
		}
	}
}
