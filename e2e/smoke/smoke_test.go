//go:build e2e

// Package smoke proves the local cluster works without the operator, on both kinds of node in
// one cluster (two node agents, two real nodes; each test runs a subtest per kind): real etcd
// Pods form a cluster, volumes behave, node failures evict, partitions are observable, Jobs and
// garbage collection, ClusterIP Services and DNS, the fault helpers; and the host's S3 server.
package smoke

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// parallel is -test.parallel unless the command line sets it: the tests wait on the cluster, not
// the CPU, and the default (GOMAXPROCS, 2 on CI's machine) would queue the per-kind subtests,
// each kind's node stop among them, behind each other.
const parallel = "16"

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", parallel); err != nil {
			panic(err)
		}
	}
	framework.Main(m, clusterOptions)
}

func etcdMemberPod(ns, cluster string, k nodeKind, i int) *corev1.Pod {
	host := func(j int) string { return fmt.Sprintf("etcd-%d.etcd.%s.svc.cluster.local", j, ns) }
	var initial []string
	for j := 0; j < 3; j++ {
		initial = append(initial, fmt.Sprintf("etcd-%d=http://%s:2380", j, host(j)))
	}
	cmd := []string{"etcd", fmt.Sprintf("--name=etcd-%d", i), "--data-dir=/var/lib/etcd/data",
		"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://" + host(i) + ":2379",
		"--listen-peer-urls=http://0.0.0.0:2380", "--initial-advertise-peer-urls=http://" + host(i) + ":2380",
		"--initial-cluster=" + strings.Join(initial, ","), "--initial-cluster-token=smoke", "--initial-cluster-state=new"}
	spec := podSpec(cluster, k, cmd,
		[]corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}},
		[]corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}})
	spec.Hostname, spec.Subdomain = fmt.Sprintf("etcd-%d", i), "etcd"
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("etcd-%d", i), Namespace: ns,
		Labels: map[string]string{"app": "etcd"}}, Spec: spec}
}

// httpVia is an HTTP client that dials inside the cluster network.
func httpVia(c *framework.Cluster) *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: c.DialContext, DisableKeepAlives: true}}
}

func getBody(client *http.Client, url string) (string, error) {
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestEtcdClusterFromPods(t *testing.T) {
	t.Parallel()
	eachKind(t, etcdClusterFromPods)
}

func etcdClusterFromPods(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-etcd-"+k.name)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{"app": "etcd"},
			Ports:    []corev1.ServicePort{{Name: "client", Port: 2379}, {Name: "peer", Port: 2380}}}}
	if _, err := c.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	describePodsOnFailure(t, c, ns, "main", "etcd-0", "etcd-1", "etcd-2")
	for i := 0; i < 3; i++ {
		mustCreatePod(t, c, etcdMemberPod(ns, c.Name, k, i))
	}
	for i := 0; i < 3; i++ {
		waitPodReady(t, c, ns, fmt.Sprintf("etcd-%d", i))
	}
	endpoints := fmt.Sprintf("--endpoints=http://etcd-0.etcd.%[1]s.svc.cluster.local:2379,http://etcd-1.etcd.%[1]s.svc.cluster.local:2379,http://etcd-2.etcd.%[1]s.svc.cluster.local:2379", ns)
	// Usually under a second; the bound leaves room for a member whose first start failed to
	// wait out the kubelet's restart back-off (10 s, 20 s, 40 s…) on a loaded machine.
	framework.WaitFor(t, 3*time.Minute, "3 healthy etcd members", func() (bool, error) {
		out, _, err := c.Exec(ctx, ns, "etcd-0", "main", "etcdctl", endpoints, "endpoint", "health")
		return err == nil && strings.Count(out, "is healthy") == 3, fmt.Errorf("%v: %s", err, out)
	})
	t.Logf("3-member etcd cluster healthy %s after creating its pods", time.Since(start).Round(time.Millisecond))

	if out := exec(t, c, ns, "etcd-0", "etcdctl", "member", "list"); strings.Count(out, "started") != 3 {
		t.Fatalf("member list: want 3 started members, got:\n%s", out)
	}
	exec(t, c, ns, "etcd-1", "etcdctl", "put", "smoke", "hello")
	if out := exec(t, c, ns, "etcd-2", "etcdctl", "get", "--print-value-only", "smoke"); strings.TrimSpace(out) != "hello" {
		t.Fatalf("get from another member = %q, want hello", out)
	}

	// The test process reaches a member by its DNS name through the cluster network.
	client := httpVia(c)
	member2 := fmt.Sprintf("http://etcd-2.etcd.%s.svc.cluster.local:2379/health", ns)
	if body, err := getBody(client, member2); err != nil || !strings.Contains(body, `"health":"true"`) {
		t.Fatalf("GET %s = %q, %v", member2, body, err)
	}

	t.Run("partition and heal", func(t *testing.T) {
		if err := c.Partition(ctx, ns, "etcd-2"); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, 30*time.Second, "etcd-2 unreachable", func() (bool, error) {
			_, err := getBody(client, member2)
			return err != nil, nil
		})
		framework.WaitFor(t, 30*time.Second, "etcd-0 to see etcd-2 unhealthy", func() (bool, error) {
			// endpoint health exits non-zero when any endpoint is unhealthy.
			_, _, err := c.Exec(ctx, ns, "etcd-0", "main", "etcdctl", endpoints, "--command-timeout=2s", "endpoint", "health")
			return err != nil, nil
		})
		if err := c.Heal(ctx, ns, "etcd-2"); err != nil {
			t.Fatal(err)
		}
		framework.WaitFor(t, time.Minute, "3 healthy members after heal", func() (bool, error) {
			out, _, err := c.Exec(ctx, ns, "etcd-0", "main", "etcdctl", endpoints, "endpoint", "health")
			return err == nil && strings.Count(out, "is healthy") == 3, nil
		})
	})
}

