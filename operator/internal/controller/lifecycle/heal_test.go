package lifecycle

import (
	"context"
	"slices"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// TestEtcdRefusalsAreRetried: etcd refuses the first adds ("unhealthy cluster", as for ~5 s
// after start) and the first promotes ("not in sync"); the operator backs off and gets there
// without reporting a failure.
func TestEtcdRefusalsAreRetried(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "busy", 1)
	waitFor(t, ns, "one healthy member", converged(t, ns, "busy", 1))
	fc := fakeEtcd.Cluster(topology.Key(ns, "busy"))
	fc.Refuse("add", rpctypes.ErrUnhealthy, rpctypes.ErrUnhealthy, rpctypes.ErrUnhealthy)
	fc.Refuse("promote", rpctypes.ErrMemberLearnerNotReady, rpctypes.ErrMemberLearnerNotReady)
	scale(t, ns, "busy", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "busy", 3))
	assertOneStepAtATime(t, fc.Ops())
	var evs corev1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Reason == v1alpha2.ReasonReconcileFailed {
			t.Errorf("a retryable refusal was reported as a failure: %s", e.Message)
		}
	}
}

// TestTmpfsPodLossReplacesMember: a memory-backed member whose Pod is gone lost its data; it is
// removed from etcd and a fresh learner takes its place, while the other two keep quorum.
func TestTmpfsPodLossReplacesMember(t *testing.T) {
	ns := newNamespace(t)
	newTmpfsCluster(t, ns, "mem", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "mem", 3))
	all := members(t, ns, "mem")
	victim := all[slices.IndexFunc(all, func(m v1alpha2.EtcdMember) bool { return !m.Spec.Bootstrap })]
	if err := k8s.Delete(context.Background(), pod(t, ns, victim.Name)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "the member replaced", func() bool {
		ms := members(t, ns, "mem")
		return !slices.ContainsFunc(ms, func(m v1alpha2.EtcdMember) bool { return m.Name == victim.Name }) &&
			converged(t, ns, "mem", 3)()
	})
	fc := fakeEtcd.Cluster(topology.Key(ns, "mem"))
	if !slices.Contains(fc.Ops(), "remove "+victim.Name) {
		t.Errorf("the lost member must be removed from etcd: %v", fc.Ops())
	}
	if pod(t, ns, victim.Name) != nil {
		t.Error("a tmpfs member's lost Pod must not be recreated over empty data")
	}
	assertOneStepAtATime(t, fc.Ops())
}

// TestAllMembersLostIsTerminal: the only member of a tmpfs cluster loses its Pod, so no copy of
// the data is left. The cluster says so (AllMembersLost) instead of a stale Available, and the
// member is not silently re-bootstrapped empty.
func TestAllMembersLostIsTerminal(t *testing.T) {
	ns := newNamespace(t)
	newTmpfsCluster(t, ns, "lost", 1)
	waitFor(t, ns, "one healthy member", converged(t, ns, "lost", 1))
	only := members(t, ns, "lost")[0]
	if err := k8s.Delete(context.Background(), pod(t, ns, only.Name)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "AllMembersLost", func() bool {
		got := getCluster(t, ns, "lost")
		avail := meta.FindStatusCondition(got.Status.Conditions, v1alpha2.ConditionAvailable)
		return avail != nil && avail.Status == metav1.ConditionFalse && avail.Reason == v1alpha2.ReasonAllMembersLost
	})
	if pod(t, ns, only.Name) != nil {
		t.Error("the lost member's Pod must not be recreated over empty data")
	}
}

// TestPodFailedByNodeShutdownIsRecreated: a graceful node shutdown leaves a PVC member's Pod
// Failed with the kubelet's reason (the public operator never replaced such a Pod, its bug #368).
// The Pod is recreated for the same member, whose etcd member ID stays, and an Event says why.
func TestPodFailedByNodeShutdownIsRecreated(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "shut", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "shut", 3))
	before := members(t, ns, "shut")
	victim := before[1]
	p := pod(t, ns, victim.Name)
	p.Status.Phase, p.Status.Reason = corev1.PodFailed, "Terminated"
	p.Status.Message = "Pod was terminated in response to imminent node shutdown."
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "a new Pod", func() bool {
		np := pod(t, ns, victim.Name)
		return np != nil && np.UID != p.UID
	})
	waitFor(t, ns, "healthy again", converged(t, ns, "shut", 3))
	ids := map[string]string{}
	for _, m := range before {
		ids[m.Name] = m.Status.MemberID
	}
	for _, m := range members(t, ns, "shut") {
		if m.Status.MemberID != ids[m.Name] {
			t.Errorf("member %s: ID %s, want %q (the same members, the same IDs)", m.Name, m.Status.MemberID, ids[m.Name])
		}
	}
	waitFor(t, ns, "a PodTerminated Event", func() bool {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "PodTerminated" && e.InvolvedObject.Name == victim.Name && e.Type == corev1.EventTypeWarning
		})
	})
}

// TestDegradedStatusRecoversWithoutEvents: a member's etcd stops answering and comes back
// without any Kubernetes object changing (a restarted member catching up). The Degraded status
// must not stay stale: a degraded cluster is looked at again until it is healthy.
func TestDegradedStatusRecoversWithoutEvents(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "flaky", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "flaky", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "flaky"))
	victim := members(t, ns, "flaky")[1]
	id := fc.Members()[1].ID
	for _, m := range fc.Members() {
		if m.Name == victim.Name {
			id = m.ID
		}
	}
	fc.SetDown(id, true)
	// Nudge one pass (an annotation change) so the outage is observed.
	c := getCluster(t, ns, "flaky")
	patch := client.MergeFrom(c.DeepCopy())
	c.Annotations = map[string]string{"test/nudge": "1"}
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "Degraded", func() bool {
		return meta.IsStatusConditionTrue(getCluster(t, ns, "flaky").Status.Conditions, v1alpha2.ConditionDegraded)
	})
	fc.SetDown(id, false)
	waitFor(t, ns, "Degraded to clear by itself", func() bool {
		return meta.IsStatusConditionFalse(getCluster(t, ns, "flaky").Status.Conditions, v1alpha2.ConditionDegraded)
	})
}
