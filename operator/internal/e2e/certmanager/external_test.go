//go:build e2e

package certmanager

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// External issuer: the server Certificate names an issuer of another API group and an
// arbitrary kind, with a certificate template. The real cert-manager must hand the request to
// that issuer (CertificateRequest with the group, the template's duration and an RSA-3072
// key) and store what the issuer signs; the test plays the external issuer's controller.
func TestExternalIssuerAndTemplate(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	ns := e2eutil.NewNamespace(t, c)
	external := v1alpha2.IssuerReference{Name: "pca", Kind: "ExampleClusterIssuer", Group: "issuers.example.test"}
	cluster := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16",
			TLS: &v1alpha2.TLSSpec{
				Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: external}},
				CertificateTemplate: &v1alpha2.CertificateTemplate{
					Duration: &metav1.Duration{Duration: 48 * time.Hour}, RenewBefore: &metav1.Duration{Duration: 12 * time.Hour},
					PrivateKey: &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyRSA, Size: 3072}},
			}}}
	// The apiserver must accept the reference (CEL), and nothing reconciles the cluster here.
	create(t, c.Client, cluster)
	certs := resources.DesiredCertificates(cluster, c.ClusterDomain())
	if len(certs) != 1 {
		t.Fatalf("%d Certificates desired, want the server's", len(certs))
	}
	start := time.Now()
	create(t, c.Client, certs[0])

	cr := waitRequest(t, c.Client, ns)
	if r := cr.Spec.IssuerRef; r.Group != external.Group || r.Kind != external.Kind || r.Name != external.Name {
		t.Fatalf("CertificateRequest issuerRef %+v, want %+v", r, external)
	}
	if cr.Spec.Duration == nil || cr.Spec.Duration.Duration != 48*time.Hour {
		t.Errorf("CertificateRequest duration %v, want the template's 48h", cr.Spec.Duration)
	}
	approveIfPending(t, c.Client, cr)

	ca := pkitest.NewCA(t, "external-ca")
	csr := parseCSR(t, cr.Spec.Request)
	if k, ok := csr.PublicKey.(*rsa.PublicKey); !ok || k.N.BitLen() != 3072 {
		t.Errorf("requested key %T, want the template's RSA-3072", csr.PublicKey)
	}
	// Play the external issuer's controller: sign every approved request of the Certificate, not
	// just the first (under load cert-manager may supersede a request whose key it regenerated).
	signed := map[string]bool{}
	e2eutil.WaitFor(t, issueTimeout, "Certificate "+certs[0].Name+" Ready", func() bool {
		signRequests(t, c.Client, ns, ca, signed)
		return certReady(t, c.Client, ns, certs[0].Name)
	})
	t.Logf("external issuer: request handed over and signed, Certificate Ready %s after creation (%d request(s) signed)",
		time.Since(start).Round(time.Millisecond), len(signed))

	s := &corev1.Secret{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.ServerSecretName("ext")}, s); err != nil {
		t.Fatal(err)
	}
	if !signed[string(s.Data[pki.KeyCert])] || !bytes.Equal(s.Data[pki.KeyCA], ca.PEM) {
		t.Error("the Secret does not hold what the external issuer signed")
	}
	ref := pki.ClusterRef{Name: "ext", Namespace: ns, ClusterDomain: c.ClusterDomain()}
	req := pki.Requirement{What: "external server certificate", Names: pki.ServerNames(ref),
		Usages: []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth}}
	if err := pki.ValidateSecretData(s.Data, req); err != nil {
		t.Error(err)
	}
}

// signRequests signs, as the external issuer, every approved request in ns not answered yet,
// recording each certificate it signed.
func signRequests(t *testing.T, cl client.Client, ns string, ca *pkitest.CA, signed map[string]bool) {
	t.Helper()
	var list cmapi.CertificateRequestList
	if err := cl.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if len(cr.Status.Certificate) > 0 || !requestCondition(cr, cmapi.CertificateRequestConditionApproved) ||
			requestCondition(cr, cmapi.CertificateRequestConditionReady) || cr.Spec.Duration == nil {
			continue
		}
		cert := ca.SignCSR(t, cr.Spec.Request, cr.Spec.Duration.Duration)
		cr.Status.Certificate, cr.Status.CA = cert, ca.PEM
		now := metav1.Now()
		cr.Status.Conditions = append(cr.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionReady,
			Status: cmmeta.ConditionTrue, Reason: cmapi.CertificateRequestReasonIssued, Message: "signed by the e2e external issuer", LastTransitionTime: &now})
		if err := cl.Status().Update(context.Background(), cr); err != nil {
			continue // it changed meanwhile: the next poll sees it again
		}
		signed[string(cert)] = true
	}
}

func requestCondition(cr *cmapi.CertificateRequest, typ cmapi.CertificateRequestConditionType) bool {
	for _, c := range cr.Status.Conditions {
		if c.Type == typ && c.Status == cmmeta.ConditionTrue {
			return true
		}
	}
	return false
}

// certReady reads whether the Certificate is Ready.
func certReady(t *testing.T, cl client.Client, ns, name string) bool {
	t.Helper()
	cert := &cmapi.Certificate{}
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cert); err != nil {
		return false
	}
	for _, cond := range cert.Status.Conditions {
		if cond.Type == cmapi.CertificateConditionReady && cond.Status == cmmeta.ConditionTrue {
			return true
		}
	}
	return false
}

// waitRequest waits for the CertificateRequest cert-manager creates for the namespace's
// only Certificate.
func waitRequest(t *testing.T, cl client.Client, ns string) *cmapi.CertificateRequest {
	t.Helper()
	var cr *cmapi.CertificateRequest
	e2eutil.WaitFor(t, issueTimeout, "a CertificateRequest", func() bool {
		var list cmapi.CertificateRequestList
		if err := cl.List(context.Background(), &list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
			return false
		}
		cr = &list.Items[0]
		return len(cr.Spec.Request) > 0
	})
	return cr
}

// approveIfPending approves the request unless cert-manager's own approver already did (it
// approves for issuers its RBAC lets it; external issuers usually ship an approver policy).
func approveIfPending(t *testing.T, cl client.Client, cr *cmapi.CertificateRequest) {
	t.Helper()
	approved := func() bool {
		for _, c := range cr.Status.Conditions {
			if c.Type == cmapi.CertificateRequestConditionApproved && c.Status == cmmeta.ConditionTrue {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(5 * time.Second); !approved() && time.Now().Before(deadline); time.Sleep(e2eutil.PollInterval) {
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(cr), cr); err != nil {
			t.Fatal(err)
		}
	}
	if approved() {
		t.Log("cert-manager's approver approved the request")
		return
	}
	now := metav1.Now()
	cr.Status.Conditions = append(cr.Status.Conditions, cmapi.CertificateRequestCondition{Type: cmapi.CertificateRequestConditionApproved,
		Status: cmmeta.ConditionTrue, Reason: "e2e", Message: "approved by the e2e external issuer", LastTransitionTime: &now})
	if err := cl.Status().Update(context.Background(), cr); err != nil {
		t.Fatalf("approve: %v", err)
	}
	t.Log("approved the request as the external issuer's approver")
}

func parseCSR(t *testing.T, request []byte) *x509.CertificateRequest {
	t.Helper()
	b, _ := pem.Decode(request)
	if b == nil {
		t.Fatal("the request holds no PEM CSR")
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return csr
}
