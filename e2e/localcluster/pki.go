package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certSpec describes one leaf certificate signed by the cluster CA.
type certSpec struct {
	File   string // base name: File.crt / File.key in the PKI folder
	CN     string
	Orgs   []string
	IPs    []string
	DNS    []string
	Server bool
	Client bool
}

// apiServerSANs are the names clients use for the apiserver: the host forwarder
// (127.0.0.1), the bridge address, the kubernetes Service and its DNS names.
func apiServerSANs(domain string) (ips, dns []string) {
	ips = []string{"127.0.0.1", GatewayIP, KubernetesSvc}
	dns = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + domain}
	return ips, dns
}

// certSpecs lists every leaf certificate of a cluster with the given node count.
func certSpecs(cluster, domain string, nodes int) []certSpec {
	ips, dns := apiServerSANs(domain)
	specs := []certSpec{
		{File: "apiserver", CN: "kube-apiserver", IPs: ips, DNS: dns, Server: true},
		{File: "admin", CN: "lc-admin", Orgs: []string{"system:masters"}, Client: true},
		{File: "controller-manager", CN: "system:kube-controller-manager", Client: true},
		{File: "scheduler", CN: "system:kube-scheduler", Client: true},
		{File: "kube-proxy", CN: "system:kube-proxy", Orgs: []string{"system:node-proxier"}, Client: true},
		{File: "apiserver-kubelet-client", CN: "kube-apiserver-kubelet-client", Orgs: []string{"system:masters"}, Client: true},
	}
	for i := 1; i <= nodes; i++ {
		node := NodeName(cluster, i)
		// The node agent is trusted like an admin: it creates pod netns, reads every
		// Secret/ConfigMap its pods mount and needs no Node authorizer set-up.
		specs = append(specs,
			certSpec{File: fmt.Sprintf("node-%d", i), CN: "system:node:" + node,
				Orgs: []string{"system:nodes", "system:masters"}, Client: true},
			certSpec{File: fmt.Sprintf("node-%d-serving", i), CN: node, IPs: []string{NodeIP(i)},
				DNS: []string{node}, Server: true})
	}
	return specs
}

// CA is the cluster's certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

func newSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func newCA(cluster string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          newSerial(),
		Subject:               pkix.Name{CommonName: "lc-" + cluster + "-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &CA{Cert: cert, Key: key}, err
}

// issue signs a leaf for spec and returns PEM cert and key.
func (ca *CA) issue(spec certSpec) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: newSerial(),
		Subject:      pkix.Name{CommonName: spec.CN, Organization: spec.Orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		DNSNames:     spec.DNS,
	}
	for _, ip := range spec.IPs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = encodeKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, err
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writePKI creates the CA, every leaf of certSpecs and the service-account key pair in dir.
func writePKI(dir, cluster, domain string, nodes int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newCA(cluster)
	if err != nil {
		return err
	}
	caKey, err := encodeKey(ca.Key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}),
		"ca.key": caKey,
	}
	for _, spec := range certSpecs(cluster, domain, nodes) {
		c, k, err := ca.issue(spec)
		if err != nil {
			return fmt.Errorf("issue %s: %w", spec.File, err)
		}
		files[spec.File+".crt"], files[spec.File+".key"] = c, k
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if files["sa.key"], err = encodeKey(saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
