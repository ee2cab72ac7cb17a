package tlsmaterial

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

var both = pkitest.ServerAndClient

func secret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Data: data}
}

func newClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

func mtlsCluster() *v1alpha2.EtcdCluster {
	ref := v1alpha2.IssuerReference{Name: "ca"}
	return &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"},
		Spec: v1alpha2.EtcdClusterSpec{TLS: &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{
			CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ref, OperatorClientIssuerRef: &ref}}}}}
}

func TestBuildClientConfig(t *testing.T) {
	ca := pkitest.NewCA(t, "test-ca")
	server := ca.SecretData(t, []string{"localhost"}, nil, both...)
	client := ca.SecretData(t, nil, nil, x509.ExtKeyUsageClientAuth)

	cfg, err := BuildClientConfig(server, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Certificates) != 1 || cfg.RootCAs == nil {
		t.Errorf("mTLS config: %d certificates, roots %v", len(cfg.Certificates), cfg.RootCAs)
	}
	// The roots must verify the server's leaf: the config trusts the server Secret's CA.
	leaf, _ := pem.Decode(server[pki.KeyCert])
	parsed, _ := x509.ParseCertificate(leaf.Bytes)
	if _, err := parsed.Verify(x509.VerifyOptions{Roots: cfg.RootCAs, DNSName: "localhost"}); err != nil {
		t.Errorf("server leaf does not verify against the config's roots: %v", err)
	}

	cfg, err = BuildClientConfig(server, nil)
	if err != nil || len(cfg.Certificates) != 0 {
		t.Errorf("server-only TLS: %v, %d certificates", err, len(cfg.Certificates))
	}
	if _, err := BuildClientConfig(map[string][]byte{}, nil); err == nil || !strings.Contains(err.Error(), "ca.crt") {
		t.Errorf("no ca.crt: %v", err)
	}
	bad := map[string][]byte{pki.KeyCert: client[pki.KeyCert], pki.KeyKey: server[pki.KeyKey]}
	if _, err := BuildClientConfig(server, bad); err == nil || !strings.Contains(err.Error(), "operator-client") {
		t.Errorf("mismatched client key pair: %v", err)
	}
}

// ClientConfig reads the active copies (what the members follow) and keeps one pointer until
// one of them changes: the Pool's fingerprint depends on it.
func TestClientConfigCachedPerResourceVersion(t *testing.T) {
	ca := pkitest.NewCA(t, "test-ca")
	c := mtlsCluster()
	cl := newClient(t,
		secret(v1alpha2.ActiveServerSecretName("etcd"), ca.SecretData(t, []string{"localhost"}, nil, both...)),
		secret(v1alpha2.ActiveOperatorClientSecretName("etcd"), ca.SecretData(t, nil, nil, x509.ExtKeyUsageClientAuth)))
	src := NewSource(cl, nil)
	ctx := context.Background()
	first, err := src.ClientConfig(ctx, c)
	if err != nil || first == nil {
		t.Fatalf("first: %v %v", first, err)
	}
	again, _ := src.ClientConfig(ctx, c)
	if again != first {
		t.Error("unchanged Secrets gave a new tls.Config")
	}
	s := &corev1.Secret{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "ns", Name: v1alpha2.ActiveOperatorClientSecretName("etcd")}, s); err != nil {
		t.Fatal(err)
	}
	s.Data = ca.SecretData(t, nil, nil, x509.ExtKeyUsageClientAuth)
	if err := cl.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	renewed, err := src.ClientConfig(ctx, c)
	if err != nil || renewed == first {
		t.Errorf("a renewed operator-client Secret kept the old tls.Config (err %v)", err)
	}
	src.Forget("ns", "etcd")
	if after, _ := src.ClientConfig(ctx, c); after == renewed {
		t.Error("Forget kept the cached tls.Config")
	}
	plain := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	if cfg, err := src.ClientConfig(ctx, plain); cfg != nil || err != nil {
		t.Errorf("plaintext cluster: %v %v", cfg, err)
	}
}

