package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

func TestBootstrapCreatesSeedServicesAndPod(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "etcd", 1)
	waitFor(t, ns, "one healthy member", converged(t, ns, "etcd", 1))

	seed := members(t, ns, "etcd")[0]
	if !seed.Spec.Bootstrap || seed.Spec.InitialCluster != seed.Name+"=http://"+seed.Name+".etcd."+ns+".svc.cluster.local:2380" {
		t.Errorf("seed spec: bootstrap=%v initialCluster=%q", seed.Spec.Bootstrap, seed.Spec.InitialCluster)
	}
	if seed.Status.MemberID == "" || !seed.Status.IsVoter || !slices.Contains(seed.Finalizers, v1alpha2.MemberCleanupFinalizer) {
		t.Errorf("seed status %+v finalizers %v", seed.Status, seed.Finalizers)
	}
	p := pod(t, ns, seed.Name)
	if p == nil {
		t.Fatal("no seed Pod")
	}
	asCreated := seed.DeepCopy()
	asCreated.Status.MemberID = "" // the Pod was built before the seed's ID was known
	if want := resources.Pod(asCreated, resources.PodOptions{ImageRepository: "quay.io/coreos/etcd"}); !slices.Equal(p.Spec.Containers[0].Command, want.Spec.Containers[0].Command) {
		t.Errorf("seed command %v, want %v", p.Spec.Containers[0].Command, want.Spec.Containers[0].Command)
	}
	if p.Labels[v1alpha2.LabelRole] != v1alpha2.RoleVoter {
		t.Errorf("seed Pod labels %v", p.Labels)
	}
	// Once formed, a restart of the seed in place must join, never bootstrap again.
	waitFor(t, ns, "the seed Pod to be marked existing", func() bool {
		return pod(t, ns, seed.Name).Annotations[v1alpha2.AnnotationInitialClusterState] == "existing"
	})
	var svc corev1.Service
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd"}, &svc); err != nil || svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service: %v %+v", err, svc.Spec)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd-client"}, &svc); err != nil || svc.Spec.Ports[0].Port != 2379 {
		t.Errorf("client Service: %v %+v", err, svc.Spec)
	}
	c := getCluster(t, ns, "etcd")
	if c.Status.ClusterID == "" || c.Status.ClusterToken != ns+"-etcd-"+string(c.UID) || c.Status.Selector == "" ||
		len(c.Status.Members) != 1 || c.Status.Members[0].Role != v1alpha2.MemberRoleLeader || c.Status.ObservedGeneration != c.Generation {
		t.Errorf("cluster status %+v", c.Status)
	}
	if b := pdb(t, ns, "etcd"); b == nil || b.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PDB %+v", b)
	}
}

func TestScaleUpDownPauseResume(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "etcd", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "etcd", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "etcd"))
	assertOneStepAtATime(t, fc.Ops())
	if count(fc.Ops(), "add") != 2 || count(fc.Ops(), "promote") != 2 {
		t.Fatalf("ops %v", fc.Ops())
	}
	if b := pdb(t, ns, "etcd"); b == nil || b.Spec.MinAvailable.IntValue() != 2 {
		t.Errorf("PDB of 3 voters: %+v", b)
	}
	all := members(t, ns, "etcd")
	seed := all[slices.IndexFunc(all, func(m v1alpha2.EtcdMember) bool { return m.Spec.Bootstrap })]

	scale(t, ns, "etcd", 1)
	waitFor(t, ns, "one member left", converged(t, ns, "etcd", 1))
	if got := members(t, ns, "etcd"); got[0].Name != seed.Name {
		t.Errorf("scale-down must keep the leader (the seed here) to the last; %s is left", got[0].Name)
	}
	if count(fc.Ops(), "remove") != 2 {
		t.Errorf("ops %v", fc.Ops())
	}

	scale(t, ns, "etcd", 0)
	waitFor(t, ns, "paused", func() bool {
		c := getCluster(t, ns, "etcd")
		ms := members(t, ns, "etcd")
		return len(ms) == 1 && ms[0].Spec.Dormant && pod(t, ns, seed.Name) == nil && pdb(t, ns, "etcd") == nil &&
			meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionAvailable).Reason == v1alpha2.ReasonPaused
	})
	var pvc corev1.PersistentVolumeClaim
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "data-" + seed.Name}, &pvc); err != nil {
		t.Errorf("a paused member keeps its PVC: %v", err)
	}

	scale(t, ns, "etcd", 3)
	waitFor(t, ns, "resumed to three", converged(t, ns, "etcd", 3))
	resumed := members(t, ns, "etcd")[0]
	if resumed.Name != seed.Name || resumed.Status.MemberID != seed.Status.MemberID || resumed.Spec.Dormant {
		t.Errorf("resume must wake the same member: %s %s", resumed.Name, resumed.Status.MemberID)
	}
	if p := pod(t, ns, seed.Name); p.Annotations[v1alpha2.AnnotationInitialClusterState] != "existing" {
		t.Errorf("a resumed seed must join the existing cluster: %v", p.Annotations)
	}
	assertOneStepAtATime(t, fc.Ops())
}

