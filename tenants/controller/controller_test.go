package controller

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

const template = "replicas: 3\nversion: 3.6.16\nstorage:\n  size: 2Gi\n"

// backupTemplate: every served tenant's etcd is backed up to S3 under its own prefix.
const backupTemplate = `schedule: "0 */6 * * *"
snapshotTemplate:
  destination:
    s3: {endpoint: "http://s3:9000", bucket: tenants, key: etcd, credentialsSecretRef: {name: s3}}
`

var optIn = map[string]string{v1alpha2.AnnotationTenantEtcd: "true"}

// suiteOptions are the scenarios' settings: Kamaji's default DataStore as its chart names it.
func suiteOptions() Options {
	return Options{Template: []byte(template), Backup: []byte(backupTemplate), KamajiDefaultDataStore: KamajiDefaultDataStore}
}

// TestTenantController runs the scenarios against the project's own minimal Kamaji CRDs.
func TestTenantController(t *testing.T) {
	s := startSuite(t, testenv.FixtureCRDDir("kamaji"), suiteOptions())
	s.scenarios(t)
}

// TestTenantControllerOnKamajiCRDs runs them against Kamaji's real CRDs (its CEL rules judge
// the DataStore; its TenantControlPlane schema keeps fields our types do not have).
func TestTenantControllerOnKamajiCRDs(t *testing.T) {
	shared, ok := testenv.SharedDir()
	dir := filepath.Join(shared, "crds", "kamaji")
	if _, err := os.Stat(dir); !ok || err != nil {
		t.Skipf("Kamaji's CRDs not found in %s (they sit beside the clone in CI)", dir)
	}
	s := startSuite(t, dir, suiteOptions())
	s.scenarios(t)
}

// A manager started before Kamaji's CRDs exist runs (the operator keeps working) and starts
// the tenant controller once they are served.
func TestTenantControllerWaitsForCRDs(t *testing.T) {
	s := startSuite(t, "", Options{Template: []byte(template)})
	if _, err := envtest.InstallCRDs(s.cfg, envtest.CRDInstallOptions{Paths: []string{testenv.FixtureCRDDir("kamaji")}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	ns := s.namespace(t, nil)
	s.tcp(t, ns, "late", optIn, "")
	tcp := &kamaji.TenantControlPlane{}
	waitFor(t, "a TCP served once Kamaji's CRDs appeared", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "late"}, tcp) && tcp.Spec.DataStore != ""
	})
}

func (s *suite) scenarios(t *testing.T) {
	t.Run("Serve", s.testServe)
	t.Run("OptIn", s.testOptIn)
	t.Run("ForeignDataStore", s.testForeign)
	t.Run("KamajiDefaultDataStore", s.testKamajiDefault)
	t.Run("KamajiDefaultDataStoreServing", s.testKamajiDefaultServing)
	t.Run("BadSpec", s.testBadSpec)
	t.Run("DeleteWaitsForKamaji", s.testDelete)
	t.Run("Retain", s.testRetain)
	t.Run("Backup", s.testBackup)
	t.Run("LongNames", s.testLongNames)
}