// Unlabelled (BYO) Secrets are not in the label-selected cache; the API reader finds them.
func TestSecretFallsBackToAPIReader(t *testing.T) {
	ca := pkitest.NewCA(t, "test-ca")
	api := newClient(t, secret("byo", ca.SecretData(t, []string{"localhost"}, nil, both...)))
	src := NewSource(newClient(t), api)
	if _, err := src.Secret(context.Background(), "ns", "byo"); err != nil {
		t.Errorf("BYO Secret through the API reader: %v", err)
	}
	_, err := src.Secret(context.Background(), "ns", "absent")
	var missing *MissingSecretError
	if !errors.As(err, &missing) || missing.Name != "absent" {
		t.Errorf("absent Secret: %v", err)
	}
}

func member(tls *v1alpha2.MemberTLS) *v1alpha2.EtcdMember {
	return &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "etcd-abcde", Namespace: "ns"},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: "etcd", TLS: tls}}
}

// noBundle marks the case whose member has no trust bundle yet; every other case has one.
const noBundle = "none"

func withBundle(b string) string {
	if b == noBundle {
		return ""
	}
	return "etcd-trust-1"
}

func TestCheckMember(t *testing.T) {
	ca := pkitest.NewCA(t, "test-ca")
	ref := pki.ClusterRef{Name: "etcd", Namespace: "ns"}
	all := pki.ServerNames(ref)
	servicesOnly := pkitest.WithoutMemberNames(all)
	host := v1alpha2.MemberHost("etcd-abcde", "etcd", "ns")
	cl := newClient(t,
		secret("good", ca.SecretData(t, all.DNS, all.IPs, both...)),
		secret("no-members", ca.SecretData(t, servicesOnly, all.IPs, both...)),
		secret("server-only", ca.SecretData(t, all.DNS, all.IPs, x509.ExtKeyUsageServerAuth)))
	src := NewSource(cl, nil)
	ref2 := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	for _, tc := range []struct {
		name string
		tls  *v1alpha2.MemberTLS
		want string // "" ok, "missing", or a substring of the validation error
	}{
		{"no TLS", nil, ""},
		{"wildcard covers the member", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("good"), PeerSecretRef: ref2("good"), ClientMTLS: true}, ""},
		{"server lacks the member name", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("no-members")}, host},
		{"peer lacks the member name", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("good"), PeerSecretRef: ref2("no-members")}, `peer certificate (Secret "no-members")`},
		{"server auth is enough without mTLS", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("server-only")}, ""},
		{"mTLS needs client auth on the server certificate", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("server-only"), ClientMTLS: true}, "client auth"},
		{"peer needs client auth", &v1alpha2.MemberTLS{PeerSecretRef: ref2("server-only")}, "client auth"},
		{"Secret not there yet", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("absent")}, "missing"},
		{"trust bundle not there yet", &v1alpha2.MemberTLS{ClientServerSecretRef: ref2("good"), TrustBundle: noBundle}, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tls != nil {
				tc.tls.TrustBundle = withBundle(tc.tls.TrustBundle)
			}
			err := src.CheckMember(context.Background(), member(tc.tls), "")
			var missing *MissingSecretError
			_, invalid := pki.AsValidationError(err)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("want ok, got %v", err)
			case tc.want == "missing" && !errors.As(err, &missing):
				t.Errorf("want a missing Secret, got %v", err)
			case tc.want != "" && tc.want != "missing" && (!invalid || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("want a validation error naming %q, got %v", tc.want, err)
			}
		})
	}
}

func TestCacheByObjectSelectsClusterLabel(t *testing.T) {
	by := CacheByObject()
	if len(by) != 2 {
		t.Fatalf("%d entries, want Secrets and ConfigMaps", len(by))
	}
	for obj, o := range by {
		switch obj.(type) {
		case *corev1.Secret, *corev1.ConfigMap:
		default:
			t.Errorf("restricts %T, want Secrets and ConfigMaps", obj)
		}
		if o.Label.String() != v1alpha2.LabelCluster {
			t.Errorf("selector %q, want existence of %s", o.Label.String(), v1alpha2.LabelCluster)
		}
	}
}
