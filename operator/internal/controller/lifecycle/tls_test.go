package lifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

func newTLSCluster(t *testing.T, ns, name string, tls *v1alpha2.TLSSpec) {
	t.Helper()
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.16", TLS: tls}}
	if err := k8s.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

func memberReadyReason(t *testing.T, ns, cluster string) (string, *v1alpha2.EtcdMember) {
	t.Helper()
	ms := members(t, ns, cluster)
	if len(ms) != 1 {
		return "", nil
	}
	r := meta.FindStatusCondition(ms[0].Status.Conditions, v1alpha2.ConditionReady)
	if r == nil {
		return "", &ms[0]
	}
	return r.Reason, &ms[0]
}

// envtest has no cert-manager: a certManager cluster says so, and its seed waits for its
// Secret instead of starting without certificates.
func TestCertManagerMissingIsReported(t *testing.T) {
	ns := newNamespace(t)
	ca := v1alpha2.IssuerReference{Name: "ca"}
	newTLSCluster(t, ns, "cm", &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ca}}})
	waitFor(t, ns, "Degraded=CertManagerNotInstalled and a waiting seed", func() bool {
		d := meta.FindStatusCondition(getCluster(t, ns, "cm").Status.Conditions, v1alpha2.ConditionDegraded)
		reason, _ := memberReadyReason(t, ns, "cm")
		return d != nil && d.Status == metav1.ConditionTrue && d.Reason == v1alpha2.ReasonCertManagerNotInstalled &&
			reason == v1alpha2.ReasonWaitingForCertificate
	})
	_, m := memberReadyReason(t, ns, "cm")
	if p := pod(t, ns, m.Name); p != nil {
		t.Errorf("Pod %s created without its TLS Secret", p.Name)
	}
}

// A BYO server certificate that does not cover the member: no Pod, the member's condition, a
// Warning Event and the cluster's Degraded condition name the missing SAN. Fixing the Secret
// starts the member without any other action.
func TestBYOCertificateMissingSANGatesPod(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ca := pkitest.NewCA(t, "byo-ca")
	all := pki.ServerNames(pki.ClusterRef{Name: "byo", Namespace: ns})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "byo-server", Namespace: ns},
		Data: ca.SecretData(t, pkitest.WithoutMemberNames(all), all.IPs, pkitest.ServerAndClient...)}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	newTLSCluster(t, ns, "byo", &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "byo-server"}}})

	var degraded *metav1.Condition
	waitFor(t, ns, "Degraded=CertificateInvalid", func() bool {
		degraded = meta.FindStatusCondition(getCluster(t, ns, "byo").Status.Conditions, v1alpha2.ConditionDegraded)
		return degraded != nil && degraded.Reason == v1alpha2.ReasonCertificateInvalid
	})
	reason, m := memberReadyReason(t, ns, "byo")
	host := v1alpha2.MemberHost(m.Name, "byo", ns)
	if reason != v1alpha2.ReasonCertificateInvalid || !strings.Contains(degraded.Message, host) {
		t.Errorf("member reason %s; cluster Degraded %q does not name %q", reason, degraded.Message, host)
	}
	if p := pod(t, ns, m.Name); p != nil {
		t.Errorf("Pod %s created with a certificate that does not cover it", p.Name)
	}
	warnings := func() int {
		var events eventsv1.EventList
		if err := k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range events.Items {
			if e.Reason == v1alpha2.ReasonCertificateInvalid && e.Regarding.Name == m.Name && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Note, host) {
				n++
			}
		}
		return n
	}
	// Events are written asynchronously: wait for the first; the count is checked once the member
	// has started, after every pass over the waiting member.
	waitFor(t, ns, "a CertificateInvalid Warning Event", func() bool { return warnings() > 0 })

	setSecretData(t, ns, "byo-server", ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...))
	waitFor(t, ns, "the member started once the certificate covers it", converged(t, ns, "byo", 1))
	if n := warnings(); n != 1 {
		t.Errorf("%d CertificateInvalid Warning Events naming %s, want exactly 1 (not one per pass)", n, host)
	}
}

// A scale-up whose new member the BYO certificate does not cover: the member is never added to
// etcd (no learner without a Pod), its condition names the problem, and it joins once the
// certificate covers it.
func TestBYOCertificateGatesMemberAdd(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	ca := pkitest.NewCA(t, "byo-ca")
	all := pki.ServerNames(pki.ClusterRef{Name: "byo", Namespace: ns})
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "byo-server", Namespace: ns},
		Data: ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...)}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	newTLSCluster(t, ns, "byo", &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "byo-server"}}})
	waitFor(t, ns, "the seed up", converged(t, ns, "byo", 1))
	seed := members(t, ns, "byo")[0].Name
	seedHost := v1alpha2.MemberHost(seed, "byo", ns)
	setSecretData(t, ns, "byo-server", ca.SecretData(t, append(pkitest.WithoutMemberNames(all), seedHost, seedHost+".cluster.local"), all.IPs, pkitest.ServerAndClient...))
	fc := fakeEtcd.Cluster(topology.Key(ns, "byo"))
	adds := count(fc.Ops(), "add")
	scale(t, ns, "byo", 2)
	waitFor(t, ns, "the new member held back with CertificateInvalid", func() bool {
		for _, m := range members(t, ns, "byo") {
			if r := meta.FindStatusCondition(m.Status.Conditions, v1alpha2.ConditionReady); m.Name != seed && r != nil &&
				r.Reason == v1alpha2.ReasonCertificateInvalid && strings.Contains(r.Message, v1alpha2.MemberHost(m.Name, "byo", ns)) {
				p := meta.FindStatusCondition(getCluster(t, ns, "byo").Status.Conditions, v1alpha2.ConditionProgressing)
				return p != nil && p.Reason == v1alpha2.ReasonWaitingForCertificate
			}
		}
		return false
	})
	if n := count(fc.Ops(), "add"); n != adds {
		t.Fatalf("a member the certificate does not cover was added to etcd: %v", fc.Ops())
	}
	setSecretData(t, ns, "byo-server", ca.SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...))
	waitFor(t, ns, "the member joined once the certificate covers it", converged(t, ns, "byo", 2))
}
