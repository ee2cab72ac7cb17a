package lifecycle

import (
	"bytes"
	"context"
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// byoPKI is a CA and the three BYO Secrets of a full-mTLS cluster named "rot".
type byoPKI struct{ server, client, peer map[string][]byte }

func issueBYO(t *testing.T, ns string, ca *pkitest.CA) byoPKI {
	names := pki.ServerNames(pki.ClusterRef{Name: "rot", Namespace: ns})
	return byoPKI{
		server: ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...),
		client: ca.ClientSecretData(t, v1alpha2.RootUser),
		peer:   ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...),
	}
}

func (p byoPKI) apply(t *testing.T, ns string) {
	setSecretData(t, ns, "rot-server", p.server)
	setSecretData(t, ns, "rot-client", p.client)
	setSecretData(t, ns, "rot-peer", p.peer)
}

// createRotCluster creates p's Secrets and a full-mTLS cluster "rot" of three members on them,
// and waits for it to converge.
func createRotCluster(t *testing.T, ns string, p byoPKI) {
	t.Helper()
	ctx := context.Background()
	for name, data := range map[string]map[string][]byte{"rot-server": p.server, "rot-client": p.client, "rot-peer": p.peer} {
		if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	ref := func(n string) *corev1.LocalObjectReference { return &corev1.LocalObjectReference{Name: n} }
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "rot", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16", TLS: &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{ServerSecretRef: ref("rot-server"), OperatorClientSecretRef: ref("rot-client")},
			Peer:   &v1alpha2.PeerTLS{SecretRef: ref("rot-peer")},
		}}}
	if err := k8s.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "three members", converged(t, ns, "rot", 3))
}

// A CA rotation on every plane: the new CA is trusted by every member Pod before any
// certificate it signed is served, the old one stays trusted while a served certificate needs
// it, and each member is restarted exactly twice (widen, narrow). A renewal by the same CA is
// served without a restart.
func TestCARotationNeverServesAnUntrustedCertificate(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	oldCA := pkitest.NewCA(t, "old-ca")
	createRotCluster(t, ns, issueBYO(t, ns, oldCA))
	uids := podUIDs(t, ns)

	renewed := issueBYO(t, ns, oldCA).server
	setSecretData(t, ns, "rot-server", renewed)
	waitFor(t, ns, "the renewed server certificate served", func() bool {
		return bytes.Equal(activeData(t, ns, v1alpha2.ActiveServerSecretName("rot"))[pki.KeyCert], renewed[pki.KeyCert])
	})
	if after := podUIDs(t, ns); len(after) != 3 || !maps.Equal(uids, after) {
		t.Fatalf("a renewal by the trusted CA restarted members: %v -> %v", uids, after)
	}

	newCA := pkitest.NewCA(t, "new-ca")
	next := issueBYO(t, ns, newCA)
	next.apply(t, ns)
	seen := map[string]map[string]bool{} // member -> Pod UIDs seen
	waitFor(t, ns, "the rotation to finish", func() bool {
		assertServedIsTrusted(t, ns)
		for member, uid := range podUIDs(t, ns) {
			if seen[member] == nil {
				seen[member] = map[string]bool{}
			}
			seen[member][uid] = true
		}
		return rotated(t, ns, next, newCA.PEM)
	})
	for member, us := range seen {
		if len(us) != 3 {
			t.Errorf("member %s ran %d Pods during the rotation, want 3 (old, widened, narrowed)", member, len(us))
		}
	}
	for _, reason := range []string{v1alpha2.ReasonTrustWidened, v1alpha2.ReasonCertificateApplied, v1alpha2.ReasonTrustNarrowed} {
		waitFor(t, ns, "a "+reason+" Event", func() bool { return len(events(t, ns, "rot", reason)) > 0 })
	}
	// The old bundle goes in the pass after the last Pod that mounted it: wait for that pass.
	waitFor(t, ns, "the current trust bundle only", func() bool {
		var cms corev1.ConfigMapList
		if err := k8s.List(ctx, &cms, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelAppComponent: v1alpha2.ComponentTrustBundle}); err != nil {
			t.Fatal(err)
		}
		return len(cms.Items) == 1
	})
}

// assertServedIsTrusted fails when a member Pod mounts a bundle that does not trust a
// certificate being served on its plane: that member would refuse its peers or the operator.
func assertServedIsTrusted(t *testing.T, ns string) {
	t.Helper()
	served := map[string][][]byte{
		resources.TrustKeyClientCA: {activeData(t, ns, v1alpha2.ActiveServerSecretName("rot"))[pki.KeyCert],
			activeData(t, ns, v1alpha2.ActiveOperatorClientSecretName("rot"))[pki.KeyCert]},
		resources.TrustKeyPeerCA: {activeData(t, ns, v1alpha2.ActivePeerSecretName("rot"))[pki.KeyCert]},
	}
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		bundle, live := mountedBundle(t, ns, &p)
		if !live {
			continue
		}
		for key, certs := range served {
			for _, cert := range certs {
				if !trust.Verifies([]byte(bundle[key]), cert, time.Now()) {
					t.Fatalf("Pod %s trusts %v on %s, which does not verify a certificate being served\n%s",
						p.Name, trust.Subjects([]byte(bundle[key])), key, dump(ns))
				}
			}
		}
	}
}

// rotated: every active copy serves the new certificates and every Pod trusts only the new CA.
func rotated(t *testing.T, ns string, want byoPKI, ca []byte) bool {
	for name, data := range map[string]map[string][]byte{v1alpha2.ActiveServerSecretName("rot"): want.server,
		v1alpha2.ActiveOperatorClientSecretName("rot"): want.client, v1alpha2.ActivePeerSecretName("rot"): want.peer} {
		if !bytes.Equal(activeData(t, ns, name)[pki.KeyCert], data[pki.KeyCert]) {
			return false
		}
	}
	var pods corev1.PodList
	if err := k8s.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		return false
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			return false
		}
		b, live := mountedBundle(t, ns, &p)
		if !live || !podServing(p.Name) ||
			!bytes.Equal(trust.Merge(nil, []byte(b[resources.TrustKeyClientCA])), ca) ||
			!bytes.Equal(trust.Merge(nil, []byte(b[resources.TrustKeyPeerCA])), ca) {
			return false
		}
	}
	return true
}

func activeData(t *testing.T, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("active Secret %s: %v", name, err)
	}
	return s.Data
}

// mountedBundle is the content of the trust bundle p mounts. live is false when p went away
// after it was listed (its bundle may be pruned by then); a live Pod whose bundle is missing
// fails the test, as a member could not start.
func mountedBundle(t *testing.T, ns string, p *corev1.Pod) (data map[string]string, live bool) {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if v.Name == resources.TrustVolume && v.ConfigMap != nil {
			cm := &corev1.ConfigMap{}
			err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v.ConfigMap.Name}, cm)
			if apierrors.IsNotFound(err) && !podLive(t, ns, p) {
				return nil, false
			}
			if err != nil {
				t.Fatalf("Pod %s mounts trust bundle %s: %v", p.Name, v.ConfigMap.Name, err)
			}
			return cm.Data, true
		}
	}
	t.Fatalf("Pod %s mounts no trust bundle", p.Name)
	return nil, false
}

// podLive reports whether p (this very Pod, by UID) still exists and is not terminating.
func podLive(t *testing.T, ns string, p *corev1.Pod) bool {
	t.Helper()
	now := &corev1.Pod{}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: p.Name}, now)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return now.UID == p.UID && now.DeletionTimestamp.IsZero()
}
