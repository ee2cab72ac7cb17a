package etcdmember

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// updateStatus writes the fields this controller owns (Pod, PVC, selector, conditions) and only
// when they changed. memberID, isVoter and version belong to the cluster controller.
func (r *Reconciler) updateStatus(ctx context.Context, st *memberState) (reconcile.Result, error) {
	m := st.member
	want := m.Status.DeepCopy()
	computeStatus(want, st)
	if equality.Semantic.DeepEqual(&m.Status, want) {
		return reconcile.Result{}, nil
	}
	before := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady)
	if now := meta.FindStatusCondition(want.Conditions, v1alpha2.ConditionReady); now.Reason == v1alpha2.ReasonImagePullFailed &&
		(before == nil || before.Reason != now.Reason) {
		r.event(m, corev1.EventTypeWarning, now.Reason, "StartPod", "%s", now.Message)
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Status = *want
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, m, patch))
}

// computeStatus is the pure part of updateStatus.
func computeStatus(s *v1alpha2.EtcdMemberStatus, st *memberState) {
	m := st.member
	s.Selector = resources.MemberSelectorString(m.Spec.ClusterName, m.Name)
	s.PVCName = ""
	if m.Spec.Storage.Medium != v1alpha2.StorageMediumMemory {
		s.PVCName = v1alpha2.PVCName(m.Name)
	}
	if st.pvcUID != "" {
		s.PVCUID = st.pvcUID // kept when the claim is lost, so the loss stays visible
	}
	s.PodName, s.Replicas = "", 0
	s.CurrentRevision, s.UpdateRevision = st.liveRevision(), st.revision
	if st.pod != nil {
		s.PodName, s.Replicas = st.pod.Name, 1
	}
	// A tmpfs member keeps the UID of the Pod that held its data and its node's boot ID, so the
	// loss stays visible. The boot ID is the one the Pod was first seen under.
	if !st.dataLost {
		uid := ""
		if st.pod != nil {
			uid = string(st.pod.UID)
		}
		if uid != s.PodUID || s.PodNodeBootID == "" {
			s.PodNodeBootID = topology.StateOf(st.node).BootID
		}
		s.PodUID = uid
	}
	meta.SetStatusCondition(&s.Conditions, readyCondition(st, s.MemberID))
	meta.SetStatusCondition(&s.Conditions, versionCondition(m, s.Version))
	if st.volume.Reason != "" {
		v := st.volume
		v.Type = v1alpha2.ConditionVolumeResized
		meta.SetStatusCondition(&s.Conditions, v)
	}
	for i := range s.Conditions {
		s.Conditions[i].ObservedGeneration = m.Generation
	}
}

func readyCondition(st *memberState, memberID string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha2.ConditionReady, Status: metav1.ConditionFalse}
	switch {
	case st.waitingReason == v1alpha2.ReasonDataLost:
		c.Reason, c.Message = v1alpha2.ReasonDataLost, st.waiting
	case st.member.Spec.Dormant:
		c.Reason, c.Message = v1alpha2.ReasonPaused, st.waiting
	case topology.PodReady(st.pod) && memberID == "":
		c.Reason, c.Message = v1alpha2.ReasonDiscoveringMemberID, "Pod is ready; waiting for etcd's member ID"
	case topology.PodReady(st.pod):
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1alpha2.ReasonPodReady, "etcd is serving"
	case st.waiting != "" && st.waitingReason != "":
		c.Reason, c.Message = st.waitingReason, st.waiting
	case st.waiting != "":
		c.Reason, c.Message = v1alpha2.ReasonPodNotReady, st.waiting
	case st.pod == nil:
		c.Reason, c.Message = v1alpha2.ReasonPodNotReady, "no Pod"
	case imagePullFailed(st.pod) != "":
		c.Reason, c.Message = v1alpha2.ReasonImagePullFailed, imagePullFailed(st.pod)
	default:
		c.Reason, c.Message = v1alpha2.ReasonPodNotReady, fmt.Sprintf("Pod is %s and not ready", st.pod.Status.Phase)
	}
	return c
}

func versionCondition(m *v1alpha2.EtcdMember, running string) metav1.Condition {
	if running != "" && running != m.Spec.Version {
		return metav1.Condition{Type: v1alpha2.ConditionVersionDrifted, Status: metav1.ConditionTrue, Reason: v1alpha2.ReasonVersionMismatch,
			Message: fmt.Sprintf("running %s, spec says %s", running, m.Spec.Version)}
	}
	return metav1.Condition{Type: v1alpha2.ConditionVersionDrifted, Status: metav1.ConditionFalse, Reason: v1alpha2.ReasonVersionMatched,
		Message: "running version matches spec (or is not known yet)"}
}

// imagePullFailed says why the member cannot start when its image cannot be pulled: most often a
// spec.version with no such etcd release, or a wrong spec.imageRepository.
func imagePullFailed(pod *corev1.Pod) string {
	why, stuck := topology.ImageNotPulled(pod)
	if !stuck {
		return ""
	}
	return why + "; check spec.version (an etcd release, e.g. 3.6.16) and spec.imageRepository"
}