func scale(t *testing.T, ns, name string, n int32) {
	t.Helper()
	c := getCluster(t, ns, name)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = ptr.To(n)
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

func TestDeletingClusterSkipsMemberRemove(t *testing.T) {
	ns := newNamespace(t)
	c := newCluster(t, ns, "gone", 1)
	waitFor(t, ns, "one healthy member", converged(t, ns, "gone", 1))
	fc := fakeEtcd.Cluster(topology.Key(ns, "gone"))
	if err := k8s.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	// envtest runs no garbage collector; delete the member the way it would.
	for _, m := range members(t, ns, "gone") {
		if err := k8s.Delete(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ns, "members gone", func() bool { return len(members(t, ns, "gone")) == 0 })
	if count(fc.Ops(), "remove") != 0 {
		t.Errorf("deleting the cluster must not call MemberRemove: %v", fc.Ops())
	}
}

func TestTerminalPodIsRecreated(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "term", 1)
	waitFor(t, ns, "one healthy member", converged(t, ns, "term", 1))
	m := members(t, ns, "term")[0]
	p := pod(t, ns, m.Name)
	p.Status.Phase = corev1.PodSucceeded // a graceful node shutdown: etcd exited 0 (bug #368)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "a new Pod", func() bool {
		np := pod(t, ns, m.Name)
		return np != nil && np.UID != p.UID
	})
	waitFor(t, ns, "healthy again", converged(t, ns, "term", 1))
	if got := members(t, ns, "term")[0]; got.Status.MemberID != m.Status.MemberID {
		t.Errorf("a recreated Pod keeps the member ID: %s -> %s", m.Status.MemberID, got.Status.MemberID)
	}
}

func TestMemberDroppedFromEtcdIsReplaced(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "drop", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "drop", 3))
	victim := members(t, ns, "drop")[2]
	fc := fakeEtcd.Cluster(topology.Key(ns, "drop"))
	fc.RemoveMemberBehindOperator(parseID(victim.Status.MemberID))
	// etcd exits when it finds itself removed; its Pod turns unready and restarts it.
	p := pod(t, ns, victim.Name)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", RestartCount: 1}}
	if err := k8s.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "the dropped member replaced", func() bool {
		ms := members(t, ns, "drop")
		return len(ms) == 3 && !slices.ContainsFunc(ms, func(m v1alpha2.EtcdMember) bool { return m.Name == victim.Name }) &&
			converged(t, ns, "drop", 3)()
	})
	assertOneStepAtATime(t, fc.Ops())
}

func TestEvenReplicasWarns(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "even", 2)
	waitFor(t, ns, "a warning event", func() bool {
		var evs corev1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(evs.Items, func(e corev1.Event) bool {
			return e.Reason == "EvenReplicas" && e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "replicas=2")
		})
	})
}
