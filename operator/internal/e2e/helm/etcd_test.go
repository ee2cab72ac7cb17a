//go:build e2e

package helm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// clientEndpoint is the cluster's client Service by the name the chart's server certificate
// covers (<cluster>-client.<ns>.svc.<clusterDomain>), with scheme https or http.
func clientEndpoint(c *framework.Cluster, scheme, ns, name string) string {
	return scheme + "://" + name + "-client." + ns + ".svc." + c.ClusterDomain() + ":2379"
}

// chartTLSConfig is what a tenant's application would use: it trusts the CA in the chart's server
// Secret and, when clientSecret is not empty, presents that Secret's key pair (the chart's
// client Certificate, CN root). The Secrets are cert-manager's kubernetes.io/tls ones.
func chartTLSConfig(t *testing.T, c *framework.Cluster, ns, serverSecret, clientSecret string) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	if ca := secretData(t, c, ns, serverSecret)["ca.crt"]; !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("Secret %s/%s: ca.crt holds no PEM certificate", ns, serverSecret)
	}
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if clientSecret != "" {
		d := secretData(t, c, ns, clientSecret)
		pair, err := tls.X509KeyPair(d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey])
		if err != nil {
			t.Fatalf("Secret %s/%s: %v", ns, clientSecret, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func secretData(t *testing.T, c *framework.Cluster, ns, name string) map[string][]byte {
	t.Helper()
	var s corev1.Secret
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	return s.Data
}

// etcdClient dials endpoint inside the cluster netns (CoreDNS, kube-proxy); cfg nil is plaintext.
func etcdClient(t *testing.T, c *framework.Cluster, endpoint string, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(), TLS: cfg,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return c.DialContext(ctx, "tcp", addr)
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// putGet writes a key through the cluster's client Service over TLS with cfg, reads it back
// linearizably, and checks etcd lists every member as a voter. It retries the write for a
// while: the Service's endpoints may lag the status.
func putGet(t *testing.T, c *framework.Cluster, ns, name string, cfg *tls.Config, key, value string) time.Duration {
	t.Helper()
	start := time.Now()
	endpoint := clientEndpoint(c, "https", ns, name)
	cli := etcdClient(t, c, endpoint, cfg)
	var putErr error
	e2eutil.WaitSeen(t, time.Minute, "a write through "+endpoint, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, putErr = cli.Put(ctx, key, value)
		return putErr == nil, "put: " + errString(putErr)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		t.Fatalf("get %s: %v %v, want %q", key, err, resp, value)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	voters := 0
	for _, m := range list.Members {
		if !m.IsLearner {
			voters++
		}
	}
	if voters != etcdReplicas || len(list.Members) != etcdReplicas {
		t.Errorf("etcd lists %d members (%d voters), want %d voters", len(list.Members), voters, etcdReplicas)
	}
	return time.Since(start)
}

// refused checks that a write with cfg (nil: plaintext) through endpoint fails. Called after a
// TLS write succeeded, so the failure is the server refusing that client, not an unreachable
// Service.
func refused(t *testing.T, c *framework.Cluster, endpoint string, cfg *tls.Config, who string) {
	t.Helper()
	cli := etcdClient(t, c, endpoint, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/e2e/helm/refused", who); err == nil {
		t.Errorf("%s wrote through %s; want it refused", who, endpoint)
	} else {
		t.Logf("%s refused as expected: %v", who, err)
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
