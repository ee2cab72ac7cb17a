//go:build e2e

package integration

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/agent"
)

// addEphemeral appends ec to the pod through the pods/ephemeralcontainers subresource, as
// `kubectl debug` does.
func addEphemeral(t *testing.T, c kubernetes.Interface, pod string, ec corev1.EphemeralContainer) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := c.CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		_, err = c.CoreV1().Pods(namespace).UpdateEphemeralContainers(context.Background(), pod, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ephemeralStatus is the status of the pod's ephemeral container name, if reported.
func ephemeralStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i, s := range p.Status.EphemeralContainerStatuses {
		if s.Name == name {
			return &p.Status.EphemeralContainerStatuses[i]
		}
	}
	return nil
}

func waitEphemeral(t *testing.T, c kubernetes.Interface, pod, name, what string, cond func(corev1.ContainerState) bool) corev1.ContainerStatus {
	t.Helper()
	var got corev1.ContainerStatus
	waitFor(t, name+" "+what, 30*time.Second, func() (bool, string) {
		p, err := c.CoreV1().Pods(namespace).Get(context.Background(), pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := ephemeralStatus(p, name)
		if s == nil {
			return false, fmt.Sprintf("no status yet: %+v", p.Status.EphemeralContainerStatuses)
		}
		got = *s
		return cond(s.State), fmt.Sprintf("%+v", s.State)
	})
	return got
}

func running(s corev1.ContainerState) bool { return s.Running != nil }
func terminatedOK(s corev1.ContainerState) bool {
	return s.Terminated != nil && s.Terminated.ExitCode == 0
}

func debugContainer(name, target string, tty bool) corev1.EphemeralContainer {
	return corev1.EphemeralContainer{TargetContainerName: target, EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: name, Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, TTY: tty,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		VolumeMounts:             []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}}}}
}

// checkEphemeralContainers debugs the running etcd pod with ephemeral containers, driven over
// attach as `kubectl debug -i`/`-it` drives them. podDir is the pod's folder in the agent's state.
func checkEphemeralContainers(t *testing.T, c kubernetes.Interface, a *agent.Agent, podDir string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	etcdPID := readPID(t, filepath.Join(podDir, "etcd.pid"))
	t.Run("a debug container shares the volumes and reaches the target's filesystem", func(t *testing.T) {
		addEphemeral(t, c, "etcd-0", debugContainer("debugger", "etcd", false))
		waitEphemeral(t, c, "etcd-0", "debugger", "running", running)
		script := fmt.Sprintf(`id -u
ls /var/lib/etcd/data
ls /proc/%d/root/var/lib/etcd/data | sed 's/^/target: /'
echo debugged > /var/lib/etcd/debug-was-here
echo done > /dev/termination-log
exit 0
`, etcdPID)
		session := newBufferIO(script)
		if err := a.Provider.AttachToContainer(ctx, namespace, "etcd-0", "debugger", session); err != nil {
			t.Fatalf("attach: %v: %s", err, session.output())
		}
		if out := session.output(); !strings.Contains(out, "65532\nmember\n") || !strings.Contains(out, "target: member") {
			t.Fatalf("attach output %q: not uid 65532 with the data volume and the target's filesystem", out)
		}
		st := waitEphemeral(t, c, "etcd-0", "debugger", "completed", terminatedOK)
		if st.State.Terminated.Message != "done\n" || st.RestartCount != 0 || st.Ready {
			t.Fatalf("debugger status %+v", st)
		}
		if got := inContainer(t, filepath.Join(podDir, "etcd.pid"), "cat", "/var/lib/etcd/debug-was-here"); got != "debugged\n" {
			t.Fatalf("the etcd container sees %q", got)
		}
		logs, err := a.Provider.GetContainerLogs(ctx, namespace, "etcd-0", "debugger", api.ContainerLogOpts{})
		if err != nil {
			t.Fatal(err)
		}
		defer logs.Close()
		if data, _ := io.ReadAll(logs); !strings.Contains(string(data), "target: member") {
			t.Fatalf("kubectl logs of the debug container: %q", data)
		}
	})
	t.Run("a tty debug container is a shell on its own terminal", func(t *testing.T) {
		addEphemeral(t, c, "etcd-0", debugContainer("shell", "etcd", true))
		waitEphemeral(t, c, "etcd-0", "shell", "running", running)
		session := newBufferIO("test -t 0 && echo tty-$((6*7))\nexit\n")
		if err := a.Provider.AttachToContainer(ctx, namespace, "etcd-0", "shell", session); err != nil {
			t.Fatalf("attach: %v: %s", err, session.output())
		}
		if out := session.output(); !strings.Contains(out, "tty-42") {
			t.Fatalf("attach output %q", out)
		}
		waitEphemeral(t, c, "etcd-0", "shell", "completed", terminatedOK)
	})
	t.Run("a pod that completes stops its ephemeral containers", func(t *testing.T) { checkEphemeralStopped(t, c) })
	// Left waiting for input: checkEphemeralKept attaches to it through the next agent.
	addEphemeral(t, c, "etcd-0", debugContainer("waiter", "etcd", false))
	waitEphemeral(t, c, "etcd-0", "waiter", "running", running)
}

