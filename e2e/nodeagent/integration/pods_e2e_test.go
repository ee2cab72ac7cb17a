//go:build e2e

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/agent"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
)

// TestNodeAgent drives one agent through the life of real pods. Steps share the apiserver and the
// agent to keep the test fast; each step states what it proves.
func TestNodeAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node agent e2e test needs root (network and mount namespaces); run it as root")
	}
	cfg, c := startAPIServer(t)
	ctx := context.Background()
	stateDir := t.TempDir()
	pki := newTestPKI(t, nodeIP)
	withTLS := func(o agent.Options) agent.Options {
		o.ListenAddr, o.TLSCert, o.TLSKey, o.ClientCA = nodeIP+":10250", pki.certFile, pki.keyFile, pki.caFile
		return o
	}
	a := startAgent(t, cfg, withTLS(agentOptions(t, stateDir, false)))
	// Registered after envtest's cleanup, so it runs before it: the agent stops before the apiserver.
	t.Cleanup(func() { a.Stop() })
	t.Cleanup(func() { dumpLogsOnFailure(t, stateDir) })

	t.Run("node registers and turns Ready", func(t *testing.T) {
		waitFor(t, "node Ready", 30*time.Second, func() (bool, string) {
			n, err := c.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range n.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					return n.Labels["kubernetes.io/hostname"] == nodeName && n.Status.Addresses[0].Address == nodeIP, "labels"
				}
			}
			return false, "not ready"
		})
		if _, err := c.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{}); err != nil {
			t.Fatalf("node lease: %v", err)
		}
	})

	_, err := c.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd-cfg"},
		Data: map[string][]byte{"greeting": []byte("hello"), "setting": []byte("on")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hostEtcdDirExisted := exists("/var/lib/etcd")
	pod, err := c.CoreV1().Pods(namespace).Create(ctx, etcdPod("etcd-0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podDir := filepath.Join(stateDir, "pods", namespace+"_etcd-0")
	pidFile := filepath.Join(podDir, "etcd.pid")

	t.Run("etcd pod becomes Running and Ready with a reachable pod IP", func(t *testing.T) {
		pod = waitPod(t, c, "etcd-0", "Ready", 60*time.Second, podReady)
		if pod.Status.Phase != corev1.PodRunning || !strings.HasPrefix(pod.Status.PodIP, "10.244.1.") || pod.Status.HostIP != nodeIP {
			t.Fatalf("status: phase %s podIP %s hostIP %s", pod.Status.Phase, pod.Status.PodIP, pod.Status.HostIP)
		}
		if body := httpGet(t, "http://"+pod.Status.PodIP+":2379/health"); !strings.Contains(body, `"health":"true"`) {
			t.Fatalf("/health: %s", body)
		}
		if !network.Exists(netnsOf(pod).Netns) {
			t.Fatalf("pod netns %s missing", netnsOf(pod).Netns)
		}
	})

	t.Run("volumes, files, env and user are in place", func(t *testing.T) {
		checks := map[string]string{
			"cat /etc/podinfo/name":                                       "etcd-0",
			"cat /etc/podinfo/labels":                                     `app="etcd"`,
			"cat /etc/etcd-cfg/setting":                                   "on",
			"cat /var/run/secrets/kubernetes.io/serviceaccount/namespace": namespace,
			"cat /etc/resolv.conf":                                        "search default.svc.cluster.local svc.cluster.local cluster.local",
			"cat /etc/hosts":                                              pod.Status.PodIP + "\tetcd-0.etcd.default.svc.cluster.local\tetcd-0",
			"stat -c %u:%g /var/lib/etcd":                                 "65532:65532",
			"hostname":                                                    "etcd-0",
			"stat -f -c %T /tmp":                                          "tmpfs",
		}
		for cmd, want := range checks {
			if got := inContainer(t, pidFile, strings.Fields(cmd)...); !strings.Contains(got, want) {
				t.Errorf("%s: got %q, want %q", cmd, got, want)
			}
		}
		token := inContainer(t, pidFile, "cat", "/var/run/secrets/kubernetes.io/serviceaccount/token")
		if strings.Count(token, ".") != 2 {
			t.Errorf("token is not a JWT: %q", token)
		}
		environ, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(readFile(t, pidFile)), "environ"))
		if err != nil || !strings.Contains(string(environ), "GREETING=hello") || !strings.Contains(string(environ), "POD_IP="+pod.Status.PodIP) {
			t.Errorf("environment lacks GREETING/POD_IP: %v", err)
		}
		if status := readFile(t, filepath.Join("/proc", strings.TrimSpace(readFile(t, pidFile)), "status")); !strings.Contains(status, "Uid:\t65532") {
			t.Errorf("etcd does not run as 65532")
		}
		if !exists(filepath.Join(podDir, "volumes", "data", "data", "member")) {
			t.Errorf("etcd's data is not in the emptyDir backing folder")
		}
		if !hostEtcdDirExisted {
			hostFileAbsent(t, "/var/lib/etcd")
		}
		if log := readFile(t, filepath.Join(podDir, "etcd.log")); !strings.Contains(log, "serving client traffic") {
			t.Errorf("etcd log lacks its start-up lines")
		}
	})

	t.Run("a Secret update reaches the running container without a restart", func(t *testing.T) {
		checkSecretRefresh(t, c, pidFile, filepath.Join(podDir, "volumes", "cfg"))
	})

	t.Run("logs, exec and port-forward", func(t *testing.T) { checkStreaming(t, a, "etcd-0") })
	t.Run("ephemeral containers", func(t *testing.T) { checkEphemeralContainers(t, c, a, podDir) })
	t.Run("kubelet API over TLS with client certificates", func(t *testing.T) { checkKubeletAPI(t, pki, "etcd-0") })

	t.Run("a SIGKILLed container is restarted and counted", func(t *testing.T) {
		oldPID := readPID(t, pidFile)
		killPID(t, oldPID)
		pod = waitPod(t, c, "etcd-0", "restarted and Ready", 60*time.Second, func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount == 1 && podReady(p)
		})
		last := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated
		if last == nil || last.ExitCode != 137 || last.Reason != "Error" {
			t.Fatalf("lastState: %+v", pod.Status.ContainerStatuses[0].LastTerminationState)
		}
		if readPID(t, pidFile) == oldPID {
			t.Fatal("pid file still names the killed process")
		}
	})

	t.Run("an unknown image reports ErrImagePull", func(t *testing.T) {
		bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad-image", Namespace: namespace}, Spec: corev1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "bad-image", "ErrImagePull", 30*time.Second, func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil &&
				(cs[0].State.Waiting.Reason == "ErrImagePull" || cs[0].State.Waiting.Reason == "ImagePullBackOff")
		})
		if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "nginx:1.27") {
			t.Fatalf("message does not name the image: %q", msg)
		}
		deleteAndWaitGone(t, c, "bad-image", 10*time.Second)
	})

	t.Run("a busybox job with an init container succeeds", func(t *testing.T) {
		job := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: namespace}, Spec: corev1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
			InitContainers: []corev1.Container{{Name: "prepare", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo ready > /scratchpad/flag"},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/scratchpad"}}}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", "grep -q ready /scratchpad/flag && echo done"},
				VolumeMounts: []corev1.VolumeMount{{Name: "work", MountPath: "/scratchpad"}}}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "job", "Succeeded", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
			t.Fatalf("main container: %+v", p.Status.ContainerStatuses[0].State)
		}
		hostFileAbsent(t, "/scratchpad") // a target right under / is made on a private root
		deleteAndWaitGone(t, c, "job", 10*time.Second)
	})

	t.Run("a restarted agent re-adopts the running pod and sweeps a deleted one", func(t *testing.T) {
		orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: namespace}, Spec: corev1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		orphan = waitPod(t, c, "orphan", "Ready", 30*time.Second, podReady)
		orphanPID := readPID(t, filepath.Join(stateDir, "pods", namespace+"_orphan", "main.pid"))
		pid := readPID(t, pidFile)
		a.Stop()
		// Deleted while no agent runs: nobody will hand this pod to the next agent.
		if err := c.CoreV1().Pods(namespace).Delete(ctx, "orphan", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		a = startAgent(t, cfg, withTLS(agentOptions(t, stateDir, true)))
		if exists(fmt.Sprintf("/proc/%d", orphanPID)) || network.Exists(netnsOf(orphan).Netns) {
			t.Fatalf("the deleted pod's process %d or netns survived the agent restart", orphanPID)
		}
		// The API still shows the old status: ask the new agent's provider itself.
		waitFor(t, "the new agent to report etcd-0 Ready", 30*time.Second, func() (bool, string) {
			p, err := a.Provider.GetPod(ctx, namespace, "etcd-0")
			if err != nil {
				return false, err.Error()
			}
			return podReady(p), string(p.Status.Phase)
		})
		checkEphemeralKept(t, c, a)
		if got := readPID(t, pidFile); got != pid {
			t.Fatalf("etcd was started again (pid %d -> %d)", pid, got)
		}
		p, _ := c.CoreV1().Pods(namespace).Get(ctx, "etcd-0", metav1.GetOptions{})
		if p.Status.PodIP != pod.Status.PodIP || p.Status.ContainerStatuses[0].RestartCount != 1 {
			t.Fatalf("after re-adoption: podIP %s restarts %d", p.Status.PodIP, p.Status.ContainerStatuses[0].RestartCount)
		}
	})

	t.Run("a failing liveness probe restarts the container", func(t *testing.T) {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unhealthy", Namespace: namespace}, Spec: corev1.PodSpec{
			NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				LivenessProbe: &corev1.Probe{PeriodSeconds: 1, FailureThreshold: 2, ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/nonexistent"}}}},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}}}}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitPod(t, c, "unhealthy", "restarted by liveness", 30*time.Second, func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount >= 1
		})
		if podReady(got) {
			t.Fatal("pod is Ready although its readiness probe cannot succeed")
		}
		deleteAndWaitGone(t, c, "unhealthy", 10*time.Second)
	})

	t.Run("deletion completes promptly and removes the netns", func(t *testing.T) {
		names := netnsOf(pod)
		pid := readPID(t, pidFile)
		deleteAndWaitGone(t, c, "etcd-0", 10*time.Second) // grace period is 30 s
		// The Pod object goes once the processes are gone; the rest follows right after.
		waitFor(t, "netns, veth and volumes removed", 5*time.Second, func() (bool, string) {
			veth := exec.Command("ip", "link", "show", "dev", names.Veth).Run() == nil
			vols := exists(filepath.Join(podDir, "volumes"))
			if exists(fmt.Sprintf("/proc/%d", pid)) {
				return false, fmt.Sprintf("etcd (pid %d) still runs", pid)
			}
			return !network.Exists(names.Netns) && !veth && !vols,
				fmt.Sprintf("netns %v veth %v volumes %v", network.Exists(names.Netns), veth, vols)
		})
	})
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dumpLogsOnFailure prints every container log of the agent's state dir when the test failed.
func dumpLogsOnFailure(t *testing.T, stateDir string) {
	if !t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(stateDir, "pods", "*", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		t.Logf("==> %s <==\n%s", l, data)
	}
}

