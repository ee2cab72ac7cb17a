package etcdmember

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// loadPod reads the member's Pod and notices when a tmpfs member's data is gone: its recorded
// Pod disappeared, was replaced, or ended (a terminal Pod's emptyDir is not reused).
func (r *Reconciler) loadPod(ctx context.Context, st *memberState) (bool, error) {
	m := st.member
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		pod = nil
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(pod, m):
		return false, fmt.Errorf("pod %s/%s exists but is not controlled by member uid %s", pod.Namespace, pod.Name, m.UID)
	}
	if topology.PodMayBeLost(m, pod) {
		if pod, err = topology.LivePod(ctx, r.apiReader, m); err != nil {
			return false, err
		}
	}
	st.pod = pod
	if st.node, err = r.nodeOf(ctx, pod); err != nil {
		return false, err
	}
	st.dataLost = topology.TmpfsDataLost(m, pod, topology.StateOf(st.node).BootID)
	return false, nil
}

// nodeOf is pod's node (nil when unscheduled or the node is gone).
func (r *Reconciler) nodeOf(ctx context.Context, pod *corev1.Pod) (*corev1.Node, error) {
	if pod == nil || pod.Spec.NodeName == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, node); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return node, nil
}

// park deletes a dormant member's Pod; its PVC and identity stay for the resume.
func (r *Reconciler) park(ctx context.Context, st *memberState) (bool, error) {
	if !st.member.Spec.Dormant {
		return false, nil
	}
	st.waiting = "member is dormant (cluster paused)"
	if st.pod == nil {
		return true, nil
	}
	if err := r.deletePod(ctx, st.pod); err != nil {
		return true, err
	}
	r.event(st.member, corev1.EventTypeNormal, "MemberParked", "DeletePod", "deleted Pod %s; PVC %s kept for resume", st.pod.Name, v1alpha2.PVCName(st.member.Name))
	st.pod = nil
	return true, nil
}

func (r *Reconciler) ensurePVC(ctx context.Context, st *memberState) (bool, error) {
	want := resources.PVC(st.member)
	if want == nil {
		return false, nil
	}
	got := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err) && st.member.Status.PVCUID != "":
		return r.pvcLost(st, "PVC "+want.Name+" is gone")
	case apierrors.IsNotFound(err):
		if err := r.Client.Create(ctx, want); err != nil {
			return true, ignoreGoingAway(err)
		}
		r.event(st.member, corev1.EventTypeNormal, "PVCCreated", "CreatePVC", "created PVC %s", want.Name)
		return false, nil
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(got, st.member):
		return false, fmt.Errorf("PVC %s exists but is not controlled by member uid %s", got.Name, st.member.UID)
	case st.member.Status.PVCUID != "" && string(got.UID) != st.member.Status.PVCUID:
		return r.pvcLost(st, "PVC "+want.Name+" was replaced by an empty one")
	case !got.DeletionTimestamp.IsZero():
		return r.pvcLost(st, "PVC "+want.Name+" is being deleted")
	}
	st.pvcUID = string(got.UID)
	patch := client.MergeFrom(got.DeepCopy())
	if resources.SyncUserMetadata(got, st.member.Spec.AdditionalMetadata, resources.OwnedLabels(want)) {
		if err := r.Client.Patch(ctx, got, patch); err != nil {
			return false, err
		}
	}
	return false, r.resizePVC(ctx, st, got)
}

// pvcLost: the member's data went with its claim. Its Pod is not started on an empty one (etcd
// would refuse it, or worse, rejoin without the data it acknowledged); the cluster replaces the
// member, or recovers as spec.quorumLoss says when a majority is gone.
func (r *Reconciler) pvcLost(st *memberState, why string) (bool, error) {
	st.dataLost = true
	st.waiting, st.waitingReason = why+": the member's data is lost; waiting for the cluster to replace it", v1alpha2.ReasonDataLost
	return true, nil
}

// waitForRegistration: no Pod before the member is in etcd (the cluster controller records
// spec.initialCluster after MemberAddAsLearner), so a Pod never starts unannounced.
func (r *Reconciler) waitForRegistration(_ context.Context, st *memberState) (bool, error) {
	if st.member.Spec.InitialCluster != "" {
		return false, nil
	}
	st.waiting = "waiting to be added to etcd"
	return true, nil
}

// replaceDeadPod deletes a Pod that will not run again; the next pass creates a fresh one. That
// is a Pod that ended (Succeeded after a graceful node shutdown, or Failed: a bare Pod never
// restarts), or, forcibly, one on a node marked out of service (its kubelet is gone and would
// never confirm the deletion) when the member's volume can follow it to another node: it restarts
// there on the same data, same member ID. With a volume bound to that node the member stays, and
// the cluster controller replaces it after the grace period.
func (r *Reconciler) replaceDeadPod(ctx context.Context, st *memberState) (bool, error) {
	if st.pod == nil || st.dataLost {
		return false, nil
	}
	switch node, moves := r.movesOffDeadNode(ctx, st); {
	case topology.PodTerminal(st.pod):
		if err := r.deletePod(ctx, st.pod); err != nil {
			return true, err
		}
		r.event(st.member, corev1.EventTypeWarning, "PodTerminated", "DeletePod", "Pod %s ended in phase %s; recreating it", st.pod.Name, st.pod.Status.Phase)
	case moves:
		err := r.Client.Delete(ctx, st.pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &st.pod.UID})
		if client.IgnoreNotFound(err) != nil {
			return true, err
		}
		r.event(st.member, corev1.EventTypeWarning, v1alpha2.ReasonPodMovedOffNode, "DeletePod",
			"node %s is marked %s: force-deleted Pod %s so that it restarts on another node with PVC %s",
			node, corev1.TaintNodeOutOfService, st.pod.Name, v1alpha2.PVCName(st.member.Name))
	default:
		return false, nil
	}
	st.pod, st.waiting = nil, "recreating a Pod that cannot run again"
	return true, nil
}

