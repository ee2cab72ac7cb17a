//go:build e2e

package tenants

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

const (
	fromVersion = "3.6.16"
	toVersion   = "3.7.3"
	// stepTimeout bounds each disruptive step of the tenant's etcd on 2 busy cores.
	stepTimeout = 5 * time.Minute
)

// TestTenantControlPlaneOnItsEtcd: TCP → its own TLS etcd and DataStore → a real tenant
// kube-apiserver on it, written to through scale 3→5→3, a member killed and an upgrade; another
// tenant's certificate refused; deleting the TCP removes what was made for it.
func TestTenantControlPlaneOnItsEtcd(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	e2eutil.InstallKamajiCRDs(t, c)
	store := framework.StartS3(t, c)
	if err := store.CreateBucket(context.Background(), backupBucket); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	template, backup := filepath.Join(dir, "template.yaml"), filepath.Join(dir, "backup.yaml")
	for file, body := range map[string]string{
		template: "replicas: 3\nversion: " + fromVersion + "\nstorage: {size: 1Gi}\n",
		backup:   backupTemplate(store.Endpoint),
	} {
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	op := e2eutil.StartOperator(t, c, "--enable-tenant-controller", "--tenant-etcd-template="+template, "--tenant-backup-template="+backup)
	ns := e2eutil.NewNamespace(t, c)
	createS3Credentials(t, c, ns, store.Root) // the platform's part: the Secret the backup template names
	n := specs.NamesOf(ns, "k8s")
	e2eutil.DiagnoseOnFailure(t, c, op, ns, n.Cluster)

	start := time.Now()
	tcp := e2eutil.CreateTCP(t, c, ns, "k8s", nil)
	e2eutil.WaitTenantState(t, c, tcp, v1alpha2.TenantStateReady, stepTimeout)
	t.Logf("TCP created → tenant etcd Available: %s", time.Since(start).Round(time.Millisecond))
	if ds := e2eutil.GetTCP(t, c, ns, "k8s").Spec.DataStore; ds != n.DataStore {
		t.Fatalf("spec.dataStore %q, want %q", ds, n.DataStore)
	}

	// Kamaji's defaults: schema and user are the TCP's UID.
	schema, user := string(tcp.UID), string(tcp.UID)
	creds := e2eutil.PlayKamaji(t, c, n.DataStore, user, schema)
	cs, _ := e2eutil.StartTenantAPIServer(t, c, ns, schema, creds)
	t.Logf("TCP created → tenant kube-apiserver ready: %s", time.Since(start).Round(time.Millisecond))

	root, err := e2eutil.DataStoreClient(t, c, e2eutil.DataStore(t, c, n.DataStore), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := startTenantClient(cs, "steady")
	e2eutil.WaitFor(t, time.Minute, "writes through the tenant apiserver", func() bool { return len(w.acknowledged()) >= 20 })
	for _, step := range []struct {
		phase, spec string
		replicas    int
	}{{"scale 3→5", `{"replicas": 5}`, 5}, {"scale 5→3", `{"replicas": 3}`, 3}} {
		w.setPhase(step.phase)
		took := setSpec(t, c, ns, "k8s", step.spec, func() {
			e2eutil.WaitConvergedWith(t, c, ns, n.Cluster, step.replicas, root, stepTimeout)
		})
		t.Logf("%s: %s", step.phase, took)
	}

	w.setPhase("member killed")
	killMember(t, c, ns, n.Cluster)
	e2eutil.WaitConvergedWith(t, c, ns, n.Cluster, 3, root, stepTimeout)

	w.setPhase("upgrade " + fromVersion + "→" + toVersion)
	took := setSpec(t, c, ns, "k8s", `{"version": "`+toVersion+`"}`, func() {
		e2eutil.WaitFor(t, 2*stepTimeout, "every member on "+toVersion, func() bool {
			for _, m := range e2eutil.Members(t, c, ns, n.Cluster) {
				if m.Status.Version != toVersion {
					return false
				}
			}
			return true
		})
		e2eutil.WaitConvergedWith(t, c, ns, n.Cluster, 3, root, stepTimeout)
	})
	t.Logf("upgrade: %s", took)
	w.setPhase("CA renewed")
	took = renewCA(t, c, n, root)
	t.Logf("CA renewed: %s until every member serves leaves of the renewed CA and trusts it", took)

	w.setPhase("after")
	before := len(w.acknowledged())
	e2eutil.WaitFor(t, time.Minute, "writes after the changes", func() bool { return len(w.acknowledged()) >= before+20 })
	w.finish(t)
	backedUp(t, c, store, n)

	otherTenantRefused(t, c, ns, n, user, creds)
	deleteTenant(t, c, ns, n)
}

// setSpec changes the TCP's etcd spec annotation (the tenant's way to change its etcd) and
// runs wait; it returns how long that took.
func setSpec(t *testing.T, c *framework.Cluster, ns, name, spec string, wait func()) time.Duration {
	t.Helper()
	tcp := e2eutil.GetTCP(t, c, ns, name)
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Annotations[v1alpha2.AnnotationTenantEtcdSpec] = spec
	start := time.Now()
	if err := c.Client.Patch(context.Background(), tcp, patch); err != nil {
		t.Fatal(err)
	}
	wait()
	return time.Since(start).Round(time.Millisecond)
}

// renewCA renews the tenant's CA certificate (cert-manager keeps its key: rotationPolicy Never)
// and every leaf of its etcd, as `cmctl renew` would, and waits until every member serves leaves
// of the renewed CA and trusts it: the operator widens its trust (a rolling restart) and swaps. The tenant apiserver's client certificate (minted by Kamaji from the CA before)
// still verifies: same key, same subject.
func renewCA(t *testing.T, c *framework.Cluster, n specs.Names, root *clientv3.Client) time.Duration {
	t.Helper()
	planes := []string{v1alpha2.ActiveServerSecretName(n.Cluster), v1alpha2.ActiveOperatorClientSecretName(n.Cluster), v1alpha2.ActivePeerSecretName(n.Cluster)}
	served := map[string]string{}
	for _, name := range planes {
		served[name] = string(e2eutil.SecretData(t, c, n.Namespace, name)["tls.crt"])
	}
	old := e2eutil.SecretData(t, c, n.Namespace, n.CA())["tls.crt"]
	start := time.Now()
	e2eutil.TriggerRenewal(t, c, n.Namespace, n.CA())
	var renewed []byte
	e2eutil.WaitFor(t, stepTimeout, "a renewed tenant CA", func() bool {
		renewed = e2eutil.SecretData(t, c, n.Namespace, n.CA())["tls.crt"]
		return !bytes.Equal(renewed, old)
	})
	for _, name := range []string{v1alpha2.ServerCertificateName(n.Cluster), v1alpha2.OperatorClientCertificateName(n.Cluster), v1alpha2.PeerCertificateName(n.Cluster)} {
		e2eutil.TriggerRenewal(t, c, n.Namespace, name)
	}
	only := trust.Merge(nil, renewed)
	e2eutil.WaitFor(t, 2*stepTimeout, "every member serving re-issued leaves and trusting the renewed CA", func() bool {
		for _, name := range planes {
			s := e2eutil.SecretData(t, c, n.Namespace, name)
			// A new leaf (the old ones verify under the renewed CA too: same key) in a bundle that
			// holds the renewed CA certificate.
			if string(s["tls.crt"]) == served[name] || !trust.Verifies(only, s["tls.crt"], time.Now()) ||
				!bytes.Contains(trust.Merge(nil, s["ca.crt"]), only) {
				return false
			}
		}
		return e2eutil.GetCluster(t, c, n.Namespace, n.Cluster).Status.Rollout == nil
	})
	e2eutil.WaitConvergedWith(t, c, n.Namespace, n.Cluster, 3, root, stepTimeout)
	return time.Since(start).Round(time.Millisecond)
}

// killMember SIGKILLs one member's etcd and waits for its container to be restarted.
func killMember(t *testing.T, c *framework.Cluster, ns, cluster string) {
	t.Helper()
	m := e2eutil.Members(t, c, ns, cluster)[0]
	before := restarts(e2eutil.Pod(t, c, ns, m.Name))
	if err := c.KillContainer(context.Background(), ns, m.Name, "etcd"); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, stepTimeout, "member "+m.Name+" restarted", func() bool {
		p := e2eutil.Pod(t, c, ns, m.Name)
		return restarts(p) > before && e2eutil.PodReady(p)
	})
}

func restarts(p *corev1.Pod) int32 {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "etcd" {
			return s.RestartCount
		}
	}
	return 0
}

