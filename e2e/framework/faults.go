package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// StopNode takes node i (1-based) down like a machine: the agent stops, its pods
// die, heartbeats stop; the controller-manager marks the Node NotReady after 20 s. A real node
// loses its kubelet, every container, containerd and its mounts (SIGKILL: power lost).
func (c *Cluster) StopNode(i int) error { return c.control.StopNode(i) }

// CrashNode SIGKILLs node i's agent (a real node's kubelet) only; pods keep running (a kubelet crash).
func (c *Cluster) CrashNode(i int) error { return c.control.CrashNode(i) }

// ShutdownNode shuts node i (1-based) down gracefully, like the kubelet's GracefulNodeShutdown:
// the agent stops every pod within its shutdown budget (10 s, or the pod's grace period if
// shorter), reports each Failed with reason Terminated and the kubelet's message, reports the
// Node NotReady and exits. Unlike StopNode's pods, these stay terminal: StartNode does not
// restart them, their owner must replace them. Deleting such a Pod completes at once.
func (c *Cluster) ShutdownNode(i int) error { return c.control.ShutdownNode(i) }

// StartNode starts node i's agent again (it re-registers and re-adopts its pods) and
// waits until the Node is Ready. On a real node it starts whatever is stopped: the kubelet after
// StopKubelet or CrashNode, the whole node (containerd, images kept, kubelet) after StopNode.
func (c *Cluster) StartNode(i int) error { return c.control.StartNode(i) }

// NodeIndex is the 1-based index of a Node of this cluster (lc-<name>-node-<i>).
func (c *Cluster) NodeIndex(nodeName string) (int, error) {
	prefix := localcluster.NodeName(c.Name, 0)
	prefix = prefix[:len(prefix)-1]
	i, err := strconv.Atoi(strings.TrimPrefix(nodeName, prefix))
	if err != nil || !strings.HasPrefix(nodeName, prefix) {
		return 0, fmt.Errorf("node %q is not a node of cluster %s", nodeName, c.Name)
	}
	return i, nil
}

// PodDir is the node agent's folder of a pod (pid files, volumes).
func (c *Cluster) PodDir(ctx context.Context, namespace, name string) (string, *corev1.Pod, error) {
	pod, err := c.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", nil, err
	}
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		return "", pod, err
	}
	dir := filepath.Join(localcluster.Layout{Dir: c.State.Dir}.NodeDir(i), "pods", namespace+"_"+name)
	return dir, pod, nil
}

// ContainerPID reads the pid the node agent published for a container (on a real node: the
// runtime's task pid).
func (c *Cluster) ContainerPID(ctx context.Context, namespace, pod, container string) (int, error) {
	if real, err := c.onRealNode(ctx, namespace, pod); err != nil || real {
		if err != nil {
			return 0, err
		}
		return c.realContainerPID(ctx, namespace, pod, container)
	}
	dir, _, err := c.PodDir(ctx, namespace, pod)
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, container+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// KillContainer SIGKILLs a container's process (its node then restarts it per restartPolicy). On a
// real node the runtime kills it (ctr task kill), as an OOM kill or a crash would end it.
func (c *Cluster) KillContainer(ctx context.Context, namespace, pod, container string) error {
	if real, err := c.onRealNode(ctx, namespace, pod); err != nil || real {
		if err != nil {
			return err
		}
		return c.killRealContainer(ctx, namespace, pod, container)
	}
	pid, err := c.ContainerPID(ctx, namespace, pod, container)
	if err != nil {
		return err
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}

// vethOf is the host-side veth the node agent creates for a pod: v<first 12 hex of the UID>.
func vethOf(pod *corev1.Pod) string {
	id := strings.ReplaceAll(string(pod.UID), "-", "")
	if len(id) > 12 {
		id = id[:12]
	}
	return "v" + id
}

// Partition cuts a pod off the network (its veth goes down in the cluster netns).
func (c *Cluster) Partition(ctx context.Context, namespace, name string) error {
	return c.setPodLink(ctx, namespace, name, "down")
}

// Heal undoes Partition.
func (c *Cluster) Heal(ctx context.Context, namespace, name string) error {
	return c.setPodLink(ctx, namespace, name, "up")
}

func (c *Cluster) setPodLink(ctx context.Context, namespace, name, state string) error {
	pod, err := c.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	veth := vethOf(pod)
	if i, err := c.NodeIndex(pod.Spec.NodeName); err == nil && c.IsRealNode(i) {
		if veth, err = c.realPodVeth(ctx, pod); err != nil {
			return err
		}
	}
	out, err := exec.CommandContext(ctx, "ip", "-n", c.State.Netns, "link", "set", veth, state).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip link set %s %s: %w: %s", veth, state, err, out)
	}
	return nil
}

// VolumePath is the host folder backing a pod volume: the PV's hostPath for a
// PVC, otherwise the node agent's per-pod volume folder.
func (c *Cluster) VolumePath(ctx context.Context, namespace, pod, volume string) (string, error) {
	dir, p, err := c.PodDir(ctx, namespace, pod)
	if err != nil {
		return "", err
	}
	for _, v := range p.Spec.Volumes {
		if v.Name != volume {
			continue
		}
		if v.PersistentVolumeClaim == nil {
			return c.podVolumeDir(p, dir, volume)
		}
		pvc, err := c.Kube.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		pv, err := c.Kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if pv.Spec.HostPath == nil {
			return "", fmt.Errorf("PV %s is not a hostPath volume", pv.Name)
		}
		return pv.Spec.HostPath.Path, nil
	}
	return "", fmt.Errorf("pod %s/%s has no volume %q", namespace, pod, volume)
}

// FillVolume writes a file of size bytes into a pod's volume (disk-full tests) and
// returns its path; remove it to free the space. A full tmpfs or disk ends the write early
// with ENOSPC, which is reported as success (the volume is full).
func (c *Cluster) FillVolume(ctx context.Context, namespace, pod, volume string, size int64) (string, error) {
	dir, err := c.VolumePath(ctx, namespace, pod, volume)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "lc-fill")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte{0xA5}, 1<<20)
	for written := int64(0); written < size; {
		n := min(int64(len(chunk)), size-written)
		if _, err := f.Write(chunk[:n]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return path, nil
			}
			return path, err
		}
		written += n
	}
	return path, f.Sync()
}
