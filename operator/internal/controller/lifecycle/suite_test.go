package lifecycle

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdbackupschedule"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdcluster"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcddefrag"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdmember"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdrestore"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdsnapshot"
	"github.com/cozystack/etcd-operator/operator/internal/etcd/etcdtest"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

var (
	env        *testenv.Env
	k8s        client.Client
	fakeEtcd   *etcdtest.FakeFactory
	clusterRec *etcdcluster.Reconciler
	memberRec  *etcdmember.Reconciler
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	k8s = env.Client
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := startManager(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// agentImage is the operator image the controllers run snapshot and restore agents with.
const agentImage = "registry.local/etcd-operator:test"

func startManager(ctx context.Context) error {
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapLevel())))
	utilruntime.PanicHandlers = append(utilruntime.PanicHandlers, recordedPanics.record)
	if err := cmapi.AddToScheme(env.Scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: tlsmaterial.CacheByObject()},
	})
	if err != nil {
		return err
	}
	tlsSource := tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	fakeEtcd = etcdtest.NewFakeFactory()
	access := etcdaccess.New(fakeEtcd, tlsSource, mgr.GetClient())
	fakeEtcd.Alive = podServing
	fakeEtcd.Refuses = podRefuses
	clusterRec = &etcdcluster.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdcluster-controller"),
		Etcd: access, MaxConcurrentReconciles: 2, TLS: tlsSource}
	memberRec = &etcdmember.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdmember-controller"),
		Etcd: access, ImageRepository: "quay.io/coreos/etcd", AgentImage: agentImage, MaxConcurrentReconciles: 2, TLS: tlsSource}
	for _, r := range []interface{ SetupWithManager(ctrl.Manager) error }{
		clusterRec, memberRec,
		&etcdsnapshot.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdsnapshot-controller"), AgentImage: agentImage, TLS: tlsSource},
		&etcdbackupschedule.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdbackupschedule-controller")},
		&etcdrestore.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdrestore-controller"), TLS: tlsSource, AgentImage: agentImage},
		&etcddefrag.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcddefrag-controller"), Etcd: access},
	} {
		if err := r.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("cache did not sync")
	}
	return nil
}

// zapLevel is quiet by default; TEST_VERBOSE=1 shows the controllers' logs.
func zapLevel() zapcore.Level {
	if os.Getenv("TEST_VERBOSE") != "" {
		return -1
	}
	return zapcore.DPanicLevel // controllers' error logs (e.g. at shutdown) would drown the test output
}

// newNamespace gives each test its own namespace.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "lifecycle-"}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func newCluster(t *testing.T, ns, name string, replicas int32) *v1alpha2.EtcdCluster {
	t.Helper()
	return createCluster(t, ns, name, v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.16"})
}

// newTmpfsCluster is newCluster with its members' data on 64Mi memory volumes.
func newTmpfsCluster(t *testing.T, ns, name string, replicas int32) *v1alpha2.EtcdCluster {
	t.Helper()
	return createCluster(t, ns, name, v1alpha2.EtcdClusterSpec{Replicas: ptr.To(replicas), Version: "3.6.16",
		Storage: v1alpha2.StorageSpec{Medium: v1alpha2.StorageMediumMemory, Size: resource.MustParse("64Mi")}})
}

func createCluster(t *testing.T, ns, name string, spec v1alpha2.EtcdClusterSpec) *v1alpha2.EtcdCluster {
	t.Helper()
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond with a deadline, playing kubelet on every try: envtest runs no kubelet,
// so the test marks created Pods Running and Ready the way a node would.
func waitFor(t *testing.T, ns, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, dump(ns))
		}
		markPodsReady(t, ns)
		time.Sleep(100 * time.Millisecond)
	}
}

// waitWithoutKubelet polls cond like waitFor but leaves Pods as they are.
func waitWithoutKubelet(t *testing.T, ns, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s\n%s", what, dump(ns))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func markPodsReady(t *testing.T, ns string) {
	t.Helper()
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if (p.Status.Phase != "" && p.Status.Phase != corev1.PodPending) || !p.DeletionTimestamp.IsZero() ||
			p.Labels[v1alpha2.LabelAppComponent] == v1alpha2.ComponentSnapshotAgent || restoresFirst(p) {
			continue // already started, ended, or going away; agents and restores are played by their tests
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Ready: true, Image: p.Spec.Containers[0].Image}}
		if err := k8s.Status().Update(context.Background(), p); err != nil && !isConflictOrGone(err) {
			t.Fatal(err)
		}
	}
}

// restoresFirst: the Pod restores a snapshot before etcd starts (restore tests play that part).
func restoresFirst(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == v1alpha2.RestoreContainer })
}

// podServing is the fake etcd's view of a member process: its Pod runs and is Ready.
func podServing(name string) bool {
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.MatchingFields{"metadata.name": name}); err != nil {
		return false
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					return true
				}
			}
		}
	}
	return false
}

// podRefuses is the fake etcd's view of a member's client listener: its Pod's
// --listen-client-urls lacks the scheme the client dials (no Pod: nothing to say).
func podRefuses(name string, tls bool) bool {
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.MatchingFields{"metadata.name": name}); err != nil {
		return false
	}
	want := "http://"
	if tls {
		want = "https://"
	}
	for _, p := range pods.Items {
		if listen := listenClientURLs(&p); p.DeletionTimestamp.IsZero() && listen != "" {
			return !strings.Contains(listen, want)
		}
	}
	return false
}

// listenClientURLs is the value of a member Pod's --listen-client-urls.
func listenClientURLs(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		for _, a := range c.Command {
			if v, ok := strings.CutPrefix(a, "--listen-client-urls="); ok {
				return v
			}
		}
	}
	return ""
}

// dump describes a namespace's clusters and members for a failed wait.
func dump(ns string) string {
	var b strings.Builder
	var cs v1alpha2.EtcdClusterList
	_ = k8s.List(context.Background(), &cs, client.InNamespace(ns))
	for _, c := range cs.Items {
		fmt.Fprintf(&b, "cluster %s: %+v\n", c.Name, c.Status)
		fmt.Fprintf(&b, "  etcd ops %v\n", fakeEtcd.Cluster(ns+"/"+c.Name).Ops())
	}
	var ms v1alpha2.EtcdMemberList
	_ = k8s.List(context.Background(), &ms, client.InNamespace(ns))
	for _, m := range ms.Items {
		fmt.Fprintf(&b, "member %s: dormant=%v ic=%q status=%+v deleting=%v\n", m.Name, m.Spec.Dormant, m.Spec.InitialCluster, m.Status, m.DeletionTimestamp != nil)
	}
	var pods corev1.PodList
	_ = k8s.List(context.Background(), &pods, client.InNamespace(ns))
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s: %s uid=%s\n", p.Name, p.Status.Phase, p.UID)
	}
	return b.String()
}

// waitTimeout bounds every wait; a loaded CI machine is slow, a broken controller never gets there.
const waitTimeout = 60 * time.Second