// TestStopPodsOnExit proves --stop-pods-on-exit, a machine going down: the pods' processes and
// network namespaces go, the API hears nothing, and the machine's next agent restarts the pods with
// their old addresses, counting the restart.
func TestStopPodsOnExit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node agent e2e test needs root (network and mount namespaces); run it as root")
	}
	cfg, c := startAPIServer(t)
	ctx := context.Background()
	stateDir := t.TempDir()
	opts := agentOptions(t, stateDir, true)
	opts.SweepInterval = 300 * time.Millisecond
	a := startAgent(t, cfg, opts)
	t.Cleanup(func() { a.Stop() })
	sleeper := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sleeper", Namespace: namespace}, Spec: corev1.PodSpec{
		NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), TerminationGracePeriodSeconds: ptr.To[int64](2),
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}}}
	if _, err := c.CoreV1().Pods(namespace).Create(ctx, sleeper, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, c, "sleeper", "Running", 30*time.Second, podReady)
	podDir := filepath.Join(stateDir, "pods", namespace+"_sleeper")
	pid := readPID(t, filepath.Join(podDir, "main.pid"))
	a.Stop()
	if exists(fmt.Sprintf("/proc/%d", pid)) {
		t.Fatalf("pid %d survived the agent's exit", pid)
	}
	if network.Exists(netnsOf(p).Netns) {
		t.Fatalf("netns %s survived the agent's exit", netnsOf(p).Netns)
	}
	got, err := c.CoreV1().Pods(namespace).Get(ctx, "sleeper", metav1.GetOptions{})
	if err != nil || got.Status.Phase != corev1.PodRunning || !podReady(got) {
		t.Fatalf("a machine going down reports nothing; the Pod must keep its status: %v %+v", err, got.Status)
	}

	// The machine comes back: the pod restarts with its old address, counted as a restart.
	a = startAgent(t, cfg, opts)
	waitFor(t, "sleeper restarted after the reboot", 30*time.Second, func() (bool, string) {
		got, err := a.Provider.GetPod(ctx, namespace, "sleeper")
		if err != nil {
			return false, err.Error()
		}
		cs := got.Status.ContainerStatuses
		ok := podReady(got) && len(cs) == 1 && cs[0].RestartCount == 1 && got.Status.PodIP == p.Status.PodIP
		return ok, fmt.Sprintf("ready %v podIP %s statuses %+v", podReady(got), got.Status.PodIP, cs)
	})
	if newPID := readPID(t, filepath.Join(podDir, "main.pid")); newPID == pid {
		t.Fatal("pid file still names the killed process")
	}
	deleteAndWaitGone(t, c, "sleeper", 10*time.Second)
	waitFor(t, "the deleted pod's volumes removed", 10*time.Second, func() (bool, string) {
		return !exists(filepath.Join(podDir, "volumes")), "volumes still there"
	})
}
