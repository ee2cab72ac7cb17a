//go:build e2e

package tls

import (
	"context"
	"strings"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

const (
	issueTimeout    = 2 * time.Minute
	convergeTimeout = 5 * time.Minute
)

// TestTLS shares one cert-manager and one operator process between its scenarios. The operator
// starts after cert-manager's CRDs are installed, as in a real installation.
func TestTLS(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	// The real binary: its scheme, Secret cache and cert-manager detection are main's.
	op := e2eutil.StartOperator(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log, last lines:\n%s", op.LogTail(60))
		}
	})
	t.Run("BYOCertificateMissingSAN", func(t *testing.T) { testMissingSAN(t, c) })
	t.Run("EnableClientTLSOnRunningCluster", func(t *testing.T) { testEnableClientTLS(t, c, op) })
	ns := e2eutil.NewNamespace(t, c) // the parent's: the cluster outlives the first subtest
	if !t.Run("MutualTLSBothPlanes", func(t *testing.T) { testMutualTLS(t, c, ns) }) {
		t.Fatal("the full-mTLS cluster the rotation scenarios use did not come up")
	}
	// The same running cluster: a forced leaf renewal, a certificate template edit, then
	// scaling with the renewed certificates; no step may restart a member.
	t.Run("LeafRenewalWithoutRestart", func(t *testing.T) { testLeafRenewal(t, c, ns, "etcd") })
	t.Run("CertificateTemplateEdit", func(t *testing.T) { testTemplateEdit(t, c, ns, "etcd") })
	t.Run("Scale3To5To3", func(t *testing.T) { testScaleWithTLS(t, c, ns, "etcd") })
	t.Run("MemberReplaced", func(t *testing.T) { testMemberReplaced(t, c, ns, "etcd") })
	t.Run("CARotationUnderWrites", func(t *testing.T) { testCARotation(t, c, ns, "etcd") })
}

// testMutualTLS: a 3-member cluster with cert-manager on both planes, an operator-client
// issuer and auth converges; the operator-client certificate (CN=root) writes and reads; a
// client without a certificate is refused, and so is one without credentials.
func testMutualTLS(t *testing.T, c *framework.Cluster, ns string) {
	createCA(t, c, ns)
	ca := v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"}
	create(t, c.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: "e2e-root-password"}})
	start := time.Now()
	e2eutil.CreateCluster(t, c, ns, "etcd", 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ca, OperatorClientIssuerRef: &ca}},
			Peer:   &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{IssuerRef: ca}},
		}
		s.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "etcd-root"}}
	})
	for _, s := range []string{v1alpha2.ServerSecretName("etcd"), v1alpha2.OperatorClientSecretName("etcd"), v1alpha2.PeerSecretName("etcd")} {
		e2eutil.WaitSecret(t, c, ns, s, issueTimeout)
	}
	t.Logf("cert-manager issued the 3 operator Certificates %s after the cluster was created", time.Since(start).Round(time.Millisecond))
	assertOwnedCertificates(t, c, ns, "etcd", 3)

	cfg := e2eutil.TLSConfig(t, c, ns, v1alpha2.ServerSecretName("etcd"), v1alpha2.OperatorClientSecretName("etcd"))
	e2eutil.WaitConvergedTLS(t, c, ns, "etcd", 3, cfg, convergeTimeout)
	e2eutil.WaitFor(t, convergeTimeout, "status.authEnabled", func() bool { return e2eutil.GetCluster(t, c, ns, "etcd").Status.AuthEnabled })
	t.Logf("3-member full-mTLS cluster with auth converged %s after creation", time.Since(start).Round(time.Millisecond))

	cli := e2eutil.TLSEtcdClient(t, c, ns, "etcd", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "tls", "works"); err != nil {
		t.Fatalf("put with the operator-client certificate: %v", err)
	}
	resp, err := cli.Get(ctx, "tls")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "works" {
		t.Fatalf("get with the operator-client certificate: %v %v", err, resp)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		for _, u := range append(m.ClientURLs, m.PeerURLs...) {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("member %s advertises %s, want https on both planes", m.Name, u)
			}
		}
	}

	// The same CA without a client certificate: etcd must refuse it (mTLS is enforced).
	anon := e2eutil.TLSEtcdClient(t, c, ns, "etcd", e2eutil.TLSConfig(t, c, ns, v1alpha2.ServerSecretName("etcd"), ""))
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer acancel()
	if _, err := anon.Put(actx, "anonymous", "x"); err == nil {
		t.Error("a client without a certificate wrote to a cluster with client-cert-auth")
	}
	// A certificate that is not root's (the peer certificate, from the same CA) and no password:
	// auth must refuse it.
	other := e2eutil.TLSEtcdClient(t, c, ns, "etcd", e2eutil.TLSConfig(t, c, ns, v1alpha2.ServerSecretName("etcd"), v1alpha2.PeerSecretName("etcd")))
	octx, ocancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer ocancel()
	if _, err := other.Put(octx, "not-root", "x"); !etcd.IsAuthRequired(err) {
		t.Errorf("a non-root certificate without credentials: %v, want refused by auth", err)
	}
}

