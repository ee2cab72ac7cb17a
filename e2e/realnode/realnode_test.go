//go:build e2e

// Package realnode proves the local cluster's real nodes: a kubelet and containerd per node,
// running the images `make images` built, with the Restricted security context the operator
// gives its members; the runtime faults; and a teardown that leaves nothing behind.
package realnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/ociimage"
)

const (
	etcdVersion = "3.6.16"
	ns          = "realnode"
	podName     = "etcd"
)

// The host's values of the sysctls the kubelet writes at start: they must not change.
var hostSysctls = []string{"/proc/sys/vm/overcommit_memory", "/proc/sys/kernel/panic", "/proc/sys/kernel/panic_on_oops"}

// The paths containerd, the CNI plugins and the kubelet use whatever their configuration says: a
// real node must not create them on the host.
var hardCodedPaths = []string{"/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd",
	"/var/lib/kubelet", "/var/lib/containerd", "/opt/containerd", "/var/run/nri", "/etc/cni"}

// TestMain: each test starts its own cluster (the teardown is under test); Main only sets the
// logger controller-runtime otherwise complains about with a stack trace.
func TestMain(m *testing.M) { framework.Main(m, framework.Options{}) }

func TestRealNodesRunRestrictedPodSurviveFaultsAndLeaveNothing(t *testing.T) {
	ctx := context.Background()
	sysctlsBefore := readAll(t, hostSysctls)
	absentBefore := absent(hardCodedPaths)
	// A node agent (node 1) beside two real nodes (2 and 3): Pods of both kinds share the network.
	c, err := framework.StartCluster(ctx, framework.Options{Nodes: 1, RealNodes: 2})
	if err != nil {
		t.Fatalf("local cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Down() })
	t.Logf("cluster %s with real nodes %v up in %s", c.Name, c.RealNodes(), c.UpTime.Round(time.Millisecond))
	if got := readAll(t, hostSysctls); fmt.Sprint(got) != fmt.Sprint(sysctlsBefore) {
		t.Errorf("host sysctls %v changed: %v -> %v", hostSysctls, sysctlsBefore, got)
	}

	createNamespace(t, c)
	pod := startRestrictedEtcd(t, c)
	node, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil || !c.IsRealNode(node) {
		t.Fatalf("pod on %s: not a real node (%v)", pod.Spec.NodeName, err)
	}
	checkExecLogsAndReach(t, c, pod)
	checkReachedFromAgentPod(t, c, pod.Status.PodIP)

	t.Run("container kill by the runtime", func(t *testing.T) {
		if err := c.KillContainer(ctx, ns, podName, "etcd"); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "restarted once and Ready", func(p *corev1.Pod) bool { return restarts(p) == 1 && podReady(p) })
		checkHealth(t, c, p.Status.PodIP)
	})
	t.Run("kubelet stop and start", func(t *testing.T) {
		if err := c.StopKubelet(node); err != nil {
			t.Fatal(err)
		}
		if conn, err := c.DialContext(ctx, "tcp", net.JoinHostPort(localcluster.NodeIP(node), "10250")); err == nil {
			conn.Close()
			t.Fatal("the kubelet's API still answers after StopKubelet")
		}
		checkHealth(t, c, pod.Status.PodIP) // the container outlives its kubelet
		restarted := time.Now()
		if err := c.StartNode(node); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, time.Minute, "the restarted kubelet's heartbeat", func() (bool, error) {
			l, err := c.Kube.CoordinationV1().Leases("kube-node-lease").Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
			return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(restarted), err
		})
		p := waitPod(t, c, "Ready after the kubelet's restart", podReady)
		if restarts(p) != 1 {
			t.Errorf("restarts = %d after a kubelet restart, want 1 (the container re-adopted)", restarts(p))
		}
	})
	t.Run("partition and heal, nsenter into the container", func(t *testing.T) {
		p := waitPod(t, c, "Ready", podReady)
		if err := c.Partition(ctx, ns, podName); err != nil {
			t.Fatal(err)
		}
		if conn, err := dialPod(ctx, c, p.Status.PodIP); err == nil {
			conn.Close()
			t.Fatal("a partitioned Pod still answers")
		}
		// The container still runs: entered by its pid, it answers itself.
		out, _, err := c.ExecNsenter(ctx, ns, podName, "etcd", "/usr/local/bin/etcdctl", "get", "--print-value-only", "k")
		if err != nil || strings.TrimSpace(out) != "from-exec" {
			t.Errorf("etcdctl get through nsenter: %q, %v", out, err)
		}
		if err := c.Heal(ctx, ns, podName); err != nil {
			t.Fatal(err)
		}
		// The gateway's neighbour entry for the Pod failed while the link was down: the first
		// dials after the heal may still get "no route to host" until it is resolved again.
		framework.WaitFor(t, 30*time.Second, "the healed Pod answering", func() (bool, error) {
			err := health(c, p.Status.PodIP)
			return err == nil, err
		})
	})
	t.Run("node stop with its containers", func(t *testing.T) {
		if err := c.StopNode(node); err != nil {
			t.Fatal(err)
		}
		if conn, err := dialPod(ctx, c, pod.Status.PodIP); err == nil {
			conn.Close()
			t.Fatalf("etcd at %s still answers on a stopped node", pod.Status.PodIP)
		}
		if err := c.StartNode(node); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "Ready on the restarted node", func(p *corev1.Pod) bool { return podReady(p) && restarts(p) > 1 })
		checkHealth(t, c, p.Status.PodIP)
	})

	deletePodAndCheckVeths(t, c)
	dir := c.State.Dir
	if err := c.Down(); err != nil {
		t.Fatalf("down: %v", err)
	}
	checkNothingLeft(t, c.Name, dir)
	for _, p := range absentBefore {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
}

