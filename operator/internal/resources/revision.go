package resources

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// PodRevision is the revision of a member Pod as the operator builds it: a hash of what its
// etcd runs with. It is computed from the built Pod, never from a live one (the API server adds
// defaults), and stored on the Pod (v1alpha2.AnnotationPodRevision) so a changed template is
// seen as a different revision, which the rollout restarts the member into. Left out:
//   - metadata: labels and annotations are patched in place;
//   - the init containers' image: they run the operator's own agent image (the tmpfs data guard,
//     the peer fixtures) and act before etcd starts, so a new operator build is taken at the
//     member's next start instead of restarting every such member of the fleet (a full resync
//     of a tmpfs member each). Their commands still count: a release that changes what they do
//     to a member's start changes the revision.
func PodRevision(pod *corev1.Pod) string {
	spec := pod.Spec.DeepCopy()
	for i := range spec.InitContainers {
		spec.InitContainers[i].Image = ""
	}
	return hashSpec(spec)
}

// LegacyPodRevision is what operator builds before PodRevision left the init containers' image
// out recorded on live, had they built desired: a hash of the whole spec, with the images live's
// init containers run. A Pod whose recorded revision equals it runs what this build would run,
// but for the agent image its init containers take at the next start: it is current, and its
// annotation is brought forward instead of restarting the member.
func LegacyPodRevision(desired, live *corev1.Pod) string {
	spec := desired.Spec.DeepCopy()
	for i, c := range spec.InitContainers {
		for _, l := range live.Spec.InitContainers {
			if l.Name == c.Name {
				spec.InitContainers[i].Image = l.Image
			}
		}
	}
	return hashSpec(spec)
}

func hashSpec(spec *corev1.PodSpec) string {
	b, err := json.Marshal(spec)
	if err != nil { // a PodSpec always marshals; keep the signature simple
		panic(err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}
