//go:build e2e

package e2eutil

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// TLSConfig is the configuration a client of a TLS cluster uses: it trusts the server Secret's
// ca.crt and, when clientSecret is not empty, presents that Secret's key pair (the operator's
// own builder, so the test dials the way the operator does).
func TLSConfig(t testing.TB, c *framework.Cluster, ns, serverSecret, clientSecret string) *tls.Config {
	t.Helper()
	server := SecretData(t, c, ns, serverSecret)
	var clientData map[string][]byte
	if clientSecret != "" {
		clientData = SecretData(t, c, ns, clientSecret)
	}
	cfg, err := tlsmaterial.BuildClientConfig(server, clientData)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// SecretData is a Secret's data; the test fails if it cannot be read.
func SecretData(t testing.TB, c *framework.Cluster, ns, name string) map[string][]byte {
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
	cli, err := TLSEtcdClientAs(t, c, ns, name, cfg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// TLSMembersClient talks to every member of the cluster directly over https with cfg, the way
// kube-apiserver is configured (--etcd-servers lists each member): a restarted member's
// requests move to the others at once instead of waiting for the Service to drop its Pod.
func TLSMembersClient(t testing.TB, c *framework.Cluster, ns, name string, cfg *tls.Config) *clientv3.Client {
	t.Helper()
	var endpoints []string
	for _, m := range Members(t, c, ns, name) {
		endpoints = append(endpoints, "https://"+v1alpha2.MemberHost(m.Name, name, ns)+":2379")
	}
	cli, err := tlsClient(t, c, endpoints, cfg, "", "")
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// TLSEtcdClientAs is TLSEtcdClient logged in as user (no user: anonymous). clientv3 logs in
// while it is built, so a refused password is the returned error.
func TLSEtcdClientAs(t testing.TB, c *framework.Cluster, ns, name string, cfg *tls.Config, user, password string) (*clientv3.Client, error) {
	t.Helper()
	return tlsClient(t, c, []string{"https://" + v1alpha2.ClientServiceName(name, nil) + "." + ns + ".svc:2379"}, cfg, user, password)
}

// TLSMemberClientAs talks to one member only (its own client URL), logged in as user.
func TLSMemberClientAs(t testing.TB, c *framework.Cluster, ns, cluster, member string, cfg *tls.Config, user, password string) (*clientv3.Client, error) {
	t.Helper()
	return tlsClient(t, c, []string{"https://" + v1alpha2.MemberHost(member, cluster, ns) + ":2379"}, cfg, user, password)
}

// tlsClient dials endpoints inside the cluster's network; the client is closed with the test.
func tlsClient(t testing.TB, c *framework.Cluster, endpoints []string, cfg *tls.Config, user, password string) (*clientv3.Client, error) {
	conf := ClientConfig(c, endpoints...)
	conf.TLS, conf.Username, conf.Password = cfg, user, password
	cli, err := clientv3.New(conf)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, nil
}

// CreateServerSecret creates a bring-your-own server certificate Secret for the cluster that
// covers every name a member or client uses, issued by a fresh test CA, which it returns (to
// issue client certificates that members trust under mTLS).
func CreateServerSecret(t testing.TB, c *framework.Cluster, ns, secret, cluster string) *pkitest.CA {
	t.Helper()
	ca := pkitest.NewCA(t, secret+"-ca")
	all := pki.ServerNames(pki.ClusterRef{Name: cluster, Namespace: ns, ClusterDomain: c.ClusterDomain()})
	CreateTLSSecret(t, c, ns, secret, ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...))
	return ca
}

// CreateTLSSecret creates a kubernetes.io/tls Secret with data.
func CreateTLSSecret(t testing.TB, c *framework.Cluster, ns, name string, data map[string][]byte) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS, Data: data}
	if err := c.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// FindEvent is the first Event in ns about object with reason, or nil.
func FindEvent(t testing.TB, c *framework.Cluster, ns, object, reason string) *eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if e := &list.Items[i]; e.Reason == reason && e.Regarding.Name == object {
			return e
		}
	}
	return nil
}

// LogEvents logs the Events in ns since start in time order: a failed scenario's timeline.
func LogEvents(t testing.TB, c *framework.Cluster, ns string, start time.Time) {
	t.Helper()
	var list eventsv1.EventList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	for _, e := range list.Items {
		if e.EventTime.After(start) {
			t.Logf("%s %s/%s %s: %s", e.EventTime.Format("15:04:05.000"), e.Regarding.Kind, e.Regarding.Name, e.Reason, e.Note)
		}
	}
}

// WaitConvergedTLS is WaitConverged for a cluster whose client plane is TLS.
func WaitConvergedTLS(t testing.TB, c *framework.Cluster, ns, name string, n int, cfg *tls.Config, timeout time.Duration) time.Duration {
	t.Helper()
	return WaitConvergedWith(t, c, ns, name, n, TLSEtcdClient(t, c, ns, name, cfg), timeout)
}

// WaitConvergedWith is WaitConverged reading etcd's member list through cli (e.g. a client
// logged in to a cluster with auth: etcd 3.6+ lists members only to authenticated users).
func WaitConvergedWith(t testing.TB, c *framework.Cluster, ns, name string, n int, cli *clientv3.Client, timeout time.Duration) time.Duration {
	t.Helper()
	return WaitFor(t, timeout, fmt.Sprintf("cluster %s/%s converged at %d", ns, name, n), func() bool {
		return ConvergedWith(t, c, ns, name, n, cli)
	})
}

// ConvergedWith is Converged reading etcd's member list through cli.
func ConvergedWith(t testing.TB, c *framework.Cluster, ns, name string, n int, cli *clientv3.Client) bool {
	t.Helper()
	return convergedWith(t, c, ns, name, n, func() (*clientv3.MemberListResponse, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cli.MemberList(ctx)
	})
}

// FollowingTLSConfig is a client that follows the operator's active TLS material on every
// handshake, as a client of a cluster whose CA rotates should: it trusts the client plane's
// current bundle (the active server Secret's ca.crt) and presents the active operator-client
// certificate, so it changes certificate only when every member already trusts the new one.
func FollowingTLSConfig(t testing.TB, c *framework.Cluster, ns, cluster string) *tls.Config {
	read := func(name string) (map[string][]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s := &corev1.Secret{}
		err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s)
		return s.Data, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification happens in VerifyConnection against the bundle current at the handshake.
		InsecureSkipVerify: true, //nolint:gosec // verified below
		VerifyConnection: func(cs tls.ConnectionState) error {
			server, err := read(v1alpha2.ActiveServerSecretName(cluster))
			if err != nil {
				return err
			}
			roots, inter := x509.NewCertPool(), x509.NewCertPool()
			roots.AppendCertsFromPEM(server[pki.KeyCA])
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err = cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: cs.ServerName})
			return err
		},
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			data, err := read(v1alpha2.ActiveOperatorClientSecretName(cluster))
			if err != nil {
				return nil, err
			}
			pair, err := tls.X509KeyPair(data[pki.KeyCert], data[pki.KeyKey])
			return &pair, err
		},
	}
}

// SetSecretData replaces a Secret's data, re-reading it on conflict: the operator labels the
// BYO Secrets it follows, so a copy read earlier goes stale.
func SetSecretData(t testing.TB, c *framework.Cluster, ns, name string, data map[string][]byte) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		s.Data = data
		return c.Client.Update(context.Background(), s)
	})
	if err != nil {
		t.Fatalf("update Secret %s/%s: %v", ns, name, err)
	}
}