// otherTenantRefused: another tenant's DataStore CA signs a certificate for this tenant's user;
// this tenant's etcd refuses it (while its own CA's works), so the other tenant's apiserver
// cannot read these keys.
func otherTenantRefused(t *testing.T, c *framework.Cluster, ns string, n specs.Names, user string, creds e2eutil.TenantCreds) {
	t.Helper()
	one := `{"replicas": 1}`
	other := e2eutil.CreateTCP(t, c, ns, "other", &one)
	e2eutil.WaitTenantState(t, c, other, v1alpha2.TenantStateReady, stepTimeout)
	otherDS := e2eutil.DataStore(t, c, specs.NamesOf(ns, "other").DataStore)
	certPEM, keyPEM := e2eutil.MintClient(t, e2eutil.SecretRef(t, c, otherDS.Spec.TLSConfig.CertificateAuthority.Certificate),
		e2eutil.SecretRef(t, c, *otherDS.Spec.TLSConfig.CertificateAuthority.PrivateKey), user)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ds := e2eutil.DataStore(t, c, n.DataStore)
	if err := handshake(t, c, ds, cert); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("this tenant's etcd answered a certificate of another tenant's CA: %v", err)
	} else {
		t.Logf("another tenant's certificate refused: %v", err)
	}
	// The same user's certificate from this tenant's own CA (what Kamaji minted) is served.
	own, err := tls.X509KeyPair(creds.CertPEM, creds.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(t, c, ds, own); err != nil {
		t.Fatalf("this tenant's own certificate: %v", err)
	}
	cli, err := e2eutil.DataStoreClient(t, c, ds, &own)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Get(ctx, "/"+user+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		t.Fatalf("this tenant's own certificate reads its keys: %v", err)
	}
}

