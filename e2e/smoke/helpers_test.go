//go:build e2e

package smoke

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

const (
	etcdImage    = "quay.io/coreos/etcd:v3.7.3"
	busyboxImage = "busybox:1.37"
	// The stop-node test owns this node; every other pod stays off it.
	faultNode = 3
)

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

// avoidNode keeps a pod off node i (the one the stop-node test stops).
func avoidNode(clusterName string, i int) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname",
				Operator: corev1.NodeSelectorOpNotIn, Values: []string{localcluster.NodeName(clusterName, i)}}}}}}}}
}

// podSpec is a one-container pod spec with quick termination.
func podSpec(clusterName, image string, command []string, mounts []corev1.VolumeMount, volumes []corev1.Volume) corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		Affinity:                      avoidNode(clusterName, faultNode),
		SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
		Volumes:                       volumes,
		Containers: []corev1.Container{{Name: "main", Image: image, Command: command,
			VolumeMounts: mounts, SecurityContext: restricted()}},
	}
}

// waitPodReady waits until the pod runs with all containers ready.
func waitPodReady(t *testing.T, c *framework.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
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
	return pod
}

// deletePodAndWait deletes a pod and waits until the object is gone.
func deletePodAndWait(t *testing.T, c *framework.Cluster, ns, name string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s: %v", name, err)
	}
	framework.WaitFor(t, time.Minute, "pod "+name+" gone", func() (bool, error) {
		_, err := c.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
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

// waitMounted waits until path is a mount point in the pod's main container. A Ready
// pod should already have its volumes; the wait surfaces how long it takes when not.
func waitMounted(t *testing.T, c *framework.Cluster, ns, pod, path string) {
	t.Helper()
	start := time.Now()
	framework.WaitFor(t, 30*time.Second, path+" mounted in "+pod, func() (bool, error) {
		out, _, err := c.Exec(context.Background(), ns, pod, "main", "sh", "-c", "grep -c ' "+path+" ' /proc/self/mounts")
		return err == nil && strings.TrimSpace(out) != "0", err
	})
	if d := time.Since(start); d > time.Second {
		t.Logf("note: %s appeared in Ready pod %s only after %s", path, pod, d.Round(time.Millisecond))
	}
}

// describePodsOnFailure logs, when t has failed, each named Pod's container states and the last
// lines of its container's log: why a member did not come up.
func describePodsOnFailure(t *testing.T, c *framework.Cluster, ns, container string, pods ...string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, name := range pods {
			dir, pod, err := c.PodDir(context.Background(), ns, name)
			if err != nil {
				t.Logf("pod %s: %v", name, err)
				continue
			}
			for _, cs := range pod.Status.ContainerStatuses {
				t.Logf("pod %s on %s: container %s ready %v, restarts %d, state %+v, last %+v",
					name, pod.Spec.NodeName, cs.Name, cs.Ready, cs.RestartCount, cs.State, cs.LastTerminationState)
			}
			b, _ := os.ReadFile(filepath.Join(dir, container+".log"))
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("pod %s, the last lines of %s's log:\n%s", name, container, strings.Join(lines[max(0, len(lines)-15):], "\n"))
		}
	})
}
