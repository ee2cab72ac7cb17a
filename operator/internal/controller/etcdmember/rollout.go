package etcdmember

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// buildDesiredPod builds the Pod the member's current spec asks for and stamps it with its
// revision; a live Pod with another revision is outdated (see restartOutdatedPod).
func (r *Reconciler) buildDesiredPod(_ context.Context, st *memberState) (bool, error) {
	st.desired, st.revision, st.carryForward = r.desiredPod(st.member, st.cluster, st.pod)
	return false, nil
}

// desiredPod is the Pod this build makes for m, stamped with its revision, and whether live
// (nil: no Pod) carries the legacy revision of that same spec (see memberState.carryForward).
func (r *Reconciler) desiredPod(m *v1alpha2.EtcdMember, cluster *v1alpha2.EtcdCluster, live *corev1.Pod) (*corev1.Pod, string, bool) {
	opts := resources.PodOptions{
		ImageRepository: r.ImageRepository, ClusterFormed: cluster.Status.ClusterID != "", AgentImage: r.AgentImage,
	}
	pod := resources.Pod(m, opts)
	steady := opts
	steady.Steady = true
	steadyPod := resources.Pod(m, steady)
	revision := resources.PodRevision(steadyPod)
	have := podRevision(live)
	carry := have != "" && have != revision && have == resources.LegacyPodRevision(steadyPod, live)
	pod.Annotations[v1alpha2.AnnotationPodRevision] = revision
	return pod, revision, carry
}

// Outdated says whether live, m's Pod, runs another template than this build makes for m, so
// that the rollout will restart it. A Pod without a recorded revision counts as what
// syncPodMetadata will record for it (adoptedRevision).
func (r *Reconciler) Outdated(m *v1alpha2.EtcdMember, cluster *v1alpha2.EtcdCluster, live *corev1.Pod) bool {
	desired, revision, carry := r.desiredPod(m, cluster, live)
	have := podRevision(live)
	if have == "" {
		have = adoptedRevision(live, desired, revision)
	}
	return !carry && outdated(have, revision)
}

// liveRevision is the revision the live Pod runs, "" without a Pod: the one it records, or
// this build's for a Pod an older build stamped with the legacy revision of the same spec.
func (st *memberState) liveRevision() string {
	if st.carryForward {
		return st.revision
	}
	return podRevision(st.pod)
}

// restartOutdatedPod deletes a Pod built from an older template once the cluster controller
// granted this member its turn (AnnotationRolloutRevision): restarts are sequenced across the
// cluster there, behind quorum and health gates. The next pass creates the Pod anew on the
// same PVC, with the same member ID.
func (r *Reconciler) restartOutdatedPod(ctx context.Context, st *memberState) (bool, error) {
	pod := st.pod
	if pod == nil || !pod.DeletionTimestamp.IsZero() || !outdated(st.liveRevision(), st.revision) ||
		st.member.Annotations[v1alpha2.AnnotationRolloutRevision] != st.revision {
		return false, nil
	}
	if err := r.deletePod(ctx, pod); err != nil {
		return true, err
	}
	crashpoint.Hit(crashpoint.RolloutPodDeleted)
	r.event(st.member, corev1.EventTypeNormal, v1alpha2.ReasonRollingUpdate, "RestartPod",
		"restarting Pod %s into template revision %s (was %s)", pod.Name, st.revision, pod.Annotations[v1alpha2.AnnotationPodRevision])
	st.pod, st.waiting = nil, "restarting the Pod into the new template"
	return true, nil
}

