package etcdcluster

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

func TestBrokenReason(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	mem := func(medium v1alpha2.StorageMedium, podUID string) *v1alpha2.EtcdMember {
		return &v1alpha2.EtcdMember{Spec: v1alpha2.EtcdMemberSpec{Storage: v1alpha2.StorageSpec{Medium: medium}},
			Status: v1alpha2.EtcdMemberStatus{PodUID: podUID}}
	}
	pod := func(uid string, mutate ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		p.UID = typesUID(uid)
		for _, f := range mutate {
			f(p)
		}
		return p
	}
	crashingFor := func(restarts int32, reason, waiting string, ran time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			started := metav1.NewTime(now.Add(-time.Hour))
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", RestartCount: restarts,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason,
					StartedAt: started, FinishedAt: metav1.NewTime(started.Add(ran))}}}}
		}
	}
	crashing := func(restarts int32, reason string) func(*corev1.Pod) {
		return crashingFor(restarts, reason, "CrashLoopBackOff", time.Second)
	}
	nodeDown := func(since time.Duration) nodeStates {
		return func(string) topology.NodeState {
			return topology.NodeState{NotReady: true, NotReadySince: now.Add(-since)}
		}
	}
	outOfService := func(since time.Duration) nodeStates {
		return func(string) topology.NodeState {
			return topology.NodeState{NotReady: true, NotReadySince: now.Add(-since), OutOfService: true}
		}
	}
	nodeUp := func(string) topology.NodeState { return topology.NodeState{} }
	booted := func(id string) nodeStates {
		return func(string) topology.NodeState { return topology.NodeState{BootID: id} }
	}
	bootedOn := func(m *v1alpha2.EtcdMember, id string) *v1alpha2.EtcdMember { m.Status.PodNodeBootID = id; return m }
	guardExited := func(code int32, last bool) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			term := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
			cs := corev1.ContainerStatus{Name: v1alpha2.DataGuardContainer, State: term}
			if last {
				cs.State, cs.LastTerminationState = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}, term
			}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs}
		}
	}
	memory, pvc := v1alpha2.StorageMediumMemory, v1alpha2.StorageMediumDefault
	cases := []struct {
		name   string
		m      *v1alpha2.EtcdMember
		pod    *corev1.Pod
		node   nodeStates
		prefix string // "" means not broken
		pinned bool   // the member's volume is bound to its node
	}{
		{"healthy tmpfs member", mem(memory, "u1"), pod("u1"), nodeUp, "", false},
		{"tmpfs Pod deleted", mem(memory, "u1"), nil, nodeUp, membership.DataLostPrefix, false},
		{"tmpfs Pod replaced", mem(memory, "u1"), pod("u2"), nodeUp, membership.DataLostPrefix, false},
		{"tmpfs Pod terminal", mem(memory, "u1"), pod("u1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), nodeUp, membership.DataLostPrefix, false},
		{"tmpfs member before its first Pod", mem(memory, ""), nil, nodeUp, "", false},
		{"tmpfs Pod kept, its node booted again", bootedOn(mem(memory, "u1"), "b1"), pod("u1"), booted("b2"), membership.DataLostPrefix, false},
		{"tmpfs Pod kept, same boot", bootedOn(mem(memory, "u1"), "b1"), pod("u1"), booted("b1"), "", false},
		{"tmpfs, boot not recorded (older operator)", mem(memory, "u1"), pod("u1"), booted("b2"), "", false},
		{"tmpfs, node reports no boot ID", bootedOn(mem(memory, "u1"), "b1"), pod("u1"), nodeUp, "", false},
		{"tmpfs data guard refused an empty volume", mem(memory, "u1"), pod("u1", guardExited(v1alpha2.DataGuardRefusedExitCode, false)), nodeUp, membership.DataLostPrefix + "the tmpfs member's Pod restarted on an empty", false},
		{"tmpfs data guard refused, now backing off", mem(memory, "u1"), pod("u1", guardExited(v1alpha2.DataGuardRefusedExitCode, true)), nodeUp, membership.DataLostPrefix, false},
		{"tmpfs data guard failed otherwise: not data loss", mem(memory, "u1"), pod("u1", guardExited(1, true)), nodeUp, "", false},
		{"tmpfs data guard passed", mem(memory, "u1"), pod("u1", guardExited(0, false)), nodeUp, "", false},
		{"PVC member's node booted again", bootedOn(mem(pvc, "u1"), "b1"), pod("u1"), booted("b2"), "", false},
		{"PVC member without Pod is recreated, not replaced", mem(pvc, "u1"), nil, nodeUp, "", false},
		{"tmpfs node NotReady past grace", mem(memory, "u1"), pod("u1"), nodeDown(2 * time.Minute), "node n1", false},
		{"tmpfs node NotReady within grace", mem(memory, "u1"), pod("u1"), nodeDown(30 * time.Second), "", false},
		{"PVC member on a NotReady node waits within its grace", mem(pvc, "u1"), pod("u1"), nodeDown(4 * time.Minute), "", false},
		{"PVC member's node NotReady past its grace: replaced", mem(pvc, "u1"), pod("u1"), nodeDown(6 * time.Minute), "node n1", false},
		{"PVC member's node out of service, volume follows: moved, not replaced", mem(pvc, "u1"), pod("u1"), outOfService(6 * time.Minute), "", false},
		{"PVC member's node out of service, volume bound to it: replaced", mem(pvc, "u1"), pod("u1"), outOfService(6 * time.Minute), "node n1", true},
		{"PVC member's node out of service within the grace", mem(pvc, "u1"), pod("u1"), outOfService(time.Minute), "", true},
		{"crash loop", mem(pvc, "u1"), pod("u1", crashing(3, "Error")), nodeUp, "etcd has restarted 3 times", false},
		{"few restarts", mem(pvc, "u1"), pod("u1", crashing(2, "Error")), nodeUp, "", false},
		{"restarting now after a long run", mem(pvc, "u1"), pod("u1", crashingFor(7, "Error", "CrashLoopBackOff", time.Hour)), nodeUp, "", false},
		{"restarts in the past, not waiting now", mem(pvc, "u1"), pod("u1", crashingFor(7, "Error", "", time.Second)), nodeUp, "", false},
		{"tmpfs node NotReady past grace, Pod evicted", mem(memory, "u1"), pod("u1", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}), nodeDown(2 * time.Minute), "node n1", false},
		{"OOM kills are not data loss", mem(pvc, "u1"), pod("u1", crashing(9, "OOMKilled")), nodeUp, "", false},
	}
	for _, tc := range cases {
		follows := func(string) bool { return !tc.pinned }
		got := brokenReason(tc.m, tc.pod, tc.node, graces{tmpfs: 90 * time.Second, pvc: 5 * time.Minute}, follows, now)
		if (tc.prefix == "") != (got == "") || !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("%s: brokenReason = %q, want prefix %q", tc.name, got, tc.prefix)
		}
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
