package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Peer modes of a member Pod, from its etcd flags and init containers.
const (
	peerAuto       = "auto-TLS"
	peerPresenting = "auto-TLS presenting the certificate"
	peerVerifying  = "mTLS"
)

func peerModes(t *testing.T, ns, cluster string) map[string]string {
	out := map[string]string{}
	for _, m := range members(t, ns, cluster) {
		p := pod(t, ns, m.Name)
		if p == nil {
			continue
		}
		flags := p.Spec.Containers[0].Command
		switch {
		case slices.Contains(flags, "--peer-client-cert-auth=true"):
			out[m.Name] = peerVerifying
		case slices.Contains(flags, "--peer-auto-tls") && slices.ContainsFunc(p.Spec.InitContainers,
			func(c corev1.Container) bool { return c.Name == v1alpha2.PeerFixturesContainer }):
			out[m.Name] = peerPresenting
		case slices.Contains(flags, "--peer-auto-tls"):
			out[m.Name] = peerAuto
		}
	}
	return out
}

// spec.tls.peer moved from autoTLS to certificates on a running cluster: first every member is
// restarted to present the certificate while still on auto-TLS, then every member to verify its
// peers. No Pod ever verifies while another still presents a self-signed certificate, and
// membership never changes.
func TestPeersMovedOffAutoTLS(t *testing.T) {
	ns := newNamespace(t)
	create(t, &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16",
			TLS: &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{AutoTLS: true}}}})
	waitFor(t, ns, "three members on auto-TLS peers", func() bool {
		return converged(t, ns, "etcd", 3)() && getCluster(t, ns, "etcd").Status.PeerAutoTLS
	})
	fc := fakeEtcd.Cluster(topology.Key(ns, "etcd"))
	opsBefore := len(fc.Ops())

	all := pki.ServerNames(pki.ClusterRef{Name: "etcd", Namespace: ns})
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "etcd-peer", Namespace: ns},
		Data: pkitest.NewCA(t, "peer-ca").SecretData(t, all.DNS, all.IPs, pkitest.ServerAndClient...)})
	c := getCluster(t, ns, "etcd")
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.TLS.Peer = &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "etcd-peer"}}
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}

	presented := map[string]bool{}
	waitFor(t, ns, "every member verifying its peers", func() bool {
		modes := peerModes(t, ns, "etcd")
		var verifying, auto int
		for name, m := range modes {
			switch m {
			case peerVerifying:
				verifying++
			case peerAuto:
				auto++
			case peerPresenting:
				presented[name] = true
			}
		}
		if verifying > 0 && auto > 0 {
			t.Fatalf("a member verifies its peers while another presents a self-signed certificate: %v", modes)
		}
		return verifying == 3 && !getCluster(t, ns, "etcd").Status.PeerAutoTLS && converged(t, ns, "etcd", 3)()
	})
	if len(presented) != 3 {
		t.Errorf("members seen presenting the certificate on auto-TLS: %v, want all 3", presented)
	}
	for _, op := range fc.Ops()[opsBefore:] {
		if !strings.HasPrefix(op, "move-leader ") {
			t.Errorf("etcd operation %q while moving peers off auto-TLS: membership must not change", op)
		}
	}
	waitFor(t, ns, "one Event per step", func() bool {
		return len(events(t, ns, "etcd", v1alpha2.ReasonMovingPeersOffAutoTLS)) == 1 &&
			len(events(t, ns, "etcd", v1alpha2.ReasonPeerCertificatesPresented)) == 1
	})
}
