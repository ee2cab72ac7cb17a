package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/testenv"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

const waitTimeout = 30 * time.Second

// suite is one envtest apiserver with Kamaji's CRDs (the project's minimal ones or Kamaji's
// real ones) and cert-manager's, and the tenant controller running against it.
type suite struct {
	c   client.Client
	cfg *rest.Config
}

// startSuite boots envtest with kamajiCRDs (none when empty) and runs the tenant controller
// with o; all is stopped when t ends.
func startSuite(t *testing.T, kamajiCRDs string, o Options) *suite {
	t.Helper()
	cm, err := localcluster.ResolveCertManager(localcluster.Options{ModuleRoot: testenv.RepoRoot()})
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{cm.CRDs}
	if kamajiCRDs != "" {
		dirs = append(dirs, kamajiCRDs)
	}
	env, err := testenv.Start(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	for _, add := range []func(*runtime.Scheme) error{kamaji.AddToScheme, cmapi.AddToScheme} {
		if err := add(env.Scheme); err != nil {
			t.Fatal(err)
		}
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}}) // two suites in one process
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := Files{Template: filepath.Join(dir, "template.yaml"), Backup: filepath.Join(dir, "backup.yaml")}
	writeFile(t, files.Template, o.Template)
	writeFile(t, files.Backup, o.Backup)
	o.Template, o.Backup = nil, nil
	if err := Setup(mgr, files, o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = mgr.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := client.New(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &suite{c: c, cfg: env.Config}
}

// namespace creates a namespace with labels.
func (s *suite) namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Labels: labels}}
	if err := s.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// tcp creates a TenantControlPlane with the fields Kamaji's real CRD requires (its webhook
// would default networkProfile; no webhook runs here). Unstructured: our types have no
// networkProfile, and a Create from them would drop it.
func (s *suite) tcp(t *testing.T, ns, name string, annotations map[string]string, dataStore string) *kamaji.TenantControlPlane {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"controlPlane":   map[string]any{"service": map[string]any{"serviceType": "ClusterIP"}},
		"kubernetes":     map[string]any{"version": "v1.33.0", "kubelet": map[string]any{}},
		"networkProfile": map[string]any{"port": int64(6443)},
	}}}
	if dataStore != "" {
		u.Object["spec"].(map[string]any)["dataStore"] = dataStore
	}
	u.SetGroupVersionKind(kamaji.GroupVersion.WithKind("TenantControlPlane"))
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	if err := s.c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	tcp := &kamaji.TenantControlPlane{}
	s.get(t, client.ObjectKeyFromObject(u), tcp)
	return tcp
}

func (s *suite) get(t *testing.T, key client.ObjectKey, obj client.Object) bool {
	t.Helper()
	err := s.c.Get(context.Background(), key, obj)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	return err == nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// event waits for an Event with reason about the object named regarding in ns, and returns its note.
func (s *suite) event(t *testing.T, ns, regarding, reason string) string {
	t.Helper()
	return s.findEvent(t, ns, regarding, reason).Note
}

// findEvent waits for an Event with reason about the object named regarding in ns.
func (s *suite) findEvent(t *testing.T, ns, regarding, reason string) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	waitFor(t, fmt.Sprintf("Event %s on %s", reason, regarding), func() bool {
		var list eventsv1.EventList
		if err := s.c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			if e.Regarding.Name == regarding && e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
