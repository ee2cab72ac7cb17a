package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

const (
	listenBoth = "http://0.0.0.0:2379,https://0.0.0.0:2379"
	listenTLS  = "https://0.0.0.0:2379"
)

// serverSecret is a BYO server certificate covering every member of the cluster.
func serverSecret(t *testing.T, ns, cluster string) *corev1.Secret {
	all := pki.ServerNames(pki.ClusterRef{Name: cluster, Namespace: ns})
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-server", Namespace: ns},
		Data: pkitest.NewCA(t, "client-ca").SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...)}
}

func addClientTLS(t *testing.T, ns, cluster string, auth *v1alpha2.AuthSpec) {
	t.Helper()
	c := getCluster(t, ns, cluster)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: cluster + "-server"}}}
	c.Spec.Auth = auth
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
}

func podsListening(t *testing.T, ns, cluster, listen string) bool {
	for _, m := range members(t, ns, cluster) {
		if p := pod(t, ns, m.Name); p == nil || listenClientURLs(p) != listen {
			return false
		}
	}
	return true
}

// Adding spec.tls.client to a running plaintext cluster: no member restarts before its
// certificate exists; then each member is restarted, one at a time, into TLS beside plaintext
// while the operator keeps dialing plaintext; only once every member serves TLS does the
// operator dial TLS, and members are restarted once more into TLS only. Membership never
// changes.
func TestClientTLSAddedToRunningCluster(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "etcd", 3)
	waitFor(t, ns, "three healthy plaintext members", converged(t, ns, "etcd", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "etcd"))
	opsBefore := len(fc.Ops())
	oldUID := podUIDs(t, ns)

	addClientTLS(t, ns, "etcd", nil)
	waitFor(t, ns, "the rollout held back until the server certificate exists", func() bool {
		p := meta.FindStatusCondition(getCluster(t, ns, "etcd").Status.Conditions, v1alpha2.ConditionProgressing)
		return p != nil && p.Reason == v1alpha2.ReasonRollingUpdate && strings.Contains(p.Message, "certificates") &&
			strings.Contains(p.Message, "step 1 of 2") && len(events(t, ns, "etcd", v1alpha2.ReasonEnablingClientTLS)) > 0
	})
	for name, uid := range oldUID {
		if p := pod(t, ns, name); p == nil || string(p.UID) != uid {
			t.Fatalf("member %s restarted before its certificate existed", name)
		}
	}
	create(t, serverSecret(t, ns, "etcd"))

	// Step 1, kubelet played by hand: after each restart the operator must still dial
	// plaintext, until the last member serves TLS beside plaintext.
	var order []string
	for len(order) < 3 {
		var restarted string
		waitWithoutKubelet(t, ns, "the next member restarted into TLS beside plaintext", func() bool {
			restarted = ""
			for name, uid := range oldUID {
				if p := pod(t, ns, name); p != nil && string(p.UID) != uid && !slices.Contains(order, name) {
					restarted = name
				}
			}
			return restarted != ""
		})
		if got := listenClientURLs(pod(t, ns, restarted)); got != listenBoth {
			t.Fatalf("member %s restarted listening on %s, want %s", restarted, got, listenBoth)
		}
		if s := fc.Schemes(); slices.Contains(s, "tls") || getCluster(t, ns, "etcd").Status.ClientTLSServing {
			t.Fatalf("the operator dialed TLS (%v) before every member served it (restarted so far: %v)", s, append(order, restarted))
		}
		order = append(order, restarted)
		markPodsReady(t, ns)
	}

	waitFor(t, ns, "client TLS latched and every member serving TLS only", func() bool {
		return getCluster(t, ns, "etcd").Status.ClientTLSServing && podsListening(t, ns, "etcd", listenTLS) &&
			converged(t, ns, "etcd", 3)() && getCluster(t, ns, "etcd").Status.Rollout == nil
	})
	if s := fc.Schemes(); !slices.Equal(s, []string{"plaintext", "tls"}) {
		t.Errorf("schemes dialed %v, want one switch from plaintext to tls", s)
	}
	for _, m := range members(t, ns, "etcd") {
		if tls := m.Spec.TLS; tls == nil || tls.ClientServerSecretRef == nil || tls.ClientPlaintext {
			t.Errorf("member %s TLS spec %+v, want TLS only", m.Name, tls)
		}
	}
	for _, op := range fc.Ops()[opsBefore:] {
		if !strings.HasPrefix(op, "move-leader ") {
			t.Errorf("etcd operation %q while enabling client TLS: membership must not change", op)
		}
	}
	waitFor(t, ns, "a ClientTLSServing Event", func() bool { return len(events(t, ns, "etcd", v1alpha2.ReasonClientTLSServing)) == 1 })
}

// Auth added together with client TLS on a running plaintext cluster is enabled only once the
// operator dials TLS and no member listens in plaintext any more: no credential, the operator's
// or a client's, can cross plaintext.
func TestAuthAddedWithClientTLS(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "etcd", 1)
	waitFor(t, ns, "a plaintext member", converged(t, ns, "etcd", 1))
	create(t, serverSecret(t, ns, "etcd"))
	create(t, rootSecret(ns, "root", "secret-1"))
	addClientTLS(t, ns, "etcd", authSpec("root"))
	fc := fakeEtcd.Cluster(topology.Key(ns, "etcd"))
	waitFor(t, ns, "TLS only and auth enabled", func() bool {
		if fc.AuthEnabled() && !podsListening(t, ns, "etcd", listenTLS) {
			t.Fatalf("auth was enabled while a member still listened in plaintext: a client could log in over it\n%s", dump(ns))
		}
		return authLatched(t, ns, "etcd", "secret-1")() && podsListening(t, ns, "etcd", listenTLS) && converged(t, ns, "etcd", 1)()
	})
	ops := fc.Ops()
	if !slices.Contains(ops, "auth-enable") || slices.ContainsFunc(ops, func(op string) bool { return strings.HasSuffix(op, "(plaintext)") }) {
		t.Errorf("etcd operations %v: auth must be enabled, and over TLS only", ops)
	}
	if s := fc.Schemes(); !slices.Equal(s, []string{"plaintext", "tls"}) {
		t.Errorf("schemes dialed %v, want one switch from plaintext to tls", s)
	}
}
