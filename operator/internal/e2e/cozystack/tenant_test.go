//go:build e2e

package cozystack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// The app's Secrets (Cozystack's names, which the package keeps).
const (
	serverSecret = "etcd-server-tls"
	peerSecret   = "etcd-peer-tls"
	clientSecret = "etcd-client-tls" // CN root
	caSecret     = "etcd-ca-tls"     // the DataStore's CA: certificate and key
)

// installTenantApp installs packages/extra/etcd as a Tenant with etcd: true gets it: release etcd
// in the tenant's namespace, values only what Cozystack merges in. The cluster must become
// Available with three members whose server certificates name them in the platform's domain.
func installTenantApp(t *testing.T, c *framework.Cluster) {
	e2eutil.DiagnoseOnFailure(t, c, nil, freshTenant, appRelease)
	took := helmrelease.New(t, c, appRelease, freshTenant).
		Install(t, helmrelease.RepoPath(t, "packages/extra/etcd"), tenantValues(freshTenant))
	t.Logf("helm install %s -n %s (packages/extra/etcd, values: _cluster, _namespace): %s", appRelease, freshTenant, took.Round(time.Millisecond))
	took = waitAvailable(t, c, freshTenant)
	t.Logf("EtcdCluster %s/%s Available with %d members over TLS: %s", freshTenant, appRelease, replicas, took.Round(time.Millisecond))
	took = waitServing(t, c, freshTenant, memberFQDNWildcard(freshTenant))
	t.Logf("every member serves a server certificate naming %s: %s", memberFQDNWildcard(freshTenant), took.Round(time.Millisecond))
	cli := e2eutil.TLSEtcdClient(t, c, freshTenant, appRelease, tlsConfig(t, c, freshTenant))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/e2e/cozystack", "installed as Cozystack does"); err != nil {
		t.Fatalf("put through Service %s-client over mTLS: %v", appRelease, err)
	}
}

// memberFQDNWildcard is the name a member's server certificate covers it by in the cluster domain.
func memberFQDNWildcard(ns string) string {
	return fmt.Sprintf("*.%s.%s.svc.%s", appRelease, ns, clusterDomain)
}

// tlsConfig is a tenant client's: it trusts the app's CA and presents the CN=root certificate.
func tlsConfig(t *testing.T, c *framework.Cluster, ns string) *tls.Config {
	t.Helper()
	e2eutil.WaitSecret(t, c, ns, clientSecret, 3*time.Minute)
	return e2eutil.TLSConfig(t, c, ns, serverSecret, clientSecret)
}

// waitAvailable waits for cert-manager's Secrets, then for three voting members, Available and
// not progressing, etcd's member list read over TLS from the members themselves: Cozystack's
// current app names no client Service in its server certificate, only the members (*.etcd.<ns>.svc).
// A cluster whose certificates the operator keeps refusing fails at once, with the operator's reason.
func waitAvailable(t *testing.T, c *framework.Cluster, ns string) time.Duration {
	t.Helper()
	start := time.Now()
	for _, s := range []string{serverSecret, peerSecret, clientSecret} {
		e2eutil.WaitSecret(t, c, ns, s, 3*time.Minute)
	}
	refused := refusal(t, c, ns)
	e2eutil.WaitSeen(t, 3*time.Minute, fmt.Sprintf("%d EtcdMembers of %s/%s", replicas, ns, appRelease), func() (bool, string) {
		refused()
		n := len(e2eutil.Members(t, c, ns, appRelease))
		return n == replicas, fmt.Sprintf("%d EtcdMembers", n)
	})
	cli := e2eutil.TLSMembersClient(t, c, ns, appRelease, tlsConfig(t, c, ns))
	e2eutil.WaitSeen(t, 5*time.Minute, fmt.Sprintf("%s/%s converged at %d", ns, appRelease, replicas), func() (bool, string) {
		refused()
		return e2eutil.ConvergedWith(t, c, ns, appRelease, replicas, cli), "not converged"
	})
	return time.Since(start)
}

// certRefusalGrace is how long the operator may report CertificateInvalid before the wait gives
// up: longer than cert-manager takes to re-issue a leaf, far shorter than the waits' timeouts.
const certRefusalGrace = 20 * time.Second

