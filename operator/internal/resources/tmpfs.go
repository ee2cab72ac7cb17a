package resources

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// A tmpfs member's data lives in its Pod's memory volume. When the node reboots, the kubelet
// starts the same Pod again on an empty volume, and etcd would rejoin under the member's old ID
// and vote without the writes it acknowledged: two of three such members rebooted at once elect
// a leader that lost them, and the cluster looks healthy. The data guard runs first at each
// start of the Pod (init containers run again after a reboot) and refuses an empty data dir
// once the member has voted, so etcd never starts there. For the same reason a quorum-loss
// rebuild from a tmpfs survivor restarts its etcd container, never its Pod (ForcesInPlace).

// guardsData: the member keeps its data on tmpfs.
func guardsData(m *v1alpha2.EtcdMember) bool {
	return m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory
}

// DataExpected: the member's data dir must hold data at its Pod's next start. A voter whose
// etcd has run has written the log it voted on. A learner has not voted; a joiner starts empty;
// a seed is a voter from the start but has no member ID before its etcd first answers.
func DataExpected(m *v1alpha2.EtcdMember) bool {
	return guardsData(m) && m.Status.IsVoter && m.Status.MemberID != ""
}

// dataGuardAnnotations are the guard's start annotation (tmpfs members only).
func dataGuardAnnotations(m *v1alpha2.EtcdMember) map[string]string {
	if !guardsData(m) {
		return nil
	}
	return map[string]string{v1alpha2.AnnotationDataExpected: strconv.FormatBool(DataExpected(m))}
}

// dataGuardInitContainer checks the data dir with the operator's binary before anything else
// in the Pod touches it.
func dataGuardInitContainer(m *v1alpha2.EtcdMember, opts PodOptions) corev1.Container {
	return corev1.Container{
		Name: v1alpha2.DataGuardContainer, Image: opts.AgentImage,
		Command:         []string{"/manager", snapshot.CommandGuardDataDir, MemberDataDir(m)},
		Env:             []corev1.EnvVar{annotationEnv(snapshot.EnvDataExpected, v1alpha2.AnnotationDataExpected)},
		VolumeMounts:    []corev1.VolumeMount{{Name: "data", MountPath: DataDir, ReadOnly: true}},
		SecurityContext: containerSecurityContext(),
		Resources:       agentResources(),
	}
}

// ForcesInPlace: a quorum-loss rebuild from this member restarts only its etcd container with
// --force-new-cluster (an ephemeral container stops etcd; the kubelet starts it again in the same
// Pod), because a new Pod would start on an empty memory volume.
func ForcesInPlace(m *v1alpha2.EtcdMember) bool { return guardsData(m) }

// ForceNewClusterContainer is the ephemeral container that stops a tmpfs survivor's etcd so that
// it restarts forced; its name carries the member's generation, one per rebuild.
func ForceNewClusterContainer(m *v1alpha2.EtcdMember, agentImage string) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{
		TargetContainerName: containerName,
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: ForceNewClusterContainerName(m), Image: agentImage,
			Command:         []string{"/manager", snapshot.CommandStopEtcd, m.Name},
			SecurityContext: containerSecurityContext(), // no resources: the API refuses them here
		},
	}
}

// ForceNewClusterContainerName names the ephemeral container of the member's current rebuild.
func ForceNewClusterContainerName(m *v1alpha2.EtcdMember) string {
	return fmt.Sprintf("%s-%d", v1alpha2.ForceNewClusterContainer, m.Generation)
}
