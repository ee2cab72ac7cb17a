//go:build e2e

package smoke

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/ociimage"
)

// etcdImage runs every Pod of the suite on both node kinds: a real node runs only the images
// `make images` built (the operator's, etcd's, pause), and a node agent maps this one to the tools
// cache's etcd binaries. The image has no shell: etcd is the long-running process, etcdctl the
// command run in it, and what the tests look at inside a container they read from the host
// through its process (/proc/<pid>).
var etcdImage = ociimage.EtcdImage("3.7.3")

// nodeKind is one kind of node the suite proves the local cluster on. Its subtests pin their Pods
// to its work node; the stop-node test stops its fault node, which nothing else uses.
type nodeKind struct {
	name        string // the subtest's name
	real        bool
	work, fault int // node indices
}

// The cluster: node agents 1 and 2, real nodes 3 and 4 (real nodes are numbered after the agents).
var (
	clusterOptions = framework.Options{Nodes: 2, RealNodes: 2}
	kinds          = []nodeKind{{name: "agent", work: 1, fault: 2}, {name: "real", real: true, work: 3, fault: 4}}
)

// eachKind runs test as a parallel subtest per node kind, on the shared cluster, after checking
// that the kind's nodes are what it says.
func eachKind(t *testing.T, test func(t *testing.T, c *framework.Cluster, k nodeKind)) {
	t.Helper()
	c := framework.Shared(t)
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			for _, i := range []int{k.work, k.fault} {
				if c.IsRealNode(i) != k.real {
					t.Fatalf("node %d: real node = %v, the %s kind wants %v", i, c.IsRealNode(i), k.name, k.real)
				}
			}
			test(t, c, k)
		})
	}
}

// newNamespace creates a namespace for one test and deletes it afterwards.
func newNamespace(t *testing.T, c *framework.Cluster, name string) string {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	// Pods are refused until the namespace's default ServiceAccount exists.
	framework.WaitFor(t, time.Minute, "default ServiceAccount in "+name, func() (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	return name
}

// restricted is a container security context that meets the Restricted Pod Security Standard.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](1000),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// onNode pins a Pod to node i of the cluster.
func onNode(clusterName string, i int) map[string]string {
	return map[string]string{corev1.LabelHostname: localcluster.NodeName(clusterName, i)}
}

// podSpec is a one-container pod spec on the kind's work node, with quick termination.
func podSpec(clusterName string, k nodeKind, command []string, mounts []corev1.VolumeMount, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		NodeSelector:                  onNode(clusterName, k.work),
		SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
		Volumes:                       volumes,
		Containers: []corev1.Container{{Name: "main", Image: etcdImage, Command: command,
			VolumeMounts: mounts, SecurityContext: restricted()}},
	}
}

// waitPodReady waits until the pod runs with all containers ready.
func waitPodReady(t *testing.T, c *framework.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	start := time.Now()
	framework.WaitFor(t, 2*time.Minute, "pod "+ns+"/"+name+" Ready", func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("phase %s, statuses %v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	t.Logf("pod %s Ready on %s after %s", name, pod.Spec.NodeName, time.Since(start).Round(time.Millisecond))
	return pod
}

// deletePodAndWait deletes a pod and waits until the object is gone.
func deletePodAndWait(t *testing.T, c *framework.Cluster, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	start := time.Now()
	framework.WaitFor(t, time.Minute, "pod "+name+" gone", func() (bool, error) {
		_, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	t.Logf("pod %s gone %s after its deletion", name, time.Since(start).Round(time.Millisecond))
}

func mustCreatePod(t *testing.T, c *framework.Cluster, pod *corev1.Pod) {
	t.Helper()
	if _, err := c.Kube.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
}

// exec runs a command in the pod's main container and fails the test on error.
func exec(t *testing.T, c *framework.Cluster, ns, pod string, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, errOut, err := c.Exec(ctx, ns, pod, "main", cmd...)
	if err != nil {
		t.Fatalf("exec %v in %s/%s: %v (stderr %q)", cmd, ns, pod, err, errOut)
	}
	return out
}

// mountOf is the line of the main container's mount table (/proc/<its pid>/mounts, read from the
// host) whose mount point is path, or "" when path is not a mount point.
func mountOf(ctx context.Context, c *framework.Cluster, ns, pod, path string) (string, error) {
	pid, err := c.ContainerPID(ctx, ns, pod, "main")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mounts", pid))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") { // "<source> <mount point> <type> <options> 0 0"
		if f := strings.Fields(line); len(f) > 2 && f[1] == path {
			return line, nil
		}
	}
	return "", nil
}

// waitMounted waits until path is a mount point in the pod's main container and returns its
// line of the mount table. A Ready pod should already have its volumes; the wait surfaces how
// long it takes when not.
func waitMounted(t *testing.T, c *framework.Cluster, ns, pod, path string) string {
	t.Helper()
	start := time.Now()
	var mount string
	framework.WaitFor(t, 30*time.Second, path+" mounted in "+pod, func() (bool, error) {
		var err error
		mount, err = mountOf(context.Background(), c, ns, pod, path)
		return mount != "", err
	})
	if d := time.Since(start); d > time.Second {
		t.Logf("note: %s appeared in Ready pod %s only after %s", path, pod, d.Round(time.Millisecond))
	}
	return mount
}

// describePodsOnFailure logs, when t has failed, each named Pod's container states and the last
// lines of its container's log: why a member did not come up.
func describePodsOnFailure(t *testing.T, c *framework.Cluster, ns, container string, pods ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		for _, name := range pods {
			pod, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Logf("pod %s: %v", name, err)
				continue
			}
			for _, cs := range pod.Status.ContainerStatuses {
				t.Logf("pod %s on %s: container %s ready %v, restarts %d, state %+v, last %+v",
					name, pod.Spec.NodeName, cs.Name, cs.Ready, cs.RestartCount, cs.State, cs.LastTerminationState)
			}
			logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container, TailLines: ptr.To[int64](15)}).DoRaw(ctx)
			t.Logf("pod %s, the last lines of %s's log (%v):\n%s", name, container, err, logs)
		}
	})
}
