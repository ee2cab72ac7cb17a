package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"
)

// testNow is the instant validation runs at in tests; certificates are valid around it.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// issued is a certificate with its key, as a test CA or leaf.
type issued struct {
	cert *x509.Certificate
	key  crypto.Signer
	pem  []byte
}

func (i issued) keyPEM(t *testing.T) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(i.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// leafSpec describes a certificate to issue; zero validity means a year around testNow.
type leafSpec struct {
	cn        string
	dns       []string
	ips       []net.IP
	usages    []x509.ExtKeyUsage
	notBefore time.Time
	notAfter  time.Time
	isCA      bool
}

var serial int64

// issue signs spec with parent (nil parent: self-signed).
func issue(t *testing.T, spec leafSpec, parent *issued) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if spec.notBefore.IsZero() {
		spec.notBefore = testNow.Add(-180 * 24 * time.Hour)
	}
	if spec.notAfter.IsZero() {
		spec.notAfter = testNow.Add(180 * 24 * time.Hour)
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: spec.cn},
		DNSNames:     spec.dns,
		IPAddresses:  spec.ips,
		ExtKeyUsage:  spec.usages,
		NotBefore:    spec.notBefore,
		NotAfter:     spec.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if spec.isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	signerCert, signerKey := tmpl, crypto.Signer(key)
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return issued{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func newCA(t *testing.T, cn string) issued {
	t.Helper()
	return issue(t, leafSpec{cn: cn, isCA: true}, nil)
}

var bothUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