// movesOffDeadNode: the Pod's node is marked out of service and the member's PVC can be used
// elsewhere (its PV is not bound to that node).
func (r *Reconciler) movesOffDeadNode(ctx context.Context, st *memberState) (string, bool) {
	node := st.pod.Spec.NodeName
	if st.node == nil || st.member.Spec.Storage.Medium == v1alpha2.StorageMediumMemory || !topology.StateOf(st.node).OutOfService {
		return node, false
	}
	pv, err := topology.MemberVolume(ctx, r.Client, st.member)
	return node, err == nil && pv != nil && !topology.VolumePinned(pv, node)
}

func (r *Reconciler) ensurePod(ctx context.Context, st *memberState) (bool, error) {
	switch {
	case st.dataLost:
		st.waiting = "tmpfs data lost (its Pod is gone or found its memory volume empty, or its node booted again); waiting for the cluster to replace this member"
		return true, nil
	case st.pod != nil && !st.pod.DeletionTimestamp.IsZero():
		st.waiting = "Pod is terminating"
		return true, nil
	case st.pod != nil:
		return false, nil
	}
	pod := st.desired.DeepCopy()
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if err := r.stampTLSHash(ctx, pod, pod.Annotations); err != nil {
		return true, err
	}
	if err := r.Client.Create(ctx, pod); err != nil {
		return true, ignoreGoingAway(client.IgnoreAlreadyExists(err))
	}
	r.event(st.member, corev1.EventTypeNormal, "PodCreated", "CreatePod", "created Pod %s", pod.Name)
	st.pod = pod
	return false, nil
}

// syncPodMetadata keeps the role=voter label in step with etcd (the PDB selects on it), flips a
// seed's initial-cluster-state annotation to "existing" once the cluster has formed (and
// force-new-cluster to "false" once the rebuild is over), records a revision for a Pod
// without one (see adoptedRevision), brings a legacy one forward (see carryForward), and keeps
// the hash of its TLS Secrets current, which has a real kubelet rewrite their volumes at once
// (see tlshash.go).
func (r *Reconciler) syncPodMetadata(ctx context.Context, st *memberState) (bool, error) {
	if st.pod == nil || !st.pod.DeletionTimestamp.IsZero() {
		return false, nil
	}
	m := st.member
	labels := withOwned(st.pod.Labels, resources.MemberLabels(m.Spec.ClusterName, m.Name, m.Status.IsVoter))
	if !m.Status.IsVoter {
		delete(labels, v1alpha2.LabelRole)
	}
	annotations := withOwned(st.pod.Annotations, resources.StartAnnotations(m, st.cluster.Status.ClusterID != ""))
	switch {
	case podRevision(st.pod) == "":
		annotations[v1alpha2.AnnotationPodRevision] = adoptedRevision(st.pod, st.desired, st.revision)
	case st.carryForward:
		annotations[v1alpha2.AnnotationPodRevision] = st.revision
	}
	if err := r.stampTLSHash(ctx, st.pod, annotations); err != nil {
		return false, err
	}
	// spec.additionalMetadata follows edits in place: metadata is not part of the revision.
	want := metav1.ObjectMeta{Labels: labels, Annotations: annotations}
	resources.SyncUserMetadata(&want, m.Spec.AdditionalMetadata, resources.MemberLabels(m.Spec.ClusterName, m.Name, m.Status.IsVoter))
	if maps.Equal(want.Labels, st.pod.Labels) && maps.Equal(want.Annotations, st.pod.Annotations) {
		return false, nil
	}
	if was, now := st.pod.Annotations[v1alpha2.AnnotationTLSHash], want.Annotations[v1alpha2.AnnotationTLSHash]; was != "" && was != now {
		log.FromContext(ctx).Info("the Secrets the Pod mounts changed; annotating it so that its kubelet rewrites their volumes now",
			"pod", st.pod.Name, "tlsHash", now)
	}
	patch := client.MergeFrom(st.pod.DeepCopy())
	st.pod.Labels, st.pod.Annotations = want.Labels, want.Annotations
	return false, r.Client.Patch(ctx, st.pod, patch)
}

// withOwned is a copy of have with the operator-owned entries of want set.
func withOwned(have, want map[string]string) map[string]string {
	out := maps.Clone(have)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, want)
	return out
}

func (r *Reconciler) deletePod(ctx context.Context, pod *corev1.Pod) error {
	err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})
	return client.IgnoreNotFound(err)
}

// ignoreGoingAway drops the refusal to create objects in a terminating namespace: the member
// itself is about to be deleted, and retrying only fills the log.
func ignoreGoingAway(err error) error {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	return err
}
