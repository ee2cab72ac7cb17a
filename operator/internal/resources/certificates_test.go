package resources

import (
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/internal/golden"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

func tlsCluster(mod func(*v1alpha2.EtcdCluster)) *v1alpha2.EtcdCluster {
	c := &v1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "tenant-a", UID: "0b6f7a54-0000-4000-8000-000000000001"},
		Spec: v1alpha2.EtcdClusterSpec{Version: "3.6.16", TLS: &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{
				ServerIssuerRef:         v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"},
				OperatorClientIssuerRef: &v1alpha2.IssuerReference{Name: "etcd-ca", Kind: "Issuer"},
			}},
			Peer: &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{
				IssuerRef: v1alpha2.IssuerReference{Name: "peer-ca", Kind: "ClusterIssuer"},
			}},
		}},
	}
	if mod != nil {
		mod(c)
	}
	return c
}

func TestCertificatesGolden(t *testing.T) {
	withAuth := tlsCluster(func(c *v1alpha2.EtcdCluster) {
		c.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "root"}}
		c.Spec.AdditionalMetadata = &v1alpha2.AdditionalMetadata{
			Labels:      map[string]string{"team": "a", v1alpha2.LabelCluster: "spoofed"},
			Annotations: map[string]string{"note": "kept"},
		}
	})
	rsa := Settings{
		Duration:     &metav1.Duration{Duration: 720 * time.Hour},
		RenewBefore:  &metav1.Duration{Duration: 240 * time.Hour},
		KeyAlgorithm: cmapi.RSAKeyAlgorithm,
	}
	external := IssuerRef{Name: "vault-pki", Kind: "VaultIssuer", Group: "pki.example.com"}
	tests := []struct {
		name string
		cert *cmapi.Certificate
	}{
		{"server-default", ServerCertificate(tlsCluster(nil), "cozy.local", IssuerRef{Name: "etcd-ca"}, Settings{})},
		{"server-rsa-external-issuer", ServerCertificate(tlsCluster(nil), "", external, rsa)},
		{"peer-clusterissuer", PeerCertificate(tlsCluster(nil), "cluster.local", IssuerRef{Name: "peer-ca", Kind: "ClusterIssuer"}, Settings{KeyAlgorithm: cmapi.Ed25519KeyAlgorithm})},
		{"operator-client", OperatorClientCertificate(tlsCluster(nil), IssuerRef{Name: "etcd-ca", Kind: "Issuer"}, Settings{})},
		{"operator-client-auth-root", OperatorClientCertificate(withAuth, IssuerRef{Name: "etcd-ca", Kind: "Issuer"}, rsa)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { golden.Assert(t, "certificate-"+tt.name, tt.cert) })
	}
}

func TestDesiredCertificates(t *testing.T) {
	byo := &corev1.LocalObjectReference{Name: "byo"}
	tests := []struct {
		name    string
		cluster *v1alpha2.EtcdCluster
		want    []string // Certificate name/issuer group/issuer kind/issuer name
		secrets pki.SecretNames
	}{{
		name:    "plaintext",
		cluster: tlsCluster(func(c *v1alpha2.EtcdCluster) { c.Spec.TLS = nil }),
	}, {
		name:    "both planes, mTLS",
		cluster: tlsCluster(nil),
		want:    []string{"etcd-server//Issuer/etcd-ca", "etcd-operator-client//Issuer/etcd-ca", "etcd-peer//ClusterIssuer/peer-ca"},
		secrets: pki.SecretNames{Server: "etcd-server-tls", OperatorClient: "etcd-operator-client-tls", Peer: "etcd-peer-tls"},
	}, {
		name: "client without mTLS, kind defaulted",
		cluster: tlsCluster(func(c *v1alpha2.EtcdCluster) {
			c.Spec.TLS.Client.CertManager = &v1alpha2.ClientCertManager{ServerIssuerRef: v1alpha2.IssuerReference{Name: "ca"}}
			c.Spec.TLS.Peer = nil
		}),
		want:    []string{"etcd-server//Issuer/ca"},
		secrets: pki.SecretNames{Server: "etcd-server-tls"},
	}, {
		name: "BYO client, cert-manager peer",
		cluster: tlsCluster(func(c *v1alpha2.EtcdCluster) {
			c.Spec.TLS.Client = &v1alpha2.ClientTLS{ServerSecretRef: byo, OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "op"}}
		}),
		want:    []string{"etcd-peer//ClusterIssuer/peer-ca"},
		secrets: pki.SecretNames{Server: "byo", OperatorClient: "op", Peer: "etcd-peer-tls"},
	}, {
		name: "external issuer group, cert-manager.io spelled out",
		cluster: tlsCluster(func(c *v1alpha2.EtcdCluster) {
			c.Spec.TLS.Client.CertManager.ServerIssuerRef = v1alpha2.IssuerReference{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}
			c.Spec.TLS.Client.CertManager.OperatorClientIssuerRef.Group = "cert-manager.io"
		}),
		want:    []string{"etcd-server/awspca.cert-manager.io/AWSPCAClusterIssuer/pca", "etcd-operator-client//Issuer/etcd-ca", "etcd-peer//ClusterIssuer/peer-ca"},
		secrets: pki.SecretNames{Server: "etcd-server-tls", OperatorClient: "etcd-operator-client-tls", Peer: "etcd-peer-tls"},
	}, {
		name: "BYO both",
		cluster: tlsCluster(func(c *v1alpha2.EtcdCluster) {
			c.Spec.TLS.Client = &v1alpha2.ClientTLS{ServerSecretRef: byo}
			c.Spec.TLS.Peer = &v1alpha2.PeerTLS{SecretRef: byo}
		}),
		secrets: pki.SecretNames{Server: "byo", Peer: "byo"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range DesiredCertificates(tt.cluster, "cluster.local") {
				r := c.Spec.IssuerRef
				got = append(got, c.Name+"/"+r.Group+"/"+r.Kind+"/"+r.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("certificates %q, want %q", got, tt.want)
			}
			if s := pki.SecretsOf(tt.cluster); s != tt.secrets {
				t.Errorf("pki.SecretsOf = %+v, want %+v", s, tt.secrets)
			}
		})
	}
}