// absent lists the paths that do not exist.
func absent(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			out = append(out, p)
		}
	}
	return out
}

func createNamespace(t *testing.T, c *framework.Cluster) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := c.Kube.CoreV1().Namespaces().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "default ServiceAccount", func() (bool, error) {
		_, err := c.Kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// startRestrictedEtcd runs a one-member etcd from the built image with the security context the
// operator gives its members (Restricted), and waits until its readiness probe passes.
func startRestrictedEtcd(t *testing.T, c *framework.Cluster) *corev1.Pod {
	t.Helper()
	uid := int64(ociimage.NonRootID)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns}, Spec: corev1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](2),
		NodeSelector:                  map[string]string{localcluster.RealNodeKindLabel: localcluster.RealNodeKind},
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: &uid, RunAsGroup: &uid,
			FSGroup: &uid, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		Containers: []corev1.Container{{
			Name: "etcd", Image: ociimage.EtcdImage(etcdVersion), ImagePullPolicy: corev1.PullNever,
			Command: []string{"etcd", "--data-dir=/var/lib/etcd/data", "--listen-client-urls=http://0.0.0.0:2379",
				"--advertise-client-urls=http://127.0.0.1:2379"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}}},
		}},
	}}
	if _, err := c.Kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	start := time.Now()
	p := waitPod(t, c, "Ready", podReady)
	t.Logf("pod %s Ready on %s in %s", podName, p.Spec.NodeName, time.Since(start).Round(time.Millisecond))
	return p
}

// checkExecLogsAndReach: kubectl exec (etcdctl in the container, and its uid and data dir's
// group), the container's log, and the Pod IP from the cluster's network.
func checkExecLogsAndReach(t *testing.T, c *framework.Cluster, pod *corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	out := kubectl(t, c, "exec", "-n", ns, podName, "--", "etcdctl", "put", "k", "from-exec")
	if !strings.Contains(out, "OK") {
		t.Errorf("etcdctl put: %q", out)
	}
	if out := kubectl(t, c, "exec", "-n", ns, podName, "--", "etcdctl", "get", "--print-value-only", "k"); strings.TrimSpace(out) != "from-exec" {
		t.Errorf("etcdctl get: %q", out)
	}
	logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(podName, &corev1.PodLogOptions{Container: "etcd"}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "serving client traffic") {
		t.Errorf("logs (%v): want etcd's serving line, got %d bytes", err, len(logs))
	}
	checkHealth(t, c, pod.Status.PodIP)
	// The emptyDir belongs to the fsGroup with the setgid bit, as a kubelet sets it.
	dir, err := c.VolumePath(ctx, ns, podName, "data")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSetgid == 0 {
		t.Errorf("emptyDir %s mode %s: no setgid bit for the fsGroup", dir, fi.Mode())
	}
}

