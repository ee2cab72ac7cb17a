//go:build e2e

package e2eutil

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// TLSConfig is the configuration a client of a TLS cluster uses: it trusts the server Secret's
// ca.crt and, when clientSecret is not empty, presents that Secret's key pair (the operator's
// own builder, so the test dials the way the operator does).
func TLSConfig(t testing.TB, c *framework.Cluster, ns, serverSecret, clientSecret string) *tls.Config {
	t.Helper()
	server := secretData(t, c, ns, serverSecret)
	var clientData map[string][]byte
	if clientSecret != "" {
		clientData = secretData(t, c, ns, clientSecret)
	}
	cfg, err := tlsmaterial.BuildClientConfig(server, clientData)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func secretData(t testing.TB, c *framework.Cluster, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	return s.Data
}

// WaitSecret waits until a Secret exists (e.g. cert-manager issued it).
func WaitSecret(t testing.TB, c *framework.Cluster, ns, name string, timeout time.Duration) time.Duration {
	t.Helper()
	return WaitFor(t, timeout, fmt.Sprintf("Secret %s/%s", ns, name), func() bool {
		return c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}) == nil
	})
}

// TLSEtcdClient talks to the cluster's client Service over https with cfg; it is closed with
// the test.
func TLSEtcdClient(t testing.TB, c *framework.Cluster, ns, name string, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	dial := ClusterDialer(c)
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{"https://" + resources.ClientServiceName(name) + "." + ns + ".svc:2379"},
		DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: cfg,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return dial(ctx, "tcp", a) })},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// WaitConvergedTLS is WaitConverged for a cluster whose client plane is TLS.
func WaitConvergedTLS(t testing.TB, c *framework.Cluster, ns, name string, n int, cfg *tls.Config, timeout time.Duration) time.Duration {
	t.Helper()
	cli := TLSEtcdClient(t, c, ns, name, cfg)
	return WaitFor(t, timeout, fmt.Sprintf("TLS cluster %s/%s converged at %d", ns, name, n), func() bool {
		return convergedWith(t, c, ns, name, n, func() (*clientv3.MemberListResponse, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return cli.MemberList(ctx)
		})
	})
}