func TestNeedsUpdate(t *testing.T) {
	issuer := IssuerRef{Name: "ca"}
	base := ServerCertificate(tlsCluster(nil), "cluster.local", issuer, Settings{})
	existing := base.DeepCopy()
	existing.Labels["added-by-user"] = "x" // extra labels are the user's business
	existing.Status.Revision = new(int)
	tests := []struct {
		name    string
		desired *cmapi.Certificate
		want    bool
	}{
		{"unchanged", base, false},
		{"cluster domain changed", ServerCertificate(tlsCluster(nil), "cozy.local", issuer, Settings{}), true},
		{"issuer changed", ServerCertificate(tlsCluster(nil), "cluster.local", IssuerRef{Name: "ca2"}, Settings{}), true},
		{"renewBefore set", ServerCertificate(tlsCluster(nil), "cluster.local", issuer, Settings{RenewBefore: &metav1.Duration{Duration: time.Hour}}), true},
		{"owned label drifted", func() *cmapi.Certificate {
			d := base.DeepCopy()
			d.Labels[v1alpha2.LabelAppManagedBy] = "someone-else"
			return d
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NeedsUpdate(existing, tt.desired); got != tt.want {
				t.Errorf("NeedsUpdate = %v, want %v", got, tt.want)
			}
		})
	}
}

// spec.tls.certificateTemplate reaches every emitted Certificate, and a changed template makes
// each of them need an update (the controller then updates it and cert-manager re-issues).
func TestCertificateTemplateAppliesToEveryCertificate(t *testing.T) {
	tpl := &v1alpha2.CertificateTemplate{
		Duration:    &metav1.Duration{Duration: 48 * time.Hour},
		RenewBefore: &metav1.Duration{Duration: 12 * time.Hour},
		PrivateKey:  &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyRSA, Size: 3072},
	}
	before := DesiredCertificates(tlsCluster(nil), "cluster.local")
	after := DesiredCertificates(tlsCluster(func(c *v1alpha2.EtcdCluster) { c.Spec.TLS.CertificateTemplate = tpl }), "cluster.local")
	if len(after) != 3 || len(before) != 3 {
		t.Fatalf("want 3 certificates before and after, got %d and %d", len(before), len(after))
	}
	for i, c := range after {
		golden.Assert(t, "template-"+c.Name, c)
		if c.Spec.Duration.Duration != 48*time.Hour || c.Spec.RenewBefore.Duration != 12*time.Hour {
			t.Errorf("%s: duration %v renewBefore %v", c.Name, c.Spec.Duration, c.Spec.RenewBefore)
		}
		if k := c.Spec.PrivateKey; k.Algorithm != cmapi.RSAKeyAlgorithm || k.Size != 3072 {
			t.Errorf("%s: private key %s/%d, want RSA/3072", c.Name, k.Algorithm, k.Size)
		}
		if !slices.Contains(c.Spec.Usages, cmapi.UsageKeyEncipherment) {
			t.Errorf("%s: an RSA leaf lacks key encipherment: %v", c.Name, c.Spec.Usages)
		}
		if !NeedsUpdate(before[i], c) {
			t.Errorf("%s: a template change does not update the Certificate", c.Name)
		}
		if NeedsUpdate(c, after[i]) {
			t.Errorf("%s: an unchanged template updates the Certificate", c.Name)
		}
	}
}

