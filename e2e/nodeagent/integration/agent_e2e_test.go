//go:build e2e

package integration

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/agent"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
)

const (
	nodeName  = "lct-node"
	namespace = "default"
)

func toolsDir(t *testing.T) string {
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "etcd-operator-tools")
}

// startAPIServer boots envtest's kube-apiserver + etcd inside the cluster netns.
func startAPIServer(t *testing.T) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		assets := filepath.Join(toolsDir(t), "envtest-v1.37.2-etcd-v3.7.3")
		if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
			t.Fatalf("KUBEBUILDER_ASSETS is unset and %s has no kube-apiserver: run `make tools` first", assets)
		}
		t.Setenv("KUBEBUILDER_ASSETS", assets)
	}
	env := &envtest.Environment{}
	// The cluster netns has no default route, from which the apiserver would pick its address.
	env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "10.244.0.1")
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	client := kubernetes.NewForConfigOrDie(cfg)
	// No controller-manager here: create the ServiceAccount pods are admitted with.
	_, err = client.CoreV1().ServiceAccounts(namespace).Create(context.Background(),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return cfg, client
}

func agentOptions(t *testing.T, stateDir string, stopPods bool) agent.Options {
	return agent.Options{
		NodeName: nodeName, NodeIP: nodeIP, PodCIDR: "10.244.1.0/24", Bridge: bridge,
		NetnsPrefix: os.Getenv(netnsEnv) + "-p", StateDir: stateDir, ToolsDir: toolsDir(t),
		ClusterDNS: "10.244.0.1", ClusterDomain: "cluster.local", StopPodsOnExit: stopPods,
		VolumeResync: volumeResync,
	}
}

func startAgent(t *testing.T, cfg *rest.Config, o agent.Options) *agent.Agent {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := agent.Start(context.Background(), o, cfg, self, log)
	if err != nil {
		t.Fatalf("agent: %v", err)
	}
	return a
}

// waitFor polls fn until it returns true or the deadline passes.
func waitFor(t *testing.T, what string, timeout time.Duration, fn func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := fn()
		if ok {
			return
		}
		last = state
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s; last state: %s", timeout, what, last)
}

func waitPod(t *testing.T, c kubernetes.Interface, name, what string, timeout time.Duration, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, name+" "+what, timeout, func() (bool, string) {
		p, err := c.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), fmt.Sprintf("phase=%s containers=%+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return pod
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// inContainer runs a command in the container's mount namespace, found through its pid file.
func inContainer(t *testing.T, pidFile string, command ...string) string {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid := strings.TrimSpace(string(data))
	out, err := exec.Command("nsenter", append([]string{"-t", pid, "-m", "-n", "-u", "--"}, command...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("nsenter %s: %v: %s", strings.Join(command, " "), err, out)
	}
	return string(out)
}

func readPID(t *testing.T, pidFile string) int {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func etcdPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "etcd"}},
		Spec: corev1.PodSpec{
			NodeName: nodeName, Hostname: name, Subdomain: "etcd", ServiceAccountName: "default",
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
				FSGroup: ptr.To[int64](65532), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "etcd-cfg", DefaultMode: ptr.To[int32](0o400)}}},
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
					{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}}}}}},
			},
			Containers: []corev1.Container{{
				Name: "etcd", Image: "quay.io/coreos/etcd:v3.7.3",
				Command: []string{"etcd", "--name=$(POD_NAME)", "--data-dir=/var/lib/etcd/data",
					"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://$(POD_IP):2379",
					"--listen-peer-urls=http://$(POD_IP):2380", "--initial-advertise-peer-urls=http://$(POD_IP):2380",
					"--initial-cluster=$(POD_NAME)=http://$(POD_IP):2380"},
				Env: []corev1.EnvVar{
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "etcd-cfg"}, Key: "greeting"}}},
				},
				Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "data", MountPath: "/var/lib/etcd"},
					{Name: "cfg", MountPath: "/etc/etcd-cfg", ReadOnly: true},
					{Name: "podinfo", MountPath: "/etc/podinfo"},
					{Name: "token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
				},
				ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("client")}}},
				LivenessProbe: &corev1.Probe{PeriodSeconds: 2, FailureThreshold: 3, ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"etcdctl", "--endpoints=http://127.0.0.1:2379", "endpoint", "health"}}}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// hostFileAbsent fails if path exists on the host (the agent must not create mount targets there).
func hostFileAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		t.Errorf("%s exists on the host: a mount target was created outside the pod", path)
	}
}

func deleteAndWaitGone(t *testing.T, c kubernetes.Interface, name string, within time.Duration) {
	t.Helper()
	start := time.Now()
	if err := c.CoreV1().Pods(namespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, name+" to be removed", within, func() (bool, string) {
		_, err := c.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	t.Logf("pod %s removed %s after the delete call", name, time.Since(start).Round(time.Millisecond))
}

func netnsOf(p *corev1.Pod) network.Names {
	return network.NamesFor(os.Getenv(netnsEnv)+"-p", string(p.UID))
}

func killPID(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}