// A TCP that opts in gets its EtcdCluster (template merged with its override, TLS from its own
// CA), the CA chain owned by the cluster, a DataStore Kamaji accepts, spec.dataStore set, and
// a state annotation that follows the cluster's Available condition.
func (s *suite) testServe(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	annotations := map[string]string{v1alpha2.AnnotationTenantEtcd: "true", v1alpha2.AnnotationTenantEtcdSpec: `{"replicas": 5}`}
	s.tcp(t, ns, "k8s", annotations, "")
	n := specs.NamesOf(ns, "k8s")
	tcp := &kamaji.TenantControlPlane{}
	waitFor(t, "spec.dataStore set and the state recorded", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "k8s"}, tcp) && tcp.Spec.DataStore == n.DataStore &&
			tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] != ""
	})
	if got := tcp.Annotations[v1alpha2.AnnotationTenantEtcdState]; !strings.Contains(got, v1alpha2.ReasonTenantEtcdNotReady) {
		t.Errorf("state %q before the cluster is Available", got)
	}
	c := &v1alpha2.EtcdCluster{}
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c) {
		t.Fatal("no EtcdCluster")
	}
	if *c.Spec.Replicas != 5 || c.Spec.Version != "3.6.16" || c.Spec.Storage.Size.String() != "2Gi" {
		t.Errorf("spec %+v: want the template with replicas 5 from the annotation", c.Spec)
	}
	if c.Spec.TLS == nil || c.Spec.TLS.Client.CertManager.ServerIssuerRef.Name != n.CA() {
		t.Errorf("TLS %+v", c.Spec.TLS)
	}
	for _, obj := range []struct {
		o    client.Object
		name string
	}{{&cmapi.Issuer{}, n.SelfSignedIssuer()}, {&cmapi.Certificate{}, n.CA()}, {&cmapi.Issuer{}, n.CA()}, {&cmapi.Certificate{}, n.ClientCertificate()}} {
		if !s.get(t, client.ObjectKey{Namespace: ns, Name: obj.name}, obj.o) {
			t.Fatalf("%T %s missing", obj.o, obj.name)
		}
		if refs := obj.o.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != c.UID {
			t.Errorf("%T %s owners %+v, want the EtcdCluster", obj.o, obj.name, refs)
		}
	}
	ds := &kamaji.DataStore{}
	if !s.get(t, client.ObjectKey{Name: n.DataStore}, ds) || ds.Spec.Endpoints[0] != "k8s-etcd-client."+ns+".svc:2379" {
		t.Fatalf("DataStore %+v", ds.Spec)
	}
	s.event(t, ns, "k8s", v1alpha2.ReasonDataStoreSet)
	if got := tcp.Annotations[v1alpha2.AnnotationTenantEtcdCluster]; got != n.Cluster {
		t.Errorf("cluster annotation %q", got)
	}
	// Kamaji's own fields (not in our types) survive our patches.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kamaji.GroupVersion.WithKind("TenantControlPlane"))
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: "k8s"}, u) {
		t.Fatal("TCP gone")
	}
	if v, _, _ := unstructured.NestedString(u.Object, "spec", "controlPlane", "service", "serviceType"); v != "ClusterIP" {
		t.Errorf("spec.controlPlane lost: %v", u.Object["spec"])
	}
	if v, _, _ := unstructured.NestedInt64(u.Object, "spec", "networkProfile", "port"); v != 6443 {
		t.Errorf("spec.networkProfile lost: %v", u.Object["spec"])
	}
	// The cluster becomes Available: the state says Ready.
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue,
		Reason: "QuorumHealthy", Message: "ok"})
	if err := s.c.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "state Ready", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "k8s"}, tcp) && tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] == v1alpha2.TenantStateReady
	})
	s.event(t, ns, "k8s", v1alpha2.ReasonTenantEtcdReady)
}

// Without an opt-in nothing is made; the namespace's label opts its TCPs in, the TCP's own
// annotation "false" opts out of it.
func (s *suite) testOptIn(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	s.tcp(t, ns, "plain", nil, "")
	s.tcp(t, ns, "out", map[string]string{v1alpha2.AnnotationTenantEtcd: "false"}, "")
	namespace := &corev1.Namespace{}
	s.get(t, client.ObjectKey{Name: ns}, namespace)
	namespace.Labels[v1alpha2.AnnotationTenantEtcd] = "true"
	if err := s.c.Update(ctx, namespace); err != nil {
		t.Fatal(err)
	}
	plain := &kamaji.TenantControlPlane{}
	waitFor(t, "the namespace's label serves plain", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "plain"}, plain) && plain.Spec.DataStore == specs.NamesOf(ns, "plain").DataStore
	})
	out := &kamaji.TenantControlPlane{}
	s.get(t, client.ObjectKey{Namespace: ns, Name: "out"}, out)
	if out.Spec.DataStore != "" || s.get(t, client.ObjectKey{Namespace: ns, Name: "out-etcd"}, &v1alpha2.EtcdCluster{}) {
		t.Errorf("a TCP that opted out was served: dataStore %q", out.Spec.DataStore)
	}
}