// volumePod runs a one-member etcd whose data directory is on a volume at /data: the keys it
// serves after a restart are what the volume kept. It is Ready once etcd answers /health.
func volumePod(ns, cluster string, k nodeKind, name string, vol corev1.VolumeSource) *corev1.Pod {
	spec := podSpec(cluster, k, []string{"etcd", "--data-dir=/data/etcd",
		"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://127.0.0.1:2379"},
		[]corev1.VolumeMount{{Name: "data", MountPath: "/data"}}, []corev1.Volume{{Name: "data", VolumeSource: vol}})
	spec.Containers[0].ReadinessProbe = &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{
		HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(2379)}}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
}

func TestVolumes(t *testing.T) {
	t.Parallel()
	eachKind(t, volumes)
}

func volumes(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-volumes-"+k.name)
	// recreate deletes the pod and creates it again, Ready with its volume mounted.
	recreate := func(t *testing.T, pod *corev1.Pod) string {
		deletePodAndWait(t, c, ns, pod.Name)
		mustCreatePod(t, c, pod)
		waitPodReady(t, c, ns, pod.Name)
		return waitMounted(t, c, ns, pod.Name, "/data")
	}

	t.Run("PVC data survives pod recreation", func(t *testing.T) {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := volumePod(ns, c.Name, k, "pvc-writer", corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}})
		mustCreatePod(t, c, pod)
		waitPodReady(t, c, ns, pod.Name)
		waitMounted(t, c, ns, pod.Name, "/data")
		exec(t, c, ns, pod.Name, "etcdctl", "put", "f", "persisted")
		recreate(t, pod)
		if out := exec(t, c, ns, pod.Name, "etcdctl", "get", "--print-value-only", "f"); strings.TrimSpace(out) != "persisted" {
			t.Fatalf("after recreation key f = %q, want persisted", out)
		}
	})

	t.Run("memory emptyDir is tmpfs and starts empty", func(t *testing.T) {
		pod := volumePod(ns, c.Name, k, "mem", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}})
		mustCreatePod(t, c, pod)
		waitPodReady(t, c, ns, pod.Name)
		if mount := waitMounted(t, c, ns, pod.Name, "/data"); strings.Fields(mount)[2] != "tmpfs" {
			t.Fatalf("/data is not tmpfs: %q", mount)
		}
		exec(t, c, ns, pod.Name, "etcdctl", "put", "f", "volatile")
		if mount := recreate(t, pod); strings.Fields(mount)[2] != "tmpfs" {
			t.Fatalf("/data of the new pod is not tmpfs: %q", mount)
		}
		if out := exec(t, c, ns, pod.Name, "etcdctl", "get", "--print-value-only", "f"); strings.TrimSpace(out) != "" {
			t.Fatalf("tmpfs data survived pod recreation: key f = %q", out)
		}
	})
}

func TestStoppedNodeIsEvicted(t *testing.T) {
	t.Parallel()
	eachKind(t, stoppedNodeIsEvicted)
}

