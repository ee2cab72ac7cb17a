package framework

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// IsRealNode reports whether node i is a real node (kubelet + containerd) rather than a node agent.
func (c *Cluster) IsRealNode(i int) bool { return slices.Contains(c.State.RealNodes, i) }

// RealNodes are the indices of the real nodes.
func (c *Cluster) RealNodes() []int { return c.State.RealNodes }

// StopKubelet stops real node i's kubelet only (SIGTERM): its containers keep running, its Node
// turns NotReady after the grace period. StartNode starts it again.
func (c *Cluster) StopKubelet(i int) error { return c.control.StopKubelet(i) }

// onRealNode reports whether the Pod is bound to a real node.
func (c *Cluster) onRealNode(ctx context.Context, namespace, name string) (bool, error) {
	pod, err := c.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return false, err
	}
	return c.IsRealNode(i), nil
}

// Ctr prepares containerd's ctr against real node i's containerd, in the CRI's namespace.
func (c *Cluster) Ctr(ctx context.Context, i int, args ...string) *exec.Cmd {
	base := []string{"--address", localcluster.RealNodeSocket(c.State.Dir, i), "-n", "k8s.io"}
	return exec.CommandContext(ctx, c.State.Ctr, append(base, args...)...)
}

// killRealContainer has the runtime SIGKILL the container's task.
func (c *Cluster) killRealContainer(ctx context.Context, namespace, name, container string) error {
	pod, err := c.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	id, err := containerID(pod, container)
	if err != nil {
		return err
	}
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return err
	}
	if out, err := c.Ctr(ctx, i, "tasks", "kill", "--signal", "SIGKILL", id).CombinedOutput(); err != nil {
		return fmt.Errorf("ctr tasks kill %s: %w: %s", id, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// containerID is the runtime's id of a running container of the Pod.
func containerID(pod *corev1.Pod, container string) (string, error) {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && s.ContainerID != "" {
			_, id, ok := strings.Cut(s.ContainerID, "://")
			if ok {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("pod %s/%s has no running container %q", pod.Namespace, pod.Name, container)
}

// podVolumeDir is the host folder of a Pod's non-PVC volume: the node agent's per-pod folder, or
// on a real node the kubelet's emptyDir folder (a memory-backed one is mounted inside the
// node's mount namespace only: its files are not visible here).
func (c *Cluster) podVolumeDir(pod *corev1.Pod, agentDir, volume string) (string, error) {
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	if !c.IsRealNode(i) {
		return filepath.Join(agentDir, "volumes", volume), nil
	}
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			return "", fmt.Errorf("volume %q of %s/%s is memory-backed on a real node: its tmpfs is mounted in the node's mount namespace only", volume, pod.Namespace, pod.Name)
		}
	}
	return filepath.Join(localcluster.RealNodeKubeletRoot(c.State.Dir, i), "pods", string(pod.UID),
		"volumes", "kubernetes.io~empty-dir", volume), nil
}
