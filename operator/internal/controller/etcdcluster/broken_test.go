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
	nodeDown := func(since time.Duration) nodeReadiness {
		return func(string) (time.Time, bool) { return now.Add(-since), true }
	}
	nodeUp := func(string) (time.Time, bool) { return time.Time{}, false }
	memory, pvc := v1alpha2.StorageMediumMemory, v1alpha2.StorageMediumDefault
	cases := []struct {
		name   string
		m      *v1alpha2.EtcdMember
		pod    *corev1.Pod
		node   nodeReadiness
		prefix string // "" means not broken
	}{
		{"healthy tmpfs member", mem(memory, "u1"), pod("u1"), nodeUp, ""},
		{"tmpfs Pod deleted", mem(memory, "u1"), nil, nodeUp, membership.DataLostPrefix},
		{"tmpfs Pod replaced", mem(memory, "u1"), pod("u2"), nodeUp, membership.DataLostPrefix},
		{"tmpfs Pod terminal", mem(memory, "u1"), pod("u1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), nodeUp, membership.DataLostPrefix},
		{"tmpfs member before its first Pod", mem(memory, ""), nil, nodeUp, ""},
		{"PVC member without Pod is recreated, not replaced", mem(pvc, "u1"), nil, nodeUp, ""},
		{"tmpfs node NotReady past grace", mem(memory, "u1"), pod("u1"), nodeDown(2 * time.Minute), "node n1"},
		{"tmpfs node NotReady within grace", mem(memory, "u1"), pod("u1"), nodeDown(30 * time.Second), ""},
		{"PVC member on NotReady node waits for it", mem(pvc, "u1"), pod("u1"), nodeDown(time.Hour), ""},
		{"crash loop", mem(pvc, "u1"), pod("u1", crashing(3, "Error")), nodeUp, "etcd has restarted 3 times"},
		{"few restarts", mem(pvc, "u1"), pod("u1", crashing(2, "Error")), nodeUp, ""},
		{"restarting now after a long run", mem(pvc, "u1"), pod("u1", crashingFor(7, "Error", "CrashLoopBackOff", time.Hour)), nodeUp, ""},
		{"restarts in the past, not waiting now", mem(pvc, "u1"), pod("u1", crashingFor(7, "Error", "", time.Second)), nodeUp, ""},
		{"tmpfs node NotReady past grace, Pod evicted", mem(memory, "u1"), pod("u1", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
		}), nodeDown(2 * time.Minute), "node n1"},
		{"OOM kills are not data loss", mem(pvc, "u1"), pod("u1", crashing(9, "OOMKilled")), nodeUp, ""},
	}
	for _, tc := range cases {
		got := brokenReason(tc.m, tc.pod, tc.node, 90*time.Second, now)
		if (tc.prefix == "") != (got == "") || !strings.HasPrefix(got, tc.prefix) {
			t.Errorf("%s: brokenReason = %q, want prefix %q", tc.name, got, tc.prefix)
		}
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
