package etcdcluster

import (
	"context"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func certScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1alpha2.AddToScheme, cmapi.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func certManagerCluster() *v1alpha2.EtcdCluster {
	ca := v1alpha2.IssuerReference{Name: "ca", Kind: "Issuer"}
	return &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns", UID: "uid-1"},
		Spec: v1alpha2.EtcdClusterSpec{TLS: &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ca, OperatorClientIssuerRef: &ca}},
			Peer:   &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{IssuerRef: ca}},
		}}}
}

func certificates(t *testing.T, cl client.Client) map[string]cmapi.Certificate {
	t.Helper()
	var list cmapi.CertificateList
	if err := cl.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	out := map[string]cmapi.Certificate{}
	for _, c := range list.Items {
		out[c.Name] = c
	}
	return out
}

// The step creates the desired Certificates once, leaves them alone while they match, and
// re-issues one whose spec drifted (e.g. the cluster domain or an issuer changed).
func TestEnsureCertificatesCreatesAndUpdates(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).Build()
	r := &Reconciler{Client: cl, ClusterDomain: "example.org"}
	c := certManagerCluster()
	st := &clusterState{cluster: c, status: &c.Status, memo: newMemo("")}
	ctx := context.Background()
	if err := r.ensureCertificates(ctx, st); err != nil || st.certManagerMissing {
		t.Fatalf("first pass: %v (missing %v)", err, st.certManagerMissing)
	}
	got := certificates(t, cl)
	for _, name := range []string{v1alpha2.ServerCertificateName("etcd"), v1alpha2.OperatorClientCertificateName("etcd"), v1alpha2.PeerCertificateName("etcd")} {
		cert, ok := got[name]
		if !ok {
			t.Fatalf("Certificate %s not created; have %v", name, len(got))
		}
		if !metav1.IsControlledBy(&cert, c) {
			t.Errorf("Certificate %s not controlled by the cluster: %v", name, cert.OwnerReferences)
		}
	}
	server := got[v1alpha2.ServerCertificateName("etcd")]
	if !strings.Contains(strings.Join(server.Spec.DNSNames, ","), ".svc.example.org") {
		t.Errorf("server DNS names ignore the cluster domain: %v", server.Spec.DNSNames)
	}

	rv := server.ResourceVersion
	if err := r.ensureCertificates(ctx, st); err != nil {
		t.Fatal(err)
	}
	if now := certificates(t, cl)[server.Name]; now.ResourceVersion != rv {
		t.Error("an unchanged Certificate was written")
	}

	r.ClusterDomain = "cluster.local"
	if err := r.ensureCertificates(ctx, st); err != nil {
		t.Fatal(err)
	}
	now := certificates(t, cl)[server.Name]
	if now.ResourceVersion == rv || strings.Contains(strings.Join(now.Spec.DNSNames, ","), "example.org") {
		t.Errorf("a Certificate whose names changed was not updated: %v", now.Spec.DNSNames)
	}
}