// A TCP on a DataStore the controller did not make (and not Kamaji's default) is never touched,
// opted in or not.
func (s *suite) testForeign(t *testing.T) {
	ns := s.namespace(t, nil)
	s.tcp(t, ns, "foreign", optIn, "shared")
	s.event(t, ns, "foreign", v1alpha2.ReasonForeignDataStore)
	tcp := &kamaji.TenantControlPlane{}
	s.get(t, client.ObjectKey{Namespace: ns, Name: "foreign"}, tcp)
	if tcp.Spec.DataStore != "shared" || tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] != "" {
		t.Errorf("foreign TCP touched: %q %v", tcp.Spec.DataStore, tcp.Annotations)
	}
	if s.get(t, client.ObjectKey{Namespace: ns, Name: "foreign-etcd"}, &v1alpha2.EtcdCluster{}) {
		t.Error("an EtcdCluster was made for a TCP on a foreign DataStore")
	}
}

// A spec the controller cannot use (a typo) or the API refuses says so on the TCP, and
// nothing is created; fixing the annotation serves it.
func (s *suite) testBadSpec(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	typo := map[string]string{v1alpha2.AnnotationTenantEtcd: "true", v1alpha2.AnnotationTenantEtcdSpec: `{"replica": 5}`}
	s.tcp(t, ns, "typo", typo, "")
	note := s.event(t, ns, "typo", v1alpha2.ReasonTenantTemplateInvalid)
	if !strings.Contains(note, `unknown field "replica"`) {
		t.Errorf("TemplateInvalid says %q", note)
	}
	refused := map[string]string{v1alpha2.AnnotationTenantEtcd: "true", v1alpha2.AnnotationTenantEtcdSpec: `{"replicas": -1}`}
	tcp := s.tcp(t, ns, "refused", refused, "")
	note = s.event(t, ns, "refused", v1alpha2.ReasonTenantApplyFailed)
	if !strings.Contains(note, "replicas") {
		t.Errorf("ApplyFailed says %q", note)
	}
	for _, name := range []string{"typo-etcd", "refused-etcd"} {
		if s.get(t, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha2.EtcdCluster{}) {
			t.Errorf("%s created from a bad spec", name)
		}
	}
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Annotations[v1alpha2.AnnotationTenantEtcdSpec] = `{"replicas": 1}`
	if err := s.c.Patch(ctx, tcp, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the fixed TCP served", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "refused"}, tcp) && tcp.Spec.DataStore != ""
	})
}

// A deleted TCP's etcd stays while Kamaji lists the DataStore used; then the DataStore, the
// EtcdCluster and the PKI's Secrets go.
func (s *suite) testDelete(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	tcp := s.tcp(t, ns, "gone", optIn, "")
	n := specs.NamesOf(ns, "gone")
	ds := &kamaji.DataStore{}
	waitFor(t, "DataStore", func() bool { return s.get(t, client.ObjectKey{Name: n.DataStore}, ds) })
	// Kamaji's part: it uses the DataStore; cert-manager's: the CA Secret.
	ds.Status = &kamaji.DataStoreStatus{UsedBy: []string{ns + "/gone"}}
	if err := s.c.Status().Update(ctx, ds); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n.CA(), Labels: n.Labels()}}
	if err := s.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if err := s.c.Delete(ctx, tcp); err != nil {
		t.Fatal(err)
	}
	s.event(t, "default", n.DataStore, v1alpha2.ReasonDataStoreInUse)
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, &v1alpha2.EtcdCluster{}) || !s.get(t, client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) {
		t.Fatal("etcd or DataStore deleted while Kamaji uses it")
	}
	ds.Status.UsedBy = nil
	if err := s.c.Status().Update(ctx, ds); err != nil {
		t.Fatal(err)
	}
	// The Certificates go explicitly (envtest has no garbage collector to take them with the
	// EtcdCluster): while one exists cert-manager would issue its deleted Secret again.
	waitFor(t, "EtcdCluster, DataStore, Certificates and CA Secret deleted", func() bool {
		return !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, &v1alpha2.EtcdCluster{}) &&
			!s.get(t, client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) &&
			!s.get(t, client.ObjectKey{Namespace: ns, Name: n.CA()}, &cmapi.Certificate{}) &&
			!s.get(t, client.ObjectKey{Namespace: ns, Name: n.ClientCertificate()}, &cmapi.Certificate{}) &&
			!s.get(t, client.ObjectKey{Namespace: ns, Name: n.CA()}, &corev1.Secret{})
	})
}

