package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// startEtcdClientTLS runs a one-member etcd with client mTLS (the operator's flags) and, when
// plaintextToo, a plaintext listener on the same port. It returns the advertised https URL.
func startEtcdClientTLS(t *testing.T, ca *pkitest.CA, plaintextToo bool) string {
	dir := t.TempDir()
	for name, data := range ca.SecretData(t, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, pkitest.ServerAndClient...) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	listen := fmt.Sprintf("https://127.0.0.1:%d", port)
	if plaintextToo {
		listen = fmt.Sprintf("http://127.0.0.1:%d,https://127.0.0.1:%d", port, port)
	}
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	advertise := fmt.Sprintf("https://127.0.0.1:%d", port)
	cmd := exec.Command(etcdBinary(t), "--name=m1", "--data-dir="+t.TempDir(),
		"--listen-client-urls="+listen, "--advertise-client-urls="+advertise,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=m1="+peer, "--initial-cluster-state=new", "--log-level=error",
		"--cert-file="+filepath.Join(dir, "tls.crt"), "--key-file="+filepath.Join(dir, "tls.key"),
		"--client-cert-auth=true", "--trusted-ca-file="+filepath.Join(dir, "ca.crt"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return advertise
}

func clientTLS(t *testing.T, ca *pkitest.CA) *tls.Config {
	pair := ca.ClientSecretData(t, "etcd-operator")
	cert, err := tls.X509KeyPair(pair["tls.crt"], pair["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// The phase "both" of adding client TLS to a running cluster, against a real etcd: with http
// and https listed on one port, etcd serves a plaintext client and an mTLS client alike, and
// the pool reaches the advertised https URL in plaintext when its target has no TLS. Once the
// plaintext listener is gone, plaintext is refused and TLS still works.
func TestPlaintextAndTLSOnOnePort(t *testing.T) {
	ca := pkitest.NewCA(t, "client-ca")
	for _, tc := range []struct {
		name           string
		plaintextToo   bool
		plaintextWorks bool
	}{{"both", true, true}, {"tls only", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ep := startEtcdClientTLS(t, ca, tc.plaintextToo)
			pool := NewPool()
			defer pool.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			secure, err := pool.Client(ctx, Target{Key: "ns/tls", Endpoints: []string{ep}, TLS: clientTLS(t, ca)})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, ctx, func() (EndpointStatus, error) { return secure.Status(ctx, ep) })

			plain, err := pool.Client(ctx, Target{Key: "ns/plain", Endpoints: []string{ep}})
			if err != nil {
				t.Fatal(err)
			}
			short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
			defer cancelShort()
			_, listErr := plain.MemberList(short)
			_, statusErr := plain.Status(short, ep)
			if tc.plaintextWorks && (listErr != nil || statusErr != nil) {
				t.Errorf("plaintext beside TLS on one port: MemberList %v, Status(%s) %v", listErr, ep, statusErr)
			}
			if !tc.plaintextWorks && (listErr == nil || statusErr == nil) {
				t.Errorf("plaintext to a TLS-only member: MemberList %v, Status %v; want refused", listErr, statusErr)
			}
		})
	}
}