// An edit of spec.tls.certificateTemplate updates every emitted Certificate in place (same
// object, new spec) so cert-manager re-issues; nothing is deleted and recreated.
func TestEnsureCertificatesFollowsTemplate(t *testing.T) {
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).Build()
	r := &Reconciler{Client: cl}
	c := certManagerCluster()
	st := &clusterState{cluster: c, status: &c.Status, memo: newMemo("")}
	ctx := context.Background()
	if err := r.ensureCertificates(ctx, st); err != nil {
		t.Fatal(err)
	}
	before := certificates(t, cl)
	c.Spec.TLS.CertificateTemplate = &v1alpha2.CertificateTemplate{
		Duration:    &metav1.Duration{Duration: 2 * time.Hour},
		RenewBefore: &metav1.Duration{Duration: time.Hour},
		PrivateKey:  &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyEd25519},
	}
	if err := r.ensureCertificates(ctx, st); err != nil {
		t.Fatal(err)
	}
	after := certificates(t, cl)
	if len(after) != 3 {
		t.Fatalf("want 3 Certificates, got %d", len(after))
	}
	for name, cert := range after {
		if cert.UID != before[name].UID || cert.ResourceVersion == before[name].ResourceVersion {
			t.Errorf("%s: not updated in place (uid %s→%s, rv %s→%s)", name, before[name].UID, cert.UID, before[name].ResourceVersion, cert.ResourceVersion)
		}
		if cert.Spec.Duration.Duration != 2*time.Hour || cert.Spec.RenewBefore.Duration != time.Hour || cert.Spec.PrivateKey.Algorithm != cmapi.Ed25519KeyAlgorithm {
			t.Errorf("%s: template not applied: duration %v renewBefore %v key %s", name, cert.Spec.Duration, cert.Spec.RenewBefore, cert.Spec.PrivateKey.Algorithm)
		}
	}
	c.Spec.TLS.CertificateTemplate = nil
	if err := r.ensureCertificates(ctx, st); err != nil {
		t.Fatal(err)
	}
	for name, cert := range certificates(t, cl) {
		if cert.Spec.Duration != nil || cert.Spec.PrivateKey.Algorithm != cmapi.ECDSAKeyAlgorithm {
			t.Errorf("%s: dropping the template did not restore the defaults: duration %v key %s", name, cert.Spec.Duration, cert.Spec.PrivateKey.Algorithm)
		}
	}
}

func TestEnsureCertificatesRefusesForeignCertificate(t *testing.T) {
	foreign := &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: v1alpha2.ServerCertificateName("etcd"), Namespace: "ns"}}
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).WithObjects(foreign).Build()
	r := &Reconciler{Client: cl}
	c := certManagerCluster()
	err := r.ensureCertificates(context.Background(), &clusterState{cluster: c, status: &c.Status, memo: newMemo("")})
	if err == nil || !strings.Contains(err.Error(), "not controlled") {
		t.Errorf("a Certificate of someone else was taken over: %v", err)
	}
}

// Without cert-manager's CRD (the API server maps no Certificate kind) the pass goes on and
// status says why.
func TestEnsureCertificatesWithoutCertManager(t *testing.T) {
	noKind := func(_ context.Context, _ client.WithWatch, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
		return &meta.NoKindMatchError{GroupKind: cmapi.SchemeGroupVersion.WithKind(cmapi.CertificateKind).GroupKind()}
	}
	cl := fake.NewClientBuilder().WithScheme(certScheme(t)).WithInterceptorFuncs(interceptor.Funcs{Get: noKind}).Build()
	r := &Reconciler{Client: cl}
	c := certManagerCluster()
	st := &clusterState{cluster: c, status: c.Status.DeepCopy(), memo: newMemo("")}
	if err := r.ensureCertificates(context.Background(), st); err != nil {
		t.Fatalf("a missing CRD failed the pass: %v", err)
	}
	if !st.certManagerMissing {
		t.Fatal("missing cert-manager not noticed")
	}
	d, ok := startDegraded(st)
	if !ok || d.Status != metav1.ConditionTrue || d.Reason != v1alpha2.ReasonCertManagerNotInstalled {
		t.Errorf("Degraded %+v", d)
	}
}

func TestTLSDegradedNamesInvalidMember(t *testing.T) {
	m := v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "etcd-x"}}
	meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha2.ReasonCertificateInvalid, Message: `does not cover "etcd-x.etcd.ns.svc"`})
	st := &clusterState{members: []v1alpha2.EtcdMember{m}}
	d, ok := startDegraded(st)
	if !ok || d.Reason != v1alpha2.ReasonCertificateInvalid || !strings.Contains(d.Message, "etcd-x.etcd.ns.svc") {
		t.Errorf("Degraded %+v %v", d, ok)
	}
	st.members[0].Status.Conditions[0].Reason = v1alpha2.ReasonPodReady
	if _, ok := startDegraded(st); ok {
		t.Error("a healthy member made the cluster TLS-degraded")
	}
}
