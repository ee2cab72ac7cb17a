package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// Kamaji's webhook writes its default DataStore into every new TCP: one that opts in and has
// no ready control plane yet is moved to its own etcd at once.
func (s *suite) testKamajiDefault(t *testing.T) {
	ns := s.namespace(t, nil)
	s.tcp(t, ns, "fresh", optIn, KamajiDefaultDataStore)
	n := specs.NamesOf(ns, "fresh")
	tcp := &kamaji.TenantControlPlane{}
	waitFor(t, "spec.dataStore moved off Kamaji's default", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "fresh"}, tcp) && tcp.Spec.DataStore == n.DataStore
	})
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, &v1alpha2.EtcdCluster{}) || !s.get(t, client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) {
		t.Fatal("bound before its EtcdCluster and DataStore exist")
	}
	if note := s.event(t, ns, "fresh", v1alpha2.ReasonDataStoreSet); !strings.Contains(note, KamajiDefaultDataStore) {
		t.Errorf("DataStoreSet says %q: it should name the DataStore it replaced", note)
	}
	// Not opted in: a TCP on Kamaji's default stays there, and nothing is made for it.
	s.tcp(t, ns, "plain", nil, KamajiDefaultDataStore)
	s.tcp(t, ns, "witness", optIn, KamajiDefaultDataStore) // one worker: plain's pass comes first
	waitFor(t, "the witness served", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "witness"}, tcp) && tcp.Spec.DataStore == specs.NamesOf(ns, "witness").DataStore
	})
	s.get(t, client.ObjectKey{Namespace: ns, Name: "plain"}, tcp)
	if tcp.Spec.DataStore != KamajiDefaultDataStore || s.get(t, client.ObjectKey{Namespace: ns, Name: "plain-etcd"}, &v1alpha2.EtcdCluster{}) {
		t.Errorf("a TCP that did not opt in was touched: dataStore %q", tcp.Spec.DataStore)
	}
}

// A TCP that has served from Kamaji's default DataStore keeps it until its own etcd is
// Available (its keys are there; Kamaji's migration needs the target up), then moves, and the
// Event says Kamaji migrates the keys.
func (s *suite) testKamajiDefaultServing(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t, nil)
	tcp := s.tcp(t, ns, "running", nil, KamajiDefaultDataStore)
	n := specs.NamesOf(ns, "running")
	// Kamaji's part: the control plane became ready (it records the version it runs).
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Status = &kamaji.TenantControlPlaneStatus{KubernetesResources: &kamaji.KubernetesResourcesStatus{
		Version: &kamaji.KubernetesVersionStatus{Version: "v1.33.0", Status: "Ready"}}}
	if err := s.c.Status().Patch(ctx, tcp, patch); err != nil {
		t.Fatal(err)
	}
	s.annotateOptIn(t, tcp)
	waitFor(t, "the switch pending", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "running"}, tcp) &&
			strings.HasPrefix(tcp.Annotations[v1alpha2.AnnotationTenantEtcdState], v1alpha2.ReasonDataStoreSwitchPending)
	})
	if note := s.findEvent(t, ns, "running", v1alpha2.ReasonDataStoreSwitchPending).Type; note != corev1.EventTypeNormal {
		t.Errorf("the wait for the etcd is a %s Event, want Normal", note)
	}
	c := &v1alpha2.EtcdCluster{}
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c) || !s.get(t, client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) {
		t.Fatal("no EtcdCluster or DataStore made for a TCP waiting to move")
	}
	if tcp.Spec.DataStore != KamajiDefaultDataStore {
		t.Fatalf("spec.dataStore %q moved before the etcd is Available", tcp.Spec.DataStore)
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue,
		Reason: "QuorumHealthy", Message: "ok"})
	if err := s.c.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "spec.dataStore moved once the etcd is Available", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "running"}, tcp) && tcp.Spec.DataStore == n.DataStore &&
			tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] == v1alpha2.TenantStateReady
	})
	if note := s.event(t, ns, "running", v1alpha2.ReasonDataStoreMigration); !strings.Contains(note, "migrates the tenant's keys") {
		t.Errorf("DataStoreMigration says %q", note)
	}
}

// annotateOptIn opts the TCP in.
func (s *suite) annotateOptIn(t *testing.T, tcp *kamaji.TenantControlPlane) {
	t.Helper()
	s.get(t, client.ObjectKeyFromObject(tcp), tcp)
	patch := client.MergeFrom(tcp.DeepCopy())
	if tcp.Annotations == nil {
		tcp.Annotations = map[string]string{}
	}
	tcp.Annotations[v1alpha2.AnnotationTenantEtcd] = "true"
	if err := s.c.Patch(context.Background(), tcp, patch); err != nil {
		t.Fatal(err)
	}
}
