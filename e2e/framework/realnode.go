package framework

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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

// realContainerPID is the pid of the container's task, from the runtime.
func (c *Cluster) realContainerPID(ctx context.Context, namespace, name, container string) (int, error) {
	pod, err := c.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	id, err := containerID(pod, container)
	if err != nil {
		return 0, err
	}
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return 0, err
	}
	out, err := c.Ctr(ctx, i, "tasks", "ls").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ctr tasks ls: %w: %s", err, strings.TrimSpace(string(out)))
	}
	for _, line := range strings.Split(string(out), "\n") { // TASK PID STATUS
		if f := strings.Fields(line); len(f) == 3 && f[0] == id && f[2] == "RUNNING" {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("container %s of %s/%s has no running task on node %d", container, namespace, name, i)
}

// realPodVeth is the cluster-side veth of a Pod on a real node (the CNI bridge plugin names it
// at random): the peer of the Pod's eth0, found by its interface index.
func (c *Cluster) realPodVeth(ctx context.Context, pod *corev1.Pod) (string, error) {
	if len(pod.Spec.Containers) == 0 {
		return "", fmt.Errorf("pod %s/%s has no container", pod.Namespace, pod.Name)
	}
	pid, err := c.realContainerPID(ctx, pod.Namespace, pod.Name, pod.Spec.Containers[0].Name)
	if err != nil {
		return "", err
	}
	// "2: eth0@if12: <...>": 12 is the peer's index in the cluster netns.
	out, err := Stdout(exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-n", "ip", "-o", "link", "show", "eth0"))
	if err != nil {
		return "", fmt.Errorf("eth0 of %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 {
		return "", fmt.Errorf("eth0 of %s/%s: unexpected %q", pod.Namespace, pod.Name, out)
	}
	_, peer, ok := strings.Cut(fields[1], "@if")
	if !ok {
		return "", fmt.Errorf("eth0 of %s/%s has no peer: %s", pod.Namespace, pod.Name, out)
	}
	links, err := IP(ctx, "-n", c.State.Netns, "-o", "link", "show")
	if err != nil {
		return "", fmt.Errorf("links of %s: %w", c.State.Netns, err)
	}
	for _, line := range strings.Split(links, "\n") { // "12: vethab12cd34@if2: <...>"
		if f := strings.Fields(line); len(f) > 1 && f[0] == strings.TrimSuffix(peer, ":")+":" {
			name, _, _ := strings.Cut(f[1], "@")
			return name, nil
		}
	}
	return "", fmt.Errorf("no link with index %s in %s for %s/%s", peer, c.State.Netns, pod.Namespace, pod.Name)
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
// on a real node the kubelet's emptyDir folder. A memory-backed one is a tmpfs mounted inside the
// node's mount namespace only, so its folder is reached through the root of a process in that
// namespace (/proc/<containerd's pid>/root/...): valid while the node's containerd runs.
func (c *Cluster) podVolumeDir(pod *corev1.Pod, agentDir, volume string) (string, error) {
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	if !c.IsRealNode(i) {
		return filepath.Join(agentDir, "volumes", volume), nil
	}
	dir := filepath.Join(localcluster.RealNodeKubeletRoot(c.State.Dir, i), "pods", string(pod.UID),
		"volumes", "kubernetes.io~empty-dir", volume)
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume && v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory {
			pid, err := c.realNodeContainerdPID(i)
			if err != nil {
				return "", fmt.Errorf("volume %q of %s/%s is a tmpfs inside node %d's mount namespace: %w", volume, pod.Namespace, pod.Name, i, err)
			}
			return filepath.Join("/proc", strconv.Itoa(pid), "root", dir), nil
		}
	}
	return dir, nil
}

// realNodeContainerdPID finds real node i's containerd (its arguments name the node's socket's
// folder) among the host's processes: it runs in the node's mount namespace.
func (c *Cluster) realNodeContainerdPID(i int) (int, error) {
	nodeDir := localcluster.Layout{Dir: c.State.Dir}.NodeDir(i) + "/"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(b), "\x00")
		if filepath.Base(args[0]) == "containerd" && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, nodeDir) }) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no containerd of node %d running", i)
}