// checkReachedFromAgentPod runs a one-shot Pod on the node agent that asks the member's /health
// on its Pod IP: Pods of both node kinds share the cluster's bridge.
func checkReachedFromAgentPod(t *testing.T, c *framework.Cluster, ip string) {
	t.Helper()
	ctx := context.Background()
	uid := int64(ociimage.NonRootID)
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		NodeSelector:                 map[string]string{corev1.LabelHostname: localcluster.NodeName(c.Name, 1)},
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "wget", Image: "busybox:1.37",
			Command: []string{"wget", "-q", "-O-", "http://" + net.JoinHostPort(ip, "2379") + "/health"},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
	}}
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create client pod: %v", err)
	}
	var phase corev1.PodPhase
	framework.WaitFor(t, time.Minute, "the agent's client Pod to finish", func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err == nil {
			phase = p.Status.Phase
		}
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, err
	})
	logs, err := c.Kube.CoreV1().Pods(ns).GetLogs("client", &corev1.PodLogOptions{}).DoRaw(ctx)
	if phase != corev1.PodSucceeded || !strings.Contains(string(logs), `"health":"true"`) {
		t.Errorf("from the node agent's Pod: %s, logs (%v): %s", phase, err, logs)
	}
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func kubectl(t *testing.T, c *framework.Cluster, args ...string) string {
	t.Helper()
	cmd, err := c.Kubectl(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %v: %v: %s", args, err, out)
	}
	return string(out)
}

func dialPod(ctx context.Context, c *framework.Cluster, ip string) (net.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return c.DialContext(dctx, "tcp", net.JoinHostPort(ip, "2379"))
}

// checkHealth asks the member's /health on its Pod IP from inside the cluster's network.
func checkHealth(t *testing.T, c *framework.Cluster, ip string) {
	t.Helper()
	if err := health(c, ip); err != nil {
		t.Fatal(err)
	}
}

func health(c *framework.Cluster, ip string) error {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: c.DialContext}}
	resp, err := client.Get("http://" + net.JoinHostPort(ip, "2379") + "/health")
	if err != nil {
		return fmt.Errorf("GET /health on %s: %w", ip, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"health":"true"`) {
		return fmt.Errorf("GET /health on %s: %s %s", ip, resp.Status, body)
	}
	return nil
}

// deletePodAndCheckVeths deletes the Pod and waits until no veth is left on the cluster's bridge.
func deletePodAndCheckVeths(t *testing.T, c *framework.Cluster) {
	t.Helper()
	if err := c.Kube.CoreV1().Pods(ns).Delete(context.Background(), podName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "no veth on the bridge after the Pod's deletion", func() (bool, error) {
		out, err := framework.IP(context.Background(), "-n", c.State.Netns, "-o", "link", "show", "master", localcluster.BridgeName)
		if err == nil && strings.TrimSpace(out) != "" {
			err = fmt.Errorf("still on the bridge: %s", out)
		}
		return err == nil, err
	})
}

// checkNothingLeft: no process naming the cluster's folder, no mount below it, no cgroup of its
// nodes in any hierarchy, no netns and no folder.
func checkNothingLeft(t *testing.T, cluster, dir string) {
	t.Helper()
	if pids := processesNaming(dir + "/"); len(pids) > 0 {
		t.Errorf("processes naming %s left: %v", dir, pids)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mountinfo), " "+dir) {
		t.Errorf("mounts below %s left", dir)
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/" + localcluster.NodeName(cluster, 0)[:len(localcluster.NodeName(cluster, 0))-1] + "*")
	more, _ := filepath.Glob("/sys/fs/cgroup/" + localcluster.NodeName(cluster, 0)[:len(localcluster.NodeName(cluster, 0))-1] + "*")
	if left := append(cgroups, more...); len(left) > 0 {
		t.Errorf("cgroups left: %v", left)
	}
	if _, err := os.Stat(filepath.Join("/var/run/netns", localcluster.NetnsName(cluster))); err == nil {
		t.Errorf("netns %s left", localcluster.NetnsName(cluster))
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("state folder %s left", dir)
	}
}

func processesNaming(s string) []string {
	procs, _ := os.ReadDir("/proc")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && p.Name() != fmt.Sprint(os.Getpid()) {
			out = append(out, p.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func readAll(t *testing.T, files []string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSpace(string(b)))
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(p *corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		return s.RestartCount
	}
	return 0
}

func waitPod(t *testing.T, c *framework.Cluster, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	framework.WaitFor(t, 2*time.Minute, "pod "+what, func() (bool, error) {
		var err error
		p, err = c.Kube.CoreV1().Pods(ns).Get(context.Background(), podName, metav1.GetOptions{})
		return err == nil && cond(p), err
	})
	return p
}
