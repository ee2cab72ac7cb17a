package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The latch of a move off auto-TLS: set while auto-TLS is asked for or any member runs it
// plainly; cleared once every running member presents the certificates from its running Pod,
// or once no member runs auto-TLS (a lost status write); never touched without peer TLS.
func TestPeerAutoTLSLatch(t *testing.T) {
	peerSecret := &corev1.LocalObjectReference{Name: "c-peer-active"}
	member := func(tls v1alpha2.MemberTLS, change ...func(*v1alpha2.EtcdMember)) v1alpha2.EtcdMember {
		m := v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "m", Generation: 2},
			Spec: v1alpha2.EtcdMemberSpec{TLS: &tls},
			Status: v1alpha2.EtcdMemberStatus{CurrentRevision: "b", UpdateRevision: "b", Conditions: []metav1.Condition{
				{Type: v1alpha2.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}}}}
		for _, c := range change {
			c(&m)
		}
		return m
	}
	auto := v1alpha2.MemberTLS{PeerAutoTLS: true}
	presents := v1alpha2.MemberTLS{PeerAutoTLS: true, PeerSecretRef: peerSecret}
	verifies := v1alpha2.MemberTLS{PeerSecretRef: peerSecret}
	oldPod := func(m *v1alpha2.EtcdMember) { m.Status.CurrentRevision = "a" }
	parked := func(m *v1alpha2.EtcdMember) { m.Spec.Dormant = true; m.Status.CurrentRevision = "" }
	autoSpec := &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{AutoTLS: true}}
	certSpec := &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}
	for _, tc := range []struct {
		name      string
		spec      *v1alpha2.TLSSpec
		latched   bool
		members   []v1alpha2.EtcdMember
		want      bool
		wantEvent peerMove
	}{
		{"no TLS", nil, true, []v1alpha2.EtcdMember{member(auto)}, false, peerMoveNone},
		{"auto-TLS asked for", autoSpec, false, []v1alpha2.EtcdMember{member(auto)}, true, peerMoveNone},
		{"certificates from the start", certSpec, false, []v1alpha2.EtcdMember{member(verifies)}, false, peerMoveNone},
		{"move asked for", certSpec, true, []v1alpha2.EtcdMember{member(auto), member(auto)}, true, peerMoveStarted},
		{"move asked for, latch never written", certSpec, false, []v1alpha2.EtcdMember{member(auto)}, true, peerMoveStarted},
		{"a Pod still on the plain auto-TLS revision", certSpec, true, []v1alpha2.EtcdMember{member(presents), member(presents, oldPod)}, true, peerMoveNone},
		{"every running member presents", certSpec, true, []v1alpha2.EtcdMember{member(presents), member(presents), member(presents, parked)}, false, peerMoveVerifying},
		{"verifying already (status write lost)", certSpec, true, []v1alpha2.EtcdMember{member(verifies), member(verifies)}, false, peerMoveNone},
		{"verifying, rolling", certSpec, false, []v1alpha2.EtcdMember{member(verifies), member(presents)}, false, peerMoveNone},
	} {
		got, event := peerAutoTLSLatch(tc.spec, tc.latched, tc.members)
		if got != tc.want || event != tc.wantEvent {
			t.Errorf("%s: latch %v event %v, want %v %v", tc.name, got, event, tc.want, tc.wantEvent)
		}
	}
}
