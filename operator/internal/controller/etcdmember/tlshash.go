package etcdmember

import (
	"context"
	"errors"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// A renewed certificate reaches a running member through its Secret volume, and a real kubelet
// rewrites that volume only when it syncs the Pod: periodically (syncFrequency, 1 min plus
// jitter), or at once when the Pod object changes. So the member controller stamps each Pod with
// a hash of the Secrets it mounts (v1alpha2.AnnotationTLSHash) and changes it when they change:
// the cluster controller copies a renewal into the active Secrets, their watch event requeues
// every member of the cluster (membersOfSecret), and syncPodMetadata patches the annotation.
//
// Why an annotation is enough, in the kubelet's source (kubernetes v1.37.2):
//   - pkg/kubelet/config/config.go podsDifferSemantically counts an annotation change as an
//     update, which reaches Kubelet.HandlePodUpdates (pkg/kubelet/kubelet.go); that hands the
//     Pod to its pod worker as kubetypes.SyncPodUpdate, and Kubelet.SyncPod calls
//     volumeManager.WaitForAttachAndMount;
//   - WaitForAttachAndMount (pkg/kubelet/volumemanager/volume_manager.go) calls
//     desiredStateOfWorldPopulator.ReprocessPod, so the populator's next loop (every 100 ms)
//     runs processPodVolumes, which calls actualStateOfWorld.MarkRemountRequired: every volume
//     of the Pod whose plugin's RequiresRemount is true (pkg/volume/secret: always) is mounted
//     again by the volume reconciler, and the secret plugin's SetUpAt writes the Secret as the
//     kubelet's watch-based secret manager holds it.
//
// Nothing about the containers changes (their hash covers the container spec only), and the Pod's
// revision (resources.PodRevision) hashes its spec only: no restart, no rollout. The kubelet reads
// the Secret from its own watch, which could in principle lag the operator's; the annotation then
// changed too early, and the Pod's next periodic sync delivers the content as it did before.

// tlsHash decides v1alpha2.AnnotationTLSHash for pod from the content of the Secrets it mounts
// (by name; a Secret not read is absent from secrets). keep is true when a mounted Secret is
// unknown: the Pod's value then stays as it is. A Pod that mounts no Secret has no hash ("").
func tlsHash(pod *corev1.Pod, secrets map[string]map[string][]byte) (hash string, keep bool) {
	names := mountedSecrets(pod)
	if len(names) == 0 {
		return "", false
	}
	h := fnv.New64a()
	for _, name := range names {
		data, ok := secrets[name]
		if !ok {
			return "", true
		}
		writeField(h, []byte(name))
		for _, key := range slices.Sorted(maps.Keys(data)) {
			writeField(h, []byte(key))
			writeField(h, data[key])
		}
	}
	return strconv.FormatUint(h.Sum64(), 36), false
}

// writeField writes b length-prefixed, so that fields cannot run into each other.
func writeField(h io.Writer, b []byte) {
	_, _ = h.Write([]byte(strconv.Itoa(len(b)) + ":"))
	_, _ = h.Write(b)
}

// mountedSecrets are the names of the Secrets pod mounts as volumes, sorted and distinct.
func mountedSecrets(pod *corev1.Pod) []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != "" {
			names = append(names, v.Secret.SecretName)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// stampTLSHash sets (or removes) v1alpha2.AnnotationTLSHash in annotations, pod's annotations
// to be, from the Secrets pod mounts as the cache holds them.
func (r *Reconciler) stampTLSHash(ctx context.Context, pod *corev1.Pod, annotations map[string]string) error {
	secrets := map[string]map[string][]byte{}
	for _, name := range mountedSecrets(pod) {
		s, err := r.TLS.Secret(ctx, pod.Namespace, name)
		var missing *tlsmaterial.MissingSecretError
		switch {
		case errors.As(err, &missing):
			continue
		case err != nil:
			return err
		}
		secrets[name] = s.Data
	}
	switch hash, keep := tlsHash(pod, secrets); {
	case keep:
	case hash == "":
		delete(annotations, v1alpha2.AnnotationTLSHash)
	default:
		annotations[v1alpha2.AnnotationTLSHash] = hash
	}
	return nil
}
