package etcdcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The latch waits for every running member to run its spec's revision, reported on its current
// generation, and be ready; parked and leaving members do not hold it back.
func TestAllServeBoth(t *testing.T) {
	both := &v1alpha2.MemberTLS{ClientServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}, ClientPlaintext: true}
	serving := func(name string) v1alpha2.EtcdMember {
		return v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 2},
			Spec: v1alpha2.EtcdMemberSpec{TLS: both},
			Status: v1alpha2.EtcdMemberStatus{CurrentRevision: "b", UpdateRevision: "b", Conditions: []metav1.Condition{
				{Type: v1alpha2.ConditionReady, Status: metav1.ConditionTrue, ObservedGeneration: 2}}}}
	}
	with := func(change func(*v1alpha2.EtcdMember)) v1alpha2.EtcdMember {
		m := serving("changed")
		change(&m)
		return m
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		m    v1alpha2.EtcdMember
		want bool
	}{
		{"serving", serving("m"), true},
		{"old revision", with(func(m *v1alpha2.EtcdMember) { m.Status.CurrentRevision = "a" }), false},
		{"no Pod yet", with(func(m *v1alpha2.EtcdMember) { m.Status.CurrentRevision = "" }), false},
		{"status of an older spec", with(func(m *v1alpha2.EtcdMember) { m.Generation = 3 }), false},
		{"not ready", with(func(m *v1alpha2.EtcdMember) { m.Status.Conditions[0].Status = metav1.ConditionFalse }), false},
		{"parked", with(func(m *v1alpha2.EtcdMember) { m.Spec.Dormant = true; m.Status.CurrentRevision = "" }), true},
		{"leaving", with(func(m *v1alpha2.EtcdMember) { m.DeletionTimestamp = &now; m.Status.CurrentRevision = "a" }), true},
	} {
		if got := allServeBoth([]v1alpha2.EtcdMember{serving("a"), tc.m}); got != tc.want {
			t.Errorf("%s: allServeBoth = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !anyPlaintext([]v1alpha2.EtcdMember{serving("a"), {}}) || anyPlaintext([]v1alpha2.EtcdMember{serving("a")}) {
		t.Error("anyPlaintext must see exactly the members without client TLS in their spec")
	}
}
