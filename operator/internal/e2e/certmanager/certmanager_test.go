//go:build e2e

package certmanager

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = v1alpha2.AddToScheme(s)
	_ = cmapi.AddToScheme(s)
	return s
}()

// No Pods are needed: a control plane without nodes is enough for cert-manager.
func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Nodes: -1, Scheme: scheme})
}

const issueTimeout = 2 * time.Minute

// selfSigned Issuer -> CA Certificate -> CA Issuer -> the operator's leaf Certificates, all
// issued by the real controller; each Secret holds a key pair chaining to the CA that covers
// a member's names and carries the usages etcd needs.
func TestOperatorCertificatesIssued(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	ns := e2eutil.NewNamespace(t, c)
	caPEM := createCA(t, c.Client, ns)

	cluster := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16",
			TLS: &v1alpha2.TLSSpec{
				Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{
					ServerIssuerRef:         v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"},
					OperatorClientIssuerRef: &v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"},
				}},
				Peer: &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{
					IssuerRef: v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"}}},
			},
			Auth: &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}},
		}}
	// Nothing reconciles it here; it exists so the Certificates' owner reference is real.
	create(t, c.Client, cluster)

	start := time.Now()
	certs := resources.DesiredCertificates(cluster, c.ClusterDomain())
	if len(certs) != 3 {
		t.Fatalf("%d Certificates desired, want server, operator-client and peer", len(certs))
	}
	for _, cert := range certs {
		create(t, c.Client, cert)
	}
	for _, cert := range certs {
		waitReady(t, c.Client, ns, cert.Name)
	}
	t.Logf("3 Certificates Ready %s after creation", time.Since(start).Round(time.Millisecond))

	ref := pki.ClusterRef{Name: cluster.Name, Namespace: ns, ClusterDomain: c.ClusterDomain()}
	both := []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth}
	peerClient := pki.PeerClientNames(ref, "etcd-x7k2q")
	otherCA := selfSignedCA(t)
	checks := []struct {
		secret string
		req    pki.Requirement
		cn     string
	}{
		{v1alpha2.ServerSecretName(cluster.Name), pki.Requirement{Names: pki.ServerNames(ref), Usages: both}, "etcd-server"},
		{v1alpha2.PeerSecretName(cluster.Name), pki.Requirement{Names: pki.PeerNames(ref), PeerClient: &peerClient, Usages: both}, "etcd-peer"},
		{v1alpha2.OperatorClientSecretName(cluster.Name), pki.Requirement{Usages: []pki.Usage{pki.UsageClientAuth}}, v1alpha2.RootUser},
	}
	for _, ch := range checks {
		s := &corev1.Secret{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ch.secret}, s); err != nil {
			t.Fatal(err)
		}
		ch.req.What = fmt.Sprintf("Secret %s", ch.secret)
		if err := pki.ValidateSecretData(s.Data, ch.req); err != nil {
			t.Error(err)
		}
		if !bytes.Equal(bytes.TrimSpace(s.Data[pki.KeyCA]), bytes.TrimSpace(caPEM)) {
			t.Errorf("Secret %s: ca.crt is not the CA's certificate", ch.secret)
		}
		if got := leafCN(t, s.Data[pki.KeyCert]); got != ch.cn {
			t.Errorf("Secret %s: CN %q, want %q", ch.secret, got, ch.cn)
		}
		if s.Labels[v1alpha2.LabelCluster] != cluster.Name {
			t.Errorf("Secret %s: labels %v lack the cluster label (secretTemplate)", ch.secret, s.Labels)
		}
		// The leaf must not pass against another CA: the check above is not vacuous.
		other := ch.req
		other.What += " against another CA"
		if err := pki.Validate(s.Data[pki.KeyCert], otherCA, other); err == nil {
			t.Errorf("Secret %s: leaf validated against an unrelated CA", ch.secret)
		}
	}
}

// createCA builds the chain of the public operators' examples: a selfSigned Issuer, a CA
// Certificate it issues, and a CA Issuer over that Certificate's Secret. It returns the CA
// certificate once the CA Issuer is Ready.
func createCA(t *testing.T, cl client.Client, ns string) []byte {
	t.Helper()
	create(t, cl, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "selfsigned", Namespace: ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}})
	create(t, cl, &cmapi.Certificate{ObjectMeta: metav1.ObjectMeta{Name: "etcd-ca", Namespace: ns},
		Spec: cmapi.CertificateSpec{
			IsCA: true, CommonName: "etcd-ca", SecretName: "etcd-ca",
			Duration:   &metav1.Duration{Duration: 87600 * time.Hour},
			PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmapi.RotationPolicyNever},
			Usages:     []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageCertSign},
			IssuerRef:  cmmeta.IssuerReference{Name: "selfsigned", Kind: cmapi.IssuerKind},
		}})
	waitReady(t, cl, ns, "etcd-ca")
	create(t, cl, &cmapi.Issuer{ObjectMeta: metav1.ObjectMeta{Name: "etcd-ca", Namespace: ns},
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: "etcd-ca"}}}})
	e2eutil.WaitFor(t, issueTimeout, "Issuer etcd-ca Ready", func() bool {
		iss := &cmapi.Issuer{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd-ca"}, iss); err != nil {
			return false
		}
		return hasReady(iss.Status.Conditions)
	})
	s := &corev1.Secret{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "etcd-ca"}, s); err != nil {
		t.Fatal(err)
	}
	return s.Data[pki.KeyCert]
}

func create(t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

// waitReady waits for a Certificate's Ready condition and fails with its last conditions.
func waitReady(t *testing.T, cl client.Client, ns, name string) {
	t.Helper()
	var last []cmapi.CertificateCondition
	for deadline := time.Now().Add(issueTimeout); time.Now().Before(deadline); time.Sleep(e2eutil.PollInterval) {
		cert := &cmapi.Certificate{}
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
			continue
		}
		last = cert.Status.Conditions
		for _, cond := range last {
			if cond.Type == cmapi.CertificateConditionReady && cond.Status == cmmeta.ConditionTrue {
				return
			}
		}
	}
	t.Fatalf("Certificate %s not Ready after %s; conditions: %+v", name, issueTimeout, last)
}

func hasReady(conds []cmapi.IssuerCondition) bool {
	for _, c := range conds {
		if c.Type == cmapi.IssuerConditionReady && c.Status == cmmeta.ConditionTrue {
			return true
		}
	}
	return false
}

// selfSignedCA is a CA certificate unrelated to anything cert-manager issued.
func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "unrelated-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func leafCN(t *testing.T, certPEM []byte) string {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	if b == nil {
		t.Fatal("tls.crt is not PEM")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.Subject.CommonName
}
