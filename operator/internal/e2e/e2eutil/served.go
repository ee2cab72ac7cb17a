//go:build e2e

package e2eutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// LeafSerial is the serial of the leaf in a Secret's tls.crt.
func LeafSerial(t *testing.T, c *framework.Cluster, ns, secret string) *big.Int {
	t.Helper()
	block, _ := pem.Decode(SecretData(t, c, ns, secret)[pki.KeyCert])
	if block == nil {
		t.Fatalf("Secret %s has no PEM in %s", secret, pki.KeyCert)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

// Served is the leaf a member presents on port, verified against the plane's CA for the
// member's own DNS name (so the SANs are checked too); cfg carries the client certificate.
func Served(c *framework.Cluster, pod *corev1.Pod, host string, port int, cfg *tls.Config) (*x509.Certificate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := c.DialContext(ctx, "tcp", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)))
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	cfg = cfg.Clone()
	cfg.ServerName = host
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return conn.ConnectionState().PeerCertificates[0], nil
}

// WaitServed waits until every member presents on port the leaf the Secret holds now. The
// Secret is re-read at each poll: should cert-manager issue once more while the test waits,
// the members must serve the newest leaf, and the failure says which serials each one served.
func WaitServed(t *testing.T, c *framework.Cluster, ns, cluster string, timeout time.Duration, port int, cfg *tls.Config, secret string) (*big.Int, time.Duration) {
	t.Helper()
	var want *big.Int
	issued := map[string]bool{}
	took := WaitNoError(t, timeout, fmt.Sprintf("the leaf of Secret %s served on :%d by every member", secret, port), func() error {
		want = LeafSerial(t, c, ns, secret)
		issued[fmt.Sprintf("%x", want)] = true
		var stale []string
		for _, m := range Members(t, c, ns, cluster) {
			pod := Pod(t, c, ns, m.Name)
			if pod == nil {
				stale = append(stale, m.Name+": no Pod")
				continue
			}
			cert, err := Served(c, pod, v1alpha2.MemberHost(m.Name, cluster, ns), port, cfg)
			switch {
			case err != nil:
				stale = append(stale, fmt.Sprintf("%s: %v", m.Name, err))
			case cert.SerialNumber.Cmp(want) != 0:
				stale = append(stale, fmt.Sprintf("%s: serial %x", m.Name, cert.SerialNumber))
			}
		}
		if len(stale) > 0 {
			return fmt.Errorf("want serial %x (serials the Secret held while waiting: %v); %s", want, slices.Sorted(maps.Keys(issued)), strings.Join(stale, "; "))
		}
		return nil
	})
	if len(issued) > 1 {
		t.Logf("Secret %s changed %d times while the members picked it up: %v", secret, len(issued)-1, slices.Sorted(maps.Keys(issued)))
	}
	return want, took
}
