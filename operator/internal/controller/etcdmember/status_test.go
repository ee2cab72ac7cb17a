package etcdmember

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func readyPod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: typesUID(uid)}, Status: corev1.PodStatus{
		Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func pullingPod(uid, reason string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: typesUID(uid)}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Image: "quay.io/coreos/etcd:v3.6.99",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "not found"}}}}
	return p
}

func pullingInitPod(uid, reason string) *corev1.Pod {
	p := pullingPod(uid, "PodInitializing")
	p.Status.InitContainerStatuses, p.Status.ContainerStatuses = p.Status.ContainerStatuses, nil
	p.Status.InitContainerStatuses[0].State.Waiting.Reason = reason
	return p
}

func TestComputeStatus(t *testing.T) {
	cases := []struct {
		name     string
		st       memberState
		memberID string
		ready    bool
		reason   string
		podUID   string
		replicas int32
	}{
		{"serving", memberState{pod: readyPod("u1")}, "abc", true, v1alpha2.ReasonPodReady, "u1", 1},
		{"no ID yet", memberState{pod: readyPod("u1")}, "", false, v1alpha2.ReasonDiscoveringMemberID, "u1", 1},
		{"pending", memberState{waiting: "waiting to be added to etcd"}, "", false, v1alpha2.ReasonPodNotReady, "", 0},
		{"tmpfs data lost keeps the old UID", memberState{dataLost: true, waiting: "lost"}, "abc", false, v1alpha2.ReasonPodNotReady, "old", 0},
		{"no such image", memberState{pod: pullingPod("u2", "ImagePullBackOff")}, "abc", false, v1alpha2.ReasonImagePullFailed, "u2", 1},
		{"no such init image", memberState{pod: pullingInitPod("u3", "ErrImagePull")}, "", false, v1alpha2.ReasonImagePullFailed, "u3", 1},
		{"still creating", memberState{pod: pullingPod("u4", "ContainerCreating")}, "abc", false, v1alpha2.ReasonPodNotReady, "u4", 1},
	}
	for _, tc := range cases {
		m := &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "m", Generation: 2},
			Spec:   v1alpha2.EtcdMemberSpec{ClusterName: "c", Version: "3.6.16"},
			Status: v1alpha2.EtcdMemberStatus{MemberID: tc.memberID, PodUID: "old", PodNodeBootID: "boot-old"}}
		tc.st.member = m
		s := m.Status.DeepCopy()
		computeStatus(s, &tc.st)
		c := meta.FindStatusCondition(s.Conditions, v1alpha2.ConditionReady)
		if (c.Status == metav1.ConditionTrue) != tc.ready || c.Reason != tc.reason || c.ObservedGeneration != 2 {
			t.Errorf("%s: Ready %s/%s gen %d", tc.name, c.Status, c.Reason, c.ObservedGeneration)
		}
		if s.PodUID != tc.podUID || s.Replicas != tc.replicas || s.PVCName != "data-m" || s.Selector == "" {
			t.Errorf("%s: status %+v", tc.name, s)
		}
	}
}

// The node's boot ID is recorded with the Pod it was first seen under, kept while that Pod runs
// (a reboot must show as a change), and kept with the old UID once the data is lost.
func TestComputeStatusBootID(t *testing.T) {
	cases := []struct {
		name, recordedUID, recordedBoot string
		st                              memberState
		want                            string
	}{
		{"a new Pod takes the node's boot", "old", "boot-old", memberState{pod: readyPod("u1"), node: bootedNode("b1")}, "b1"},
		{"the same Pod keeps the boot it started under", "u1", "b1", memberState{pod: readyPod("u1"), node: bootedNode("b2")}, "b1"},
		{"none recorded yet (older operator): recorded now", "u1", "", memberState{pod: readyPod("u1"), node: bootedNode("b2")}, "b2"},
		{"data lost: kept", "u1", "b1", memberState{pod: readyPod("u1"), node: bootedNode("b2"), dataLost: true}, "b1"},
		{"no Pod: none", "u1", "b1", memberState{}, ""},
	}
	for _, tc := range cases {
		tc.st.member = &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "m"},
			Status: v1alpha2.EtcdMemberStatus{PodUID: tc.recordedUID, PodNodeBootID: tc.recordedBoot}}
		s := tc.st.member.Status.DeepCopy()
		computeStatus(s, &tc.st)
		if s.PodNodeBootID != tc.want {
			t.Errorf("%s: boot ID %q, want %q", tc.name, s.PodNodeBootID, tc.want)
		}
	}
}

// bootedNode is a node that reports boot ID id.
func bootedNode(id string) *corev1.Node {
	return &corev1.Node{Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: id}}}
}

func TestVersionDrift(t *testing.T) {
	m := &v1alpha2.EtcdMember{Spec: v1alpha2.EtcdMemberSpec{Version: "3.6.16"}}
	if c := versionCondition(m, "3.5.35"); c.Status != metav1.ConditionTrue || c.Reason != v1alpha2.ReasonVersionMismatch {
		t.Errorf("drift: %+v", c)
	}
	if c := versionCondition(m, "3.6.16"); c.Status != metav1.ConditionFalse {
		t.Errorf("match: %+v", c)
	}
}

func typesUID(s string) types.UID { return types.UID(s) }