func stoppedNodeIsEvicted(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-node-"+k.name)
	node := localcluster.NodeName(c.Name, k.fault)
	pod := volumePod(ns, c.Name, k, "victim", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})
	pod.Spec.NodeSelector = onNode(c.Name, k.fault)
	mustCreatePod(t, c, pod)
	waitPodReady(t, c, ns, "victim")

	start := time.Now()
	if err := c.StopNode(k.fault); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "node NotReady", func() (bool, error) {
		n, err := c.Kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		return err == nil && !localcluster.NodeReady(n), err
	})
	t.Logf("node NotReady %s after stop", time.Since(start).Round(time.Millisecond))
	// Taint-based eviction after the 30 s toleration: the pod is marked for deletion, or
	// removed at once if the node had reported it terminated before it went down.
	framework.WaitFor(t, 2*time.Minute, "pod evicted", func() (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			t.Logf("pod deleted %s after stop", time.Since(start).Round(time.Millisecond))
			return true, nil
		}
		if err == nil && p.DeletionTimestamp != nil {
			t.Logf("pod marked for deletion %s after stop", time.Since(start).Round(time.Millisecond))
			return true, nil
		}
		return false, err
	})

	if err := c.StartNode(k.fault); err != nil {
		t.Fatal(err)
	}
	// The restarted node finds the pod marked for deletion and finishes it.
	framework.WaitFor(t, time.Minute, "evicted pod removed by the restarted node", func() (bool, error) {
		_, err := c.Kube.CoreV1().Pods(ns).Get(ctx, "victim", metav1.GetOptions{})
		return err != nil, nil
	})
	t.Logf("pod removed %s after stop", time.Since(start).Round(time.Millisecond))
}

func TestJobCompletesAndIsCollected(t *testing.T) {
	t.Parallel()
	eachKind(t, jobCompletesAndIsCollected)
}

func jobCompletesAndIsCollected(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-job-"+k.name)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			Spec: podSpec(c.Name, k, []string{"etcd", "--version"}, nil, nil)}}}
	job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := c.Kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, 2*time.Minute, "job complete", func() (bool, error) {
		j, err := c.Kube.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("status %+v", j.Status)
	})
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=once"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("job pods: %v, %v", pods, err)
	}
	if err := c.Kube.BatchV1().Jobs(ns).Delete(ctx, "once", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, time.Minute, "job pods garbage-collected", func() (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=once"})
		return err == nil && len(pods.Items) == 0, err
	})
}

func TestClusterIPService(t *testing.T) {
	t.Parallel()
	eachKind(t, clusterIPService)
}

func clusterIPService(t *testing.T, c *framework.Cluster, k nodeKind) {
	ctx := context.Background()
	ns := newNamespace(t, c, "smoke-svc-"+k.name)
	server := etcdMemberPod(ns, c.Name, k, 0)
	server.Name, server.Labels = "kv", map[string]string{"app": "kv"}
	server.Spec.Hostname, server.Spec.Subdomain = "", ""
	server.Spec.Containers[0].Command = []string{"etcd", "--data-dir=/var/lib/etcd/data",
		"--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://kv:2379"}
	mustCreatePod(t, c, server)
	mustCreatePod(t, c, volumePod(ns, c.Name, k, "client", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kv", Namespace: ns},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "kv"},
			Ports: []corev1.ServicePort{{Name: "client", Port: 12379, TargetPort: intstr.FromInt32(2379)}}}}
	svc, err := c.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPodReady(t, c, ns, "kv")
	waitPodReady(t, c, ns, "client")

	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "12379") + "/health"
	framework.WaitFor(t, time.Minute, "ClusterIP answers from the cluster netns", func() (bool, error) {
		body, err := getBody(httpVia(c), url)
		return err == nil && strings.Contains(body, `"health":"true"`), err
	})
	framework.WaitFor(t, time.Minute, "ClusterIP answers from a pod (by Service DNS name)", func() (bool, error) {
		out, _, err := c.Exec(ctx, ns, "client", "main", "etcdctl",
			"--endpoints=http://kv."+ns+".svc.cluster.local:12379", "endpoint", "health")
		return err == nil && strings.Contains(out, "is healthy"), fmt.Errorf("%v: %s", err, out)
	})
}

// BenchmarkUpDown measures a full local cluster (3 nodes) up to ready, and down.
func BenchmarkUpDown(b *testing.B) {
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := framework.StartCluster(context.Background(), framework.Options{Name: fmt.Sprintf("bench-%d-%d", os.Getpid()%100000, i)})
		if err != nil {
			b.Fatal(err)
		}
		up := time.Since(start)
		start = time.Now()
		if err := c.Down(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(up.Seconds(), "up-s")
		b.ReportMetric(time.Since(start).Seconds(), "down-s")
		for _, tm := range c.State.Timings {
			b.Logf("  %-45s %s", tm.Phase, tm.Elapsed.Round(time.Millisecond))
		}
	}
}