// refusal returns a check to call while waiting: it fails the test once the cluster has been
// Degraded with CertificateInvalid for certRefusalGrace, quoting the operator's message.
func refusal(t *testing.T, c *framework.Cluster, ns string) func() {
	var since time.Time
	return func() {
		t.Helper()
		d := meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, appRelease).Status.Conditions, v1alpha2.ConditionDegraded)
		switch {
		case d == nil || d.Status != metav1.ConditionTrue || d.Reason != v1alpha2.ReasonCertificateInvalid:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) > certRefusalGrace:
			t.Fatalf("the operator refuses the cluster's certificates (Degraded %s for %s): %s", d.Reason, certRefusalGrace, d.Message)
		}
	}
}

// waitServing waits until every member serves, on its client port, a certificate that names
// want and, on its peer port, one that names it too: the certificates of the Secrets now in place.
func waitServing(t *testing.T, c *framework.Cluster, ns, want string) time.Duration {
	t.Helper()
	return e2eutil.WaitSeen(t, 5*time.Minute, "every member serving certificates that name "+want, func() (bool, string) {
		for _, m := range e2eutil.Members(t, c, ns, appRelease) {
			host := v1alpha2.MemberHost(m.Name, appRelease, ns)
			for port, secret := range map[string]string{"2379": clientSecret, "2380": peerSecret} {
				names, err := servedNames(t, c, ns, secret, net.JoinHostPort(host, port))
				if err != nil {
					return false, fmt.Sprintf("%s:%s: %v", m.Name, port, err)
				}
				if !slices.Contains(names, want) {
					return false, fmt.Sprintf("%s:%s serves %v", m.Name, port, names)
				}
			}
		}
		return true, ""
	})
}

// servedNames are the DNS names of the certificate the server at addr presents; the client shows
// the key pair of secret (both planes ask for a client certificate of their own CA).
func servedNames(t *testing.T, c *framework.Cluster, ns, secret, addr string) ([]string, error) {
	d := e2eutil.SecretData(t, c, ns, secret)
	pair, err := tls.X509KeyPair(d[corev1.TLSCertKey], d[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	raw, err := e2eutil.ClusterDialer(c)(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	// Only the presented certificate is read here; trust is what the members and clients check.
	conn := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}}) //nolint:gosec // reads the certificate only
	if err := conn.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return conn.ConnectionState().PeerCertificates[0].DNSNames, nil
}

// apiserverThroughDataStore plays Kamaji for a tenant control plane on the fresh tenant's
// DataStore: its etcd driver's user and role, a client certificate signed with the DataStore's
// CA key (which must be RSA PKCS#1 for Kamaji 1.0.0), and a kube-apiserver Pod with Kamaji's etcd
// flags; a Namespace created through that apiserver must be a key of the tenant's etcd.
func apiserverThroughDataStore(t *testing.T, c *framework.Cluster) {
	ds := e2eutil.DataStore(t, c, freshTenant)
	t.Logf("DataStore %s: driver %s, endpoints %v", ds.Name, ds.Spec.Driver, ds.Spec.Endpoints)
	checkPKCS1(t, e2eutil.SecretRef(t, c, *ds.Spec.TLSConfig.CertificateAuthority.PrivateKey))
	const schema = "tenant_root_kubernetes"
	start := time.Now()
	creds := e2eutil.PlayKamaji(t, c, ds.Name, schema, schema)
	cs, _ := e2eutil.StartTenantAPIServer(t, c, freshTenant, schema, creds)
	t.Logf("kube-apiserver (--etcd-servers=https://%v, --etcd-compaction-interval=0, client certificate CN %s) ready: %s",
		ds.Spec.Endpoints, schema, time.Since(start).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "through-the-datastore"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace through the tenant apiserver: %v", err)
	}
	cli, err := e2eutil.DataStoreClient(t, c, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := "/" + schema + "/namespaces/" + ns.Name
	resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
	if err != nil || resp.Count != 1 {
		t.Fatalf("key %s in the tenant etcd: %v, count %v; want the Namespace stored there", key, err, resp)
	}
	t.Logf("Namespace %s created through the tenant apiserver is key %s of etcd %s/%s", ns.Name, key, freshTenant, appRelease)
}

// checkPKCS1: Kamaji 1.0.0 parses the DataStore's CA key with x509.ParsePKCS1PrivateKey only.
func checkPKCS1(t *testing.T, keyPEM []byte) {
	t.Helper()
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		t.Fatal("the DataStore's CA key is not PEM")
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		t.Errorf("the DataStore's CA key (PEM %q) is no PKCS#1 RSA key, which Kamaji 1.0.0 needs: %v", block.Type, err)
	}
}
