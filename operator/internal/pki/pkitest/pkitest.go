// Package pkitest issues throwaway certificates for tests: a CA and leaves signed by it, in
// the shape of a kubernetes.io/tls Secret's data (tls.crt, tls.key, ca.crt).
package pkitest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// ServerAndClient are the usages of etcd's server and peer certificates.
var ServerAndClient = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}

// CA signs leaves; it is valid for a day around now.
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
	// newKey makes the keys of the CA and its leaves.
	newKey func(testing.TB) crypto.Signer
	// PEM is the CA certificate, the ca.crt of the Secrets it signs.
	PEM []byte
}

// NewCA creates a self-signed ECDSA P-256 CA, whose leaves get P-256 keys too.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	return newCA(t, cn, func(t testing.TB) crypto.Signer { return newKey(t) })
}

// NewRSACA creates a self-signed RSA CA whose leaves get RSA keys of the same size, written in
// PKCS#1 as cert-manager writes them (Cozystack's etcd app: 4096 bits).
func NewRSACA(t testing.TB, cn string, bits int) *CA {
	t.Helper()
	return newCA(t, cn, func(t testing.TB) crypto.Signer {
		key, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			t.Fatal(err)
		}
		return key
	})
}

func newCA(t testing.TB, cn string, newKey func(testing.TB) crypto.Signer) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, newKey: newKey, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// SecretData issues a leaf with these SANs and extended usages and returns it as TLS Secret
// data, with the CA as ca.crt.
func (ca *CA) SecretData(t testing.TB, dns []string, ips []net.IP, usages ...x509.ExtKeyUsage) map[string][]byte {
	t.Helper()
	return ca.leaf(t, "leaf", dns, ips, usages, 24*time.Hour)
}

// SecretDataValidFor is SecretData with a leaf valid for lifetime (SecretData's: 24 h, which
// alerting on certificates about to expire rightly reports).
func (ca *CA) SecretDataValidFor(t testing.TB, lifetime time.Duration, dns []string, ips []net.IP, usages ...x509.ExtKeyUsage) map[string][]byte {
	t.Helper()
	return ca.leaf(t, "leaf", dns, ips, usages, lifetime)
}

// ClientSecretData issues a client certificate (no SANs) with common name cn, e.g. "root":
// under client-cert-auth, etcd takes the CN as the user of a request without a token.
func (ca *CA) ClientSecretData(t testing.TB, cn string) map[string][]byte {
	t.Helper()
	return ca.leaf(t, cn, nil, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, 24*time.Hour)
}

func (ca *CA) leaf(t testing.TB, cn string, dns []string, ips []net.IP, usages []x509.ExtKeyUsage, lifetime time.Duration) map[string][]byte {
	t.Helper()
	key := ca.newKey(t)
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(lifetime),
		DNSNames: dns, IPAddresses: ips, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usages}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{
		pki.KeyCert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pki.KeyKey:  keyPEM(t, key),
		pki.KeyCA:   ca.PEM,
	}
}

// keyPEM is PKCS#1 for RSA keys (cert-manager's default encoding), PKCS#8 otherwise.
func keyPEM(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	if k, ok := key.(*rsa.PrivateKey); ok {
		return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// SignCSR is what an external issuer does with a CertificateRequest: it issues the PEM CSR's
// key, subject and SANs for lifetime, with etcd's server and client usages.
func (ca *CA) SignCSR(t testing.TB, csrPEM []byte, lifetime time.Duration) []byte {
	t.Helper()
	b, _ := pem.Decode(csrPEM)
	if b == nil {
		t.Fatal("the request holds no PEM CSR")
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := csr.CheckSignature(); err != nil {
		t.Fatalf("CSR signature: %v", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: serial(t), Subject: csr.Subject, NotBefore: now, NotAfter: now.Add(lifetime),
		DNSNames: csr.DNSNames, IPAddresses: csr.IPAddresses, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: ServerAndClient}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, csr.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// WithoutMemberNames are the DNS names of n except the member wildcards: a certificate with
// them covers both Services and loopback but no member.
func WithoutMemberNames(n pki.Names) []string {
	var out []string
	for _, d := range n.DNS {
		if len(d) < 2 || d[:2] != "*." {
			out = append(out, d)
		}
	}
	return out
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t testing.TB) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
