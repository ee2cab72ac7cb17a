//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdcluster"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdmember"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// etcdVersion is the etcd the tests run (from the tools cache).
const etcdVersion = "3.6.16"

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha2.AddToScheme(s)
	return s
}()

func TestMain(m *testing.M) {
	ctrl.SetLogger(crzap.New())
	framework.Main(m, framework.Options{Scheme: scheme})
}

var (
	operatorOnce sync.Once
	operatorErr  error
)

// cluster returns the shared local cluster with the CRDs installed and the operator's two
// controllers running in this test binary. Their etcd clients dial into the cluster network.
func cluster(t *testing.T) *framework.Cluster {
	t.Helper()
	c := framework.Shared(t)
	operatorOnce.Do(func() { operatorErr = startOperator(c) })
	if operatorErr != nil {
		t.Fatalf("operator: %v", operatorErr)
	}
	return c
}

func startOperator(c *framework.Cluster) error {
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join(root, "charts", "etcd-operator", "crds")}, ErrorIfPathMissing: true,
	}); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return err
	}
	pool := etcd.NewPool()
	pool.Dial = clusterDialer(c)
	if err := (&etcdcluster.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdcluster-controller"),
		Etcd: pool, MaxConcurrentReconciles: 4}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&etcdmember.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdmember-controller"),
		Etcd: pool, ImageRepository: v1alpha2.DefaultImageRepository, MaxConcurrentReconciles: 4}).SetupWithManager(mgr); err != nil {
		return err
	}
	go func() { _ = mgr.Start(context.Background()) }()
	return nil
}

// clusterDialer dials inside the cluster's netns. Member URLs are <m>.<c>.<ns>.svc, which Pods
// resolve through their search path; from outside the domain is appended explicitly.
func clusterDialer(c *framework.Cluster) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && strings.HasSuffix(host, ".svc") {
			addr = net.JoinHostPort(host+".cluster.local", port)
		}
		return c.DialContext(ctx, network, addr)
	}
}

// etcdClient talks to the cluster's client Service from the test.
func etcdClient(t *testing.T, c *framework.Cluster, ns, name string) *clientv3.Client {
	t.Helper()
	dial := clusterDialer(c)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"http://" + name + "-client." + ns + ".svc:2379"}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return dial(ctx, "tcp", a) })},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func newNamespace(t *testing.T, c *framework.Cluster) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lifecycle-"}}
	if err := c.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.Delete(context.Background(), ns) })
	return ns.Name
}

func createCluster(t *testing.T, c *framework.Cluster, ns, name string, replicas int32, mutate ...func(*v1alpha2.EtcdClusterSpec)) {
	t.Helper()
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: etcdVersion}}
	for _, m := range mutate {
		m(&ec.Spec)
	}
	if err := c.Client.Create(context.Background(), ec); err != nil {
		t.Fatal(err)
	}
}

// tmpfs makes a cluster memory-backed.
func tmpfs(s *v1alpha2.EtcdClusterSpec) {
	s.Storage = v1alpha2.StorageSpec{Medium: v1alpha2.StorageMediumMemory, Size: resource.MustParse("256Mi")}
}

func scale(t *testing.T, c *framework.Cluster, ns, name string, replicas int32) {
	t.Helper()
	ec := getCluster(t, c, ns, name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = ptr.To(replicas)
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
}

func getCluster(t *testing.T, c *framework.Cluster, ns, name string) *v1alpha2.EtcdCluster {
	t.Helper()
	ec := &v1alpha2.EtcdCluster{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ec); err != nil {
		t.Fatal(err)
	}
	return ec
}

func members(t *testing.T, c *framework.Cluster, ns, name string) []v1alpha2.EtcdMember {
	t.Helper()
	var list v1alpha2.EtcdMemberList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelCluster: name}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitConverged waits until the cluster has n ready members, is healthy and idle, and etcd
// itself lists n voters.
func waitConverged(t *testing.T, c *framework.Cluster, ns, name string, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("cluster %s converged at %d", name, n), func() bool {
		ec := getCluster(t, c, ns, name)
		avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
		prog := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionProgressing)
		if ec.Status.ReadyMembers != int32(n) || avail == nil || avail.Reason != v1alpha2.ReasonQuorumHealthy ||
			prog == nil || prog.Status != metav1.ConditionFalse || len(members(t, c, ns, name)) != n {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := etcdClient(t, c, ns, name).MemberList(ctx)
		if err != nil {
			return false
		}
		voters := 0
		for _, m := range list.Members {
			if !m.IsLearner {
				voters++
			}
		}
		return voters == n && len(list.Members) == n
	})
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(time.Second)
	}
}