// checkEphemeralKept proves, after the etcd container restarted and the agent was replaced
// (a is the new one), that the finished debug container was never run again and kept its
// termination message, and that the running one still takes input: its stdin outlived the
// agent that started it.
func checkEphemeralKept(t *testing.T, c kubernetes.Interface, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := a.Provider.GetPod(ctx, namespace, "etcd-0")
	if err != nil {
		t.Fatal(err)
	}
	st := ephemeralStatus(p, "debugger")
	if st == nil || st.State.Terminated == nil || st.State.Terminated.Message != "done\n" || st.RestartCount != 0 {
		t.Fatalf("the finished debug container after restarts: %+v", st)
	}
	session := newBufferIO("echo still-$((40+2))\nexit 0\n")
	if err := a.Provider.AttachToContainer(ctx, namespace, "etcd-0", "waiter", session); err != nil {
		t.Fatalf("attach through the new agent: %v: %s", err, session.output())
	}
	if out := session.output(); !strings.Contains(out, "still-42") {
		t.Fatalf("attach through the new agent: %q", out)
	}
	// A re-adopted process's exit code is lost (it is not the agent's child): any end will do.
	waitEphemeral(t, c, "etcd-0", "waiter", "ended", func(s corev1.ContainerState) bool { return s.Terminated != nil })
}

// checkEphemeralStopped: the only regular container of a Never pod waits for a file its debug
// container creates, then exits; the pod succeeds, and the still-running debug container is
// stopped with it, as the kubelet kills every container of a terminal pod.
func checkEphemeralStopped(t *testing.T, c kubernetes.Interface) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "waits-for-debug", Namespace: namespace}, Spec: corev1.PodSpec{
		NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), RestartPolicy: corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Volumes:                       []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36",
			Command:      []string{"sh", "-c", "until [ -e /work/go ]; do sleep 0.1; done"},
			VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}}}}
	if _, err := c.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, c, pod.Name, "Running", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	addEphemeral(t, c, pod.Name, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox:1.36", Command: []string{"sh", "-c", "touch /work/go; exec sleep 3600"},
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		VolumeMounts:             []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}}})
	p := waitPod(t, c, pod.Name, "Succeeded with the debug container stopped", 30*time.Second, func(p *corev1.Pod) bool {
		s := ephemeralStatus(p, "debugger")
		return p.Status.Phase == corev1.PodSucceeded && s != nil && s.State.Terminated != nil
	})
	if code := ephemeralStatus(p, "debugger").State.Terminated.ExitCode; code != 128+15 {
		t.Fatalf("the debug container ended with %d, want 143 (SIGTERM)", code)
	}
	deleteAndWaitGone(t, c, pod.Name, 10*time.Second)
}