// Under Retain a deleted TCP's etcd and DataStore stay; a TCP of the same name gets them back.
func (s *suite) testRetain(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	annotations := map[string]string{v1alpha2.AnnotationTenantEtcd: "true", v1alpha2.AnnotationTenantDeletionPolicy: v1alpha2.TenantDeletionRetain}
	tcp := s.tcp(t, ns, "kept", annotations, "")
	n := specs.NamesOf(ns, "kept")
	c := &v1alpha2.EtcdCluster{}
	waitFor(t, "EtcdCluster", func() bool { return s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c) })
	uid := c.UID
	if err := s.c.Delete(ctx, tcp); err != nil {
		t.Fatal(err)
	}
	s.event(t, ns, n.Cluster, v1alpha2.ReasonTenantEtcdRetained)
	if !s.get(t, client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) || !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c) {
		t.Fatal("retained etcd or DataStore deleted")
	}
	s.tcp(t, ns, "kept", optIn, "")
	waitFor(t, "the new TCP bound to the retained DataStore", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "kept"}, tcp) && tcp.Spec.DataStore == n.DataStore
	})
	if s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c); c.UID != uid {
		t.Error("the retained EtcdCluster was replaced")
	}
}

// A served TCP's etcd is backed up by the template's schedule (its annotation merged over it),
// under its own prefix, by a schedule the EtcdCluster owns; a refused override says why and
// changes nothing; null turns its backups off.
func (s *suite) testBackup(t *testing.T) {
	ns := s.namespace(t, nil)
	annotations := map[string]string{v1alpha2.AnnotationTenantEtcd: "true", v1alpha2.AnnotationTenantEtcdBackup: `{"retention": {"keepLast": 7}}`}
	tcp := s.tcp(t, ns, "backed", annotations, "")
	n := specs.NamesOf(ns, "backed")
	sched := &v1alpha2.EtcdBackupSchedule{}
	waitFor(t, "the tenant's EtcdBackupSchedule", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: n.BackupSchedule()}, sched)
	})
	c := &v1alpha2.EtcdCluster{}
	s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c)
	if sched.Spec.ClusterRef.Name != n.Cluster || sched.Spec.Schedule != "0 */6 * * *" || *sched.Spec.Retention.KeepLast != 7 ||
		sched.Spec.SnapshotTemplate.Destination.S3.Key != "etcd/"+ns+"/backed" {
		t.Errorf("schedule spec %+v", sched.Spec)
	}
	if refs := sched.OwnerReferences; len(refs) != 1 || refs[0].UID != c.UID {
		t.Errorf("schedule owners %+v, want the EtcdCluster", refs)
	}
	// The API refuses keepLast 0: ApplyFailed with its message, the schedule as it was.
	s.annotate(t, tcp, `{"retention": {"keepLast": 0}}`)
	if note := s.event(t, ns, "backed", v1alpha2.ReasonTenantApplyFailed); !strings.Contains(note, "keepLast") {
		t.Errorf("ApplyFailed says %q", note)
	}
	s.get(t, client.ObjectKey{Namespace: ns, Name: n.BackupSchedule()}, sched)
	if *sched.Spec.Retention.KeepLast != 7 {
		t.Errorf("a refused override changed the schedule: keepLast %d", *sched.Spec.Retention.KeepLast)
	}
	s.annotate(t, tcp, "null")
	waitFor(t, "the schedule deleted once backups are off", func() bool {
		return !s.get(t, client.ObjectKey{Namespace: ns, Name: n.BackupSchedule()}, &v1alpha2.EtcdBackupSchedule{})
	})
}

// annotate sets the TCP's backup annotation.
func (s *suite) annotate(t *testing.T, tcp *kamaji.TenantControlPlane, backup string) {
	t.Helper()
	s.get(t, client.ObjectKeyFromObject(tcp), tcp)
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Annotations[v1alpha2.AnnotationTenantEtcdBackup] = backup
	if err := s.c.Patch(context.Background(), tcp, patch); err != nil {
		t.Fatal(err)
	}
}
