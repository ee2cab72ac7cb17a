package topology

import (
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// Predicates on an EtcdMember that both lifecycle controllers (and the later ones) read the same
// way. The member controller writes the facts they read: the Ready condition and the revisions.

// MemberReady mirrors the member's Ready condition (its Pod serves and etcd's member ID is known).
func MemberReady(m *v1alpha2.EtcdMember) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha2.ConditionReady)
}

// MemberOutdated: the member's Pod runs another template revision than its spec asks for.
func MemberOutdated(m *v1alpha2.EtcdMember) bool {
	s := m.Status
	return s.CurrentRevision != "" && s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision
}

// RestartGranted: the cluster controller let the member controller restart the member's Pod
// into its update revision (v1alpha2.AnnotationRolloutRevision).
func RestartGranted(m *v1alpha2.EtcdMember) bool {
	return m.Status.UpdateRevision != "" && m.Annotations[v1alpha2.AnnotationRolloutRevision] == m.Status.UpdateRevision
}

// StatusCurrent: the member controller has reported on the member's latest spec.
func StatusCurrent(m *v1alpha2.EtcdMember) bool {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady)
	return c != nil && c.ObservedGeneration == m.Generation
}

// Running: the member is neither parked nor leaving.
func Running(m *v1alpha2.EtcdMember) bool {
	return !m.Spec.Dormant && m.DeletionTimestamp.IsZero()
}