// handshake dials the DataStore's first endpoint with cert and reads once: with TLS 1.3 a
// server's refusal of the client certificate arrives as an alert after the handshake.
func handshake(t *testing.T, c *framework.Cluster, ds *kamaji.DataStore, cert tls.Certificate) error {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e2eutil.SecretRef(t, c, ds.Spec.TLSConfig.CertificateAuthority.Certificate))
	var raw net.Conn
	e2eutil.WaitNoError(t, time.Minute, "a connection to "+ds.Spec.Endpoints[0], func() error {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		raw, err = e2eutil.ClusterDialer(c)(dctx, "tcp", ds.Spec.Endpoints[0])
		return err
	})
	defer raw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	host, _, _ := net.SplitHostPort(ds.Spec.Endpoints[0])
	conn := tls.Client(raw, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: host,
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12})
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if err := conn.HandshakeContext(ctx); err != nil {
		return err
	}
	// An HTTP/2 server speaks first (its SETTINGS frame): a byte read means it accepted us.
	if _, err := conn.Read(make([]byte, 1)); err != nil {
		return err
	}
	return nil
}

// deleteTenant deletes the TCP (no Kamaji lists it on the DataStore) and waits for its etcd,
// backup schedule, DataStore and CA Secret to go.
func deleteTenant(t *testing.T, c *framework.Cluster, ns string, n specs.Names) {
	t.Helper()
	ctx := context.Background()
	_ = c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-apiserver"}})
	if err := c.Client.Delete(ctx, e2eutil.GetTCP(t, c, ns, n.TCP)); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, stepTimeout, "the tenant's EtcdCluster, DataStore and CA Secret deleted", func() bool {
		gone := func(key client.ObjectKey, obj client.Object) bool {
			err := c.Client.Get(ctx, key, obj)
			if client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			return err != nil
		}
		return gone(client.ObjectKey{Namespace: ns, Name: n.Cluster}, &v1alpha2.EtcdCluster{}) &&
			gone(client.ObjectKey{Namespace: ns, Name: n.BackupSchedule()}, &v1alpha2.EtcdBackupSchedule{}) &&
			gone(client.ObjectKey{Name: n.DataStore}, &kamaji.DataStore{}) &&
			gone(client.ObjectKey{Namespace: ns, Name: n.CA()}, &corev1.Secret{})
	})
}
