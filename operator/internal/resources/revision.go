package resources

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// PodRevision is the revision of a member Pod as the operator builds it: a hash of its spec.
// It is computed from the built Pod, never from a live one (the API server adds defaults), and
// stored on the Pod (v1alpha2.AnnotationPodRevision) so a changed template is seen as a
// different revision. Metadata is left out: labels and annotations are patched in place.
func PodRevision(pod *corev1.Pod) string {
	b, err := json.Marshal(pod.Spec)
	if err != nil { // a PodSpec always marshals; keep the signature simple
		panic(err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return strconv.FormatUint(h.Sum64(), 36)
}