func assertOwnedCertificates(t *testing.T, c *framework.Cluster, ns, cluster string, want int) {
	t.Helper()
	var list cmapi.CertificateList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelCluster: cluster}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != want {
		t.Fatalf("%d Certificates labelled for %s, want %d", len(list.Items), cluster, want)
	}
	for _, cert := range list.Items {
		if ref := metav1.GetControllerOf(&cert); ref == nil || ref.Kind != "EtcdCluster" || ref.Name != cluster {
			t.Errorf("Certificate %s is not controlled by EtcdCluster %s: %v", cert.Name, cluster, cert.OwnerReferences)
		}
	}
}

// testMissingSAN: a BYO server certificate that covers the Services but not the members gets
// a CertificateInvalid condition and Event naming the missing member name, and no Pod; once
// the Secret holds a certificate that covers the members, the cluster comes up.
func testMissingSAN(t *testing.T, c *framework.Cluster) {
	ns := e2eutil.NewNamespace(t, c)
	ca := pkitest.NewCA(t, "byo-ca")
	ref := pki.ClusterRef{Name: "byo", Namespace: ns, ClusterDomain: c.ClusterDomain()}
	all := pki.ServerNames(ref)
	// Everything but the member wildcards: the Services and loopback are covered, no member is.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "byo-server", Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: ca.SecretData(t, pkitest.WithoutMemberNames(all), all.IPs, pkitest.ServerAndClient...)}
	if err := c.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	e2eutil.CreateCluster(t, c, ns, "byo", 1, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "byo-server"}}}
	})

	var degraded *metav1.Condition
	took := e2eutil.WaitFor(t, time.Minute, "Degraded=CertificateInvalid", func() bool {
		degraded = meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, "byo").Status.Conditions, v1alpha2.ConditionDegraded)
		return degraded != nil && degraded.Status == metav1.ConditionTrue && degraded.Reason == v1alpha2.ReasonCertificateInvalid
	})
	t.Logf("Degraded=%s after %s: %s", degraded.Reason, took.Round(time.Millisecond), degraded.Message)
	members := e2eutil.Members(t, c, ns, "byo")
	if len(members) != 1 {
		t.Fatalf("%d members, want the seed", len(members))
	}
	seed := members[0].Name
	host := v1alpha2.MemberHost(seed, "byo", ns)
	if !strings.Contains(degraded.Message, host) {
		t.Errorf("Degraded message does not name the missing SAN %q: %s", host, degraded.Message)
	}
	if ev := e2eutil.FindEvent(t, c, ns, seed, v1alpha2.ReasonCertificateInvalid); ev == nil {
		t.Error("no CertificateInvalid Event on the member")
	} else if !strings.Contains(ev.Note, host) || ev.Type != corev1.EventTypeWarning {
		t.Errorf("Event %s %q does not warn about %q", ev.Type, ev.Note, host)
	}
	if pod := e2eutil.Pod(t, c, ns, seed); pod != nil {
		t.Errorf("Pod %s was created with a certificate that does not cover it", pod.Name)
	}

	// The fix: a certificate that covers every member. No restart of anything is needed.
	e2eutil.SetSecretData(t, c, ns, "byo-server", ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...))
	cfg := e2eutil.TLSConfig(t, c, ns, "byo-server", "")
	took = e2eutil.WaitConvergedTLS(t, c, ns, "byo", 1, cfg, convergeTimeout)
	t.Logf("converged %s after the Secret was fixed", took.Round(time.Millisecond))
}

// createCA: a selfSigned Issuer, a CA Certificate it issues and a CA Issuer over it, Ready.
func createCA(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	cl := c.Client
	create(t, cl, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "selfsigned", Namespace: ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}})
	create(t, cl, &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "etcd-ca", Namespace: ns},
		Spec: cmapi.CertificateSpec{
			IsCA: true, CommonName: "etcd-ca", SecretName: "etcd-ca",
			PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256},
			IssuerRef:  cmmeta.IssuerReference{Name: "selfsigned", Kind: cmapi.IssuerKind},
		}})
	e2eutil.WaitSecret(t, c, ns, "etcd-ca", issueTimeout)
	create(t, cl, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "etcd-ca", Namespace: ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "etcd-ca"}}}})
}

func create(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