func TestSettingsFrom(t *testing.T) {
	tests := []struct {
		name string
		tpl  *v1alpha2.CertificateTemplate
		want cmapi.CertificatePrivateKey
	}{
		{"unset", nil, cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256}},
		{"key left empty", &v1alpha2.CertificateTemplate{}, cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256}},
		{"RSA default size", &v1alpha2.CertificateTemplate{PrivateKey: &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyRSA}},
			cmapi.CertificatePrivateKey{Algorithm: cmapi.RSAKeyAlgorithm, Size: 2048}},
		{"ECDSA P-384", &v1alpha2.CertificateTemplate{PrivateKey: &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyECDSA, Size: 384}},
			cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 384}},
		{"Ed25519", &v1alpha2.CertificateTemplate{PrivateKey: &v1alpha2.PrivateKeyTemplate{Algorithm: v1alpha2.PrivateKeyEd25519}},
			cmapi.CertificatePrivateKey{Algorithm: cmapi.Ed25519KeyAlgorithm}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := SettingsFrom(tt.tpl).privateKey()
			if k.Algorithm != tt.want.Algorithm || k.Size != tt.want.Size || k.RotationPolicy != cmapi.RotationPolicyAlways {
				t.Errorf("private key %+v, want %+v with rotation Always", *k, tt.want)
			}
		})
	}
}

// What the builder asks for is what validation demands of a member: a certificate issued
// exactly as the Certificate requests (SANs and extended usages) passes for any member.
func TestEmittedCertificatesPassValidation(t *testing.T) {
	c := tlsCluster(nil)
	ca := pkitest.NewCA(t, "etcd-ca")
	ref := pki.ClusterRef{Name: c.Name, Namespace: c.Namespace, ClusterDomain: "cozy.local"}
	for _, cert := range DesiredCertificates(c, "cozy.local") {
		var ips []net.IP
		for _, ip := range cert.Spec.IPAddresses {
			ips = append(ips, net.ParseIP(ip))
		}
		leaf := ca.SecretData(t, cert.Spec.DNSNames, ips, extUsages(cert.Spec.Usages)...)
		host := v1alpha2.MemberHost("etcd-q8x2m", c.Name, c.Namespace)
		client := pki.PeerClientNames(ref, "etcd-q8x2m")
		for _, h := range []string{host, host + ".cozy.local"} { // either form a member is registered under
			var r pki.Requirement
			switch cert.Name {
			case v1alpha2.ServerCertificateName(c.Name):
				r = pki.Requirement{Names: pki.DialedNames(h), Usages: []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth}}
			case v1alpha2.PeerCertificateName(c.Name):
				r = pki.Requirement{Names: pki.DialedNames(h), PeerClient: &client, Usages: []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth}}
			default:
				r = pki.Requirement{Usages: []pki.Usage{pki.UsageClientAuth}}
			}
			r.What = cert.Name
			if err := pki.Validate(leaf[pki.KeyCert], ca.PEM, r); err != nil {
				t.Error(err)
			}
		}
	}
}

func extUsages(us []cmapi.KeyUsage) []x509.ExtKeyUsage {
	var out []x509.ExtKeyUsage
	for _, u := range us {
		switch u {
		case cmapi.UsageServerAuth:
			out = append(out, x509.ExtKeyUsageServerAuth)
		case cmapi.UsageClientAuth:
			out = append(out, x509.ExtKeyUsageClientAuth)
		}
	}
	return out
}

func TestCommonNameLimit(t *testing.T) {
	long := tlsCluster(func(c *v1alpha2.EtcdCluster) {
		c.Name = "a-cluster-name-that-is-quite-long-but-still-a-valid-kubernetes-nm"
	})
	cn := OperatorClientCertificate(long, IssuerRef{Name: "ca"}, Settings{}).Spec.CommonName
	if len(cn) != maxCommonName {
		t.Errorf("CN %q has %d characters, want it cut to %d", cn, len(cn), maxCommonName)
	}
}