// restartToForceNewCluster restarts a Pod that runs without --force-new-cluster while the
// member's spec asks for it (a quorum-loss rebuild): etcd reads it at start only. The Pod's
// annotation says what its containers start with; the replacement, built from this same
// member, carries "true". Deciding here, from the member the Pod will be built from, leaves no
// window in which a Pod made from an older copy of the member starts unforced.
func (r *Reconciler) restartToForceNewCluster(ctx context.Context, st *memberState) (bool, error) {
	pod := st.pod
	if pod == nil || !pod.DeletionTimestamp.IsZero() || !st.member.Spec.ForceNewCluster {
		return false, nil
	}
	if resources.ForcesInPlace(st.member) {
		return r.restartEtcdForced(ctx, st)
	}
	if pod.Annotations[v1alpha2.AnnotationForceNewCluster] == "true" {
		return false, nil
	}
	if err := r.deletePod(ctx, pod); err != nil {
		return true, err
	}
	r.event(st.member, corev1.EventTypeWarning, v1alpha2.ReasonQuorumRecovered, "RestartPod",
		"restarting Pod %s with --force-new-cluster: it forms a one-member cluster from its data", pod.Name)
	st.pod, st.waiting = nil, "restarting the Pod with --force-new-cluster"
	return true, nil
}

// outdated: the Pod (recording revision have) was built from another revision. A Pod without the annotation was made by
// an operator that did not record it; syncPodMetadata adopts it as current.
func outdated(have, revision string) bool {
	return have != "" && have != revision
}

// foreignRevision marks a Pod that does not run the current template's TLS material: outdated
// under every revision, so the rollout restarts it.
const foreignRevision = "foreign"

// adoptedRevision is the revision recorded for a Pod that carries none: one made by another
// operator (the public operator, the legacy StatefulSet) or by this one before revisions were
// recorded. When it mounts the Secrets and ConfigMaps the current template mounts, it is
// recorded as current and nothing restarts for it. When it does not (a Pod of the public
// operator mounts the cluster's TLS Secrets themselves, not the operator's active copies and
// trust bundle), it is recorded as outdated: the rollout restarts it onto them one member at a
// time, behind its gates, and until then no step that needs every member to trust a CA counts
// it.
func adoptedRevision(live, desired *corev1.Pod, revision string) string {
	if slices.Equal(mountedSources(live), mountedSources(desired)) {
		return revision
	}
	return foreignRevision
}

// mountedSources are the Secrets and ConfigMaps a Pod mounts, sorted.
func mountedSources(pod *corev1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			out = append(out, "Secret/"+v.Secret.SecretName)
		case v.ConfigMap != nil:
			out = append(out, "ConfigMap/"+v.ConfigMap.Name)
		}
	}
	slices.Sort(out)
	return out
}

// podRevision is the revision a Pod was built from, "" without a Pod.
func podRevision(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return pod.Annotations[v1alpha2.AnnotationPodRevision]
}

// +kubebuilder:rbac:groups="",resources=pods/ephemeralcontainers,verbs=update

// restartEtcdForced restarts a tmpfs survivor's etcd in its Pod, whose memory volume holds the
// data: once the Pod's annotation says "true" (syncPodMetadata sets it; the kubelet resolves
// it when it starts the container again), an ephemeral container of the operator's image stops
// etcd, and the kubelet starts it forced. One ephemeral container per rebuild, named after the
// member's generation: its presence says this rebuild's restart was asked for.
func (r *Reconciler) restartEtcdForced(ctx context.Context, st *memberState) (bool, error) {
	pod, m := st.pod, st.member
	name := resources.ForceNewClusterContainerName(m)
	if pod.Annotations[v1alpha2.AnnotationForceNewCluster] != "true" ||
		slices.ContainsFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == name }) {
		return false, nil
	}
	if r.AgentImage == "" {
		st.waiting, st.waitingReason = "the rebuild restarts this tmpfs survivor's etcd in place with the operator's image, "+
			"and the operator runs without --agent-image", v1alpha2.ReasonAgentImageNotConfigured
		return true, nil
	}
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers,
		resources.ForceNewClusterContainer(m, r.AgentImage))
	if err := r.Client.SubResource("ephemeralcontainers").Update(ctx, pod); err != nil {
		return true, err
	}
	r.event(m, corev1.EventTypeWarning, v1alpha2.ReasonQuorumRecovered, "RestartEtcd",
		"restarting etcd in Pod %s with --force-new-cluster, in place (its data is on the Pod's memory volume): it forms a one-member cluster from its data", pod.Name)
	return false, nil
}
