//go:build e2e

package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testPKI is a CA with a kubelet serving certificate and a client certificate (the apiserver's).
type testPKI struct {
	caFile, certFile, keyFile string
	client                    tls.Certificate
	pool                      *x509.CertPool
}

func newTestPKI(t *testing.T, serverIP string) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, caCert := issue(t, nil, nil, &x509.Certificate{Subject: pkix.Name{CommonName: "test-ca"}, IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true})
	srvKey, srvCert := issue(t, caKey, caCert, &x509.Certificate{Subject: pkix.Name{CommonName: "kubelet"},
		IPAddresses: []net.IP{net.ParseIP(serverIP)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	cliKey, cliCert := issue(t, caKey, caCert, &x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	p := testPKI{caFile: filepath.Join(dir, "ca.crt"), certFile: filepath.Join(dir, "kubelet.crt"), keyFile: filepath.Join(dir, "kubelet.key")}
	writePEM(t, p.caFile, "CERTIFICATE", caCert.Raw)
	writePEM(t, p.certFile, "CERTIFICATE", srvCert.Raw)
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	writePEM(t, p.keyFile, "EC PRIVATE KEY", keyDER)
	p.client = tls.Certificate{Certificate: [][]byte{cliCert.Raw}, PrivateKey: cliKey}
	p.pool = x509.NewCertPool()
	p.pool.AddCert(caCert)
	return p
}

func issue(t *testing.T, parentKey *ecdsa.PrivateKey, parent, tmpl *x509.Certificate) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Minute), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return key, cert
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
