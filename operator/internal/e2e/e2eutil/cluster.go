//go:build e2e

// Package e2eutil holds what the operator's end-to-end suites share: the scheme, the CRDs, the
// operator (in the test binary or as its real process), etcd clients dialled into the local
// cluster's network, and the EtcdCluster helpers the scenarios are written in.
package e2eutil

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

// DefaultEtcdVersion is the etcd the suites run unless E2E_ETCD_VERSION names another one of
// the tools cache (hack/versions.env).
const DefaultEtcdVersion = "3.6.16"

// EtcdVersions are the versions the version-matrix scenarios run on, one per supported minor,
// oldest first (the upgrade scenario walks them in order).
var EtcdVersions = []string{"3.5.35", "3.6.16", "3.7.3"}

// EtcdVersion is the version scenarios use by default.
func EtcdVersion() string {
	if v := strings.TrimPrefix(os.Getenv("E2E_ETCD_VERSION"), "v"); v != "" {
		return v
	}
	return DefaultEtcdVersion
}

// Scheme knows client-go's kinds, ours, cert-manager's and Kamaji's.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha2.AddToScheme(s)
	_ = cmapi.AddToScheme(s)
	_ = kamaji.AddToScheme(s)
	return s
}()

// PollInterval is how often conditions are re-checked; it bounds the resolution of timings.
const PollInterval = 250 * time.Millisecond

// InstallCRDs installs the chart's generated CRDs into the cluster.
func InstallCRDs(c *framework.Cluster) error {
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "charts", "etcd-operator", "crds")}, ErrorIfPathMissing: true,
	})
	return err
}

// ClusterDialer dials inside the cluster's netns. Member URLs are <m>.<c>.<ns>.svc, which Pods
// resolve through their search path; from outside the domain is appended explicitly.
func ClusterDialer(c *framework.Cluster) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && strings.HasSuffix(host, ".svc") {
			addr = net.JoinHostPort(host+"."+c.ClusterDomain(), port)
		}
		return c.DialContext(ctx, network, addr)
	}
}

// NewNamespace creates a namespace for one test and deletes it afterwards.
func NewNamespace(t testing.TB, c *framework.Cluster) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// CreateCluster creates an EtcdCluster of the default etcd version.
func CreateCluster(t testing.TB, c *framework.Cluster, ns, name string, replicas int32, mutate ...func(*v1alpha2.EtcdClusterSpec)) {
	t.Helper()
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: EtcdVersion()}}
	for _, m := range mutate {
		m(&ec.Spec)
	}
	if err := c.Client.Create(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
}

// Tmpfs makes a cluster memory-backed.
func Tmpfs(s *v1alpha2.EtcdClusterSpec) {
	s.Storage = v1alpha2.StorageSpec{Medium: v1alpha2.StorageMediumMemory, Size: resource.MustParse("256Mi")}
}

// Version pins a cluster's etcd version.
func Version(v string) func(*v1alpha2.EtcdClusterSpec) {
	return func(s *v1alpha2.EtcdClusterSpec) { s.Version = v }
}

// Scale sets spec.replicas.
func Scale(t testing.TB, c *framework.Cluster, ns, name string, replicas int32) {
	t.Helper()
	ec := GetCluster(t, c, ns, name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = ptr.To(replicas)
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
}

// GetCluster reads an EtcdCluster.
func GetCluster(t testing.TB, c *framework.Cluster, ns, name string) *v1alpha2.EtcdCluster {
	t.Helper()
	ec := &v1alpha2.EtcdCluster{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ec); err != nil {
		t.Fatal(err)
	}
	return ec
}

// Members lists a cluster's EtcdMembers.
func Members(t testing.TB, c *framework.Cluster, ns, name string) []v1alpha2.EtcdMember {
	t.Helper()
	var list v1alpha2.EtcdMemberList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelCluster: name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// Pod returns a Pod or nil when it does not exist.
func Pod(t testing.TB, c *framework.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return nil
	}
	return &pod
}

// Converged reports whether the cluster has n ready members, is healthy and idle, and etcd
// itself lists n voters and nothing else.
func Converged(t testing.TB, c *framework.Cluster, ns, name string, n int) bool {
	t.Helper()
	return convergedWith(t, c, ns, name, n, func() (*clientv3.MemberListResponse, error) { return MemberList(t, c, ns, name) })
}

// convergedWith is Converged with etcd's member list read by list (plaintext or TLS).
func convergedWith(t testing.TB, c *framework.Cluster, ns, name string, n int, list func() (*clientv3.MemberListResponse, error)) bool {
	t.Helper()
	ec := GetCluster(t, c, ns, name)
	avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
	prog := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionProgressing)
	if ec.Status.ReadyMembers != int32(n) || avail == nil || avail.Reason != v1alpha2.ReasonQuorumHealthy ||
		prog == nil || prog.Status != metav1.ConditionFalse || len(Members(t, c, ns, name)) != n {
		return false
	}
	resp, err := list()
	if err != nil {
		return false
	}
	voters := 0
	for _, m := range resp.Members {
		if !m.IsLearner {
			voters++
		}
	}
	return voters == n && len(resp.Members) == n
}

// WaitConverged waits for Converged and returns how long it took.
func WaitConverged(t testing.TB, c *framework.Cluster, ns, name string, n int, timeout time.Duration) time.Duration {
	t.Helper()
	return WaitFor(t, timeout, fmt.Sprintf("cluster %s/%s converged at %d", ns, name, n), func() bool {
		return Converged(t, c, ns, name, n)
	})
}

// WaitNoError polls try until it returns nil; on timeout the failure says its last error.
func WaitNoError(t testing.TB, timeout time.Duration, what string, try func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for err := try(); err != nil; err = try() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for %s; last error: %v", timeout, what, err)
		}
		time.Sleep(PollInterval)
	}
	return time.Since(start)
}

// WaitFor polls cond until it holds and returns how long that took; it fails the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(PollInterval)
	}
	return time.Since(start)
}

// WaitSeen polls cond until it holds and returns how long that took. cond's message says what it
// saw last, so a timeout tells where things stopped.
func WaitSeen(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		ok, last := cond()
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(PollInterval)
	}
}

// DeploymentReady reports whether the Deployment's current ReplicaSet has want ready Pods.
func DeploymentReady(c *framework.Cluster, ns, name string, want int32) (bool, string) {
	var d appsv1.Deployment
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		return false, err.Error()
	}
	st := d.Status
	return st.ObservedGeneration >= d.Generation && st.UpdatedReplicas == want && st.ReadyReplicas == want &&
			st.AvailableReplicas == want,
		fmt.Sprintf("updated %d ready %d available %d of %d", st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, want)
}
