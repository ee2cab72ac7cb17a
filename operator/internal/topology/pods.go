package topology

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// PodMayBeLost reports that a tmpfs member's recorded Pod is not the one the cache shows (none,
// or another UID). That means lost data only if the apiserver agrees: confirm with LivePod.
func PodMayBeLost(m *v1alpha2.EtcdMember, cached *corev1.Pod) bool {
	return holdsDataInPod(m) && (cached == nil || string(cached.UID) != m.Status.PodUID)
}

// TmpfsDataLost: a tmpfs member's data went with its Pod: the Pod that held it (the one its
// status records) is gone, was replaced, or ended (a terminal Pod's emptyDir is not reused),
// or its node booted again since (nodeBootID, the node's status.nodeInfo.bootID now, differs
// from the recorded one: a kubelet restarts the same Pod after a reboot, on an empty memory
// volume). Read pod through LivePod when PodMayBeLost says the cache may lag.
func TmpfsDataLost(m *v1alpha2.EtcdMember, pod *corev1.Pod, nodeBootID string) bool {
	return holdsDataInPod(m) && (pod == nil || string(pod.UID) != m.Status.PodUID || PodTerminal(pod) ||
		NodeRebooted(m, nodeBootID) || DataGuardRefused(pod))
}

// DataGuardRefused: the Pod's data guard found its data dir empty although the member had voted
// (the memory volume was lost under the same Pod, whatever the node's boot ID says).
func DataGuardRefused(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.Name != v1alpha2.DataGuardContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode == v1alpha2.DataGuardRefusedExitCode {
				return true
			}
		}
	}
	return false
}

// NodeRebooted: the member's recorded Pod runs on a node whose boot ID changed since it was
// recorded (either unknown says nothing).
func NodeRebooted(m *v1alpha2.EtcdMember, nodeBootID string) bool {
	return m.Status.PodNodeBootID != "" && nodeBootID != "" && nodeBootID != m.Status.PodNodeBootID
}

// holdsDataInPod: a tmpfs member that has run: its data lives and dies with the recorded Pod.
func holdsDataInPod(m *v1alpha2.EtcdMember) bool {
	return m.Spec.Storage.Medium == v1alpha2.StorageMediumMemory && m.Status.PodUID != ""
}

// PodTerminal: the Pod ended (Succeeded after a graceful node shutdown, or Failed); a bare
// Pod never runs again.
func PodTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// LivePod reads a member's Pod from the apiserver (reader should bypass the cache); nil when
// it does not exist.
func LivePod(ctx context.Context, reader client.Reader, m *v1alpha2.EtcdMember) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := reader.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return pod, nil
}

// PodReady reports a Pod's Ready condition; a Pod being deleted is not ready.
func PodReady(pod *corev1.Pod) bool {
	if pod == nil || !pod.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ContainerCannotStart: the container waits on something no retry fixes by itself (its
// configuration names a missing Secret key, its image name is invalid); why says so.
func ContainerCannotStart(pod *corev1.Pod, container string) (why string, stuck bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; cs.Name == container && w != nil && (w.Reason == "CreateContainerConfigError" || w.Reason == "InvalidImageName") {
			return fmt.Sprintf("the agent cannot start: %s: %s", w.Reason, w.Message), true
		}
	}
	return "", false
}

// imagePullReasons are the kubelet's waiting reasons for an image it cannot get.
var imagePullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// ImageNotPulled: a container of the Pod (init containers included) waits for an image the
// kubelet cannot pull (no such tag, a registry refusing); why names the image and the kubelet's
// reason.
func ImageNotPulled(pod *corev1.Pod) (why string, stuck bool) {
	if pod == nil {
		return "", false
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] {
			return fmt.Sprintf("image %s of container %s cannot be pulled (%s: %s)", cs.Image, cs.Name, w.Reason, w.Message), true
		}
	}
	return "", false
}
