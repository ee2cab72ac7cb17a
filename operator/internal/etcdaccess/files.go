package etcdaccess

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Files is how a process without API access (an agent in a Pod) reaches a cluster: endpoints
// and the TLS material and credentials mounted into it.
type Files struct {
	// Endpoints are member client URLs; the client balances over them.
	Endpoints []string
	// CAFile is the CA bundle to trust (the active server Secret's ca.crt); empty: plaintext.
	CAFile string
	// CertFile and KeyFile are a client key pair for mTLS (empty without).
	CertFile, KeyFile string
	// Username and Password log in once auth is on (empty: anonymous).
	Username, Password string
}

// DialFiles returns a standalone (unpooled) client; close it when done.
func DialFiles(_ context.Context, f Files) (etcd.Client, error) {
	target := etcd.Target{Endpoints: f.Endpoints, Username: f.Username, Password: f.Password}
	if f.CAFile != "" {
		cfg, err := filesTLS(f)
		if err != nil {
			return nil, err
		}
		target.TLS = cfg
	}
	return etcd.Dial(target, nil)
}

func filesTLS(f Files) (*tls.Config, error) {
	ca, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("etcd CA: %w", err)
	}
	var client map[string][]byte
	if f.CertFile != "" {
		cert, err := os.ReadFile(f.CertFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		key, err := os.ReadFile(f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client key: %w", err)
		}
		client = map[string][]byte{"tls.crt": cert, "tls.key": key}
	}
	return tlsmaterial.BuildClientConfig(map[string][]byte{"ca.crt": ca}, client)
}

// DialWith returns a standalone client of a cluster the operator has no objects for yet (a
// legacy cluster etcd-migrate inspects), every connection through dial; close it when done.
func DialWith(_ context.Context, endpoints []string, cfg *tls.Config, dial topology.DialFunc) (etcd.Client, error) {
	return etcd.Dial(etcd.Target{Endpoints: endpoints, TLS: cfg}, dial)
}
