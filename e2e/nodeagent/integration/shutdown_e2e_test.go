//go:build e2e

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
)

// TestGracefulNodeShutdown proves the kubelet-style graceful node shutdown: a restartPolicy
// Always pod is stopped and reported Failed/Terminated with the kubelet's message, the Node
// NotReady; the node's next agent does not restart it, and deleting it completes and removes
// what the pod left on the node at once (not at the next periodic sweep, 30 s here).
func TestGracefulNodeShutdown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node agent e2e test needs root (network and mount namespaces); run it as root")
	}
	cfg, c := startAPIServer(t)
	ctx := context.Background()
	stateDir := t.TempDir()
	opts := agentOptions(t, stateDir, true) // as the harness runs it
	a := startAgent(t, cfg, opts)
	t.Cleanup(func() { a.Stop() })
	t.Cleanup(func() { dumpLogsOnFailure(t, stateDir) })
	if _, err := c.CoreV1().Pods(namespace).Create(ctx, sleeperPod("survivor"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := waitPod(t, c, "survivor", "Ready", 30*time.Second, podReady)
	podDir := filepath.Join(stateDir, "pods", namespace+"_survivor")
	pid := readPID(t, filepath.Join(podDir, "main.pid"))

	start := time.Now()
	if err := a.ShutdownNode(ctx); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	t.Logf("graceful shutdown took %s", time.Since(start).Round(time.Millisecond))
	got, err := c.CoreV1().Pods(namespace).Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assertShutDown(t, got)
	if exists(fmt.Sprintf("/proc/%d", pid)) || network.Exists(netnsOf(running).Netns) {
		t.Fatalf("the pod's process %d or netns survived the shutdown", pid)
	}
	assertNodeShuttingDown(t, c, nodeName)

	// The machine comes back. A pod created now runs, so the new agent has gone through the pods
	// it was handed; the terminal one still does not run.
	a = startAgent(t, cfg, opts)
	if _, err := c.CoreV1().Pods(namespace).Create(ctx, sleeperPod("witness"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, "witness", "Ready", 30*time.Second, podReady)
	if got, err = c.CoreV1().Pods(namespace).Get(ctx, "survivor", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	assertShutDown(t, got)
	if exists(filepath.Join(podDir, "main.pid")) {
		t.Fatal("the terminal pod was started again after the node came back")
	}
	if local, err := a.Provider.GetPod(ctx, namespace, "survivor"); err != nil || local.Status.Phase != corev1.PodFailed {
		t.Fatalf("the new agent must hold the terminal pod as Failed (for its deletion): %v %+v", err, local)
	}

	deleteAndWaitGone(t, c, "survivor", 10*time.Second)
	waitFor(t, "the deleted pod's volumes and state removed", 10*time.Second, func() (bool, string) {
		return !exists(filepath.Join(podDir, "volumes")) && !exists(filepath.Join(podDir, "state.json")), "volumes or state.json still there"
	})
}

// assertShutDown checks the status the kubelet reports for a pod killed by a node shutdown.
func assertShutDown(t *testing.T, p *corev1.Pod) {
	t.Helper()
	st := p.Status
	if st.Phase != corev1.PodFailed || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Fatalf("pod %s: phase %s reason %q message %q", p.Name, st.Phase, st.Reason, st.Message)
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil || st.ContainerStatuses[0].Ready {
		t.Fatalf("pod %s: container not terminated: %+v", p.Name, st.ContainerStatuses)
	}
	if podReady(p) {
		t.Fatalf("pod %s is still Ready", p.Name)
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonTerminationByKubelet {
			return
		}
	}
	t.Fatalf("pod %s lacks the DisruptionTarget condition: %+v", p.Name, st.Conditions)
}

// assertNodeShuttingDown checks the Ready condition the kubelet reports while it shuts down.
func assertNodeShuttingDown(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	n, err := c.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionFalse || c.Message != "node is shutting down" {
				t.Fatalf("node Ready condition after the shutdown: %+v", c)
			}
			return
		}
	}
	t.Fatal("node has no Ready condition")
}

// sleeperPod runs until it is stopped; restartPolicy Always, as a member Pod.
func sleeperPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: corev1.PodSpec{
		NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), RestartPolicy: corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		Volumes:                       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
}
