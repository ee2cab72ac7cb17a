package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Moving spec.tls.peer from autoTLS to certificates takes two rolling updates (see
// resources.presentsPeerCertificate): while status.peerAutoTLS is latched, members keep
// --peer-auto-tls but present the plane's certificate; once every member does, the latch is
// cleared and the next template verifies peers.

// latchPeerAutoTLS decides status.peerAutoTLS before the template is synced.
func (r *Reconciler) latchPeerAutoTLS(_ context.Context, st *clusterState) error {
	latch, change := peerAutoTLSLatch(st.cluster.Spec.TLS, st.status.PeerAutoTLS, st.members)
	st.status.PeerAutoTLS = latch
	switch change {
	case peerMoveStarted:
		r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonMovingPeersOffAutoTLS, "MovePeersOffAutoTLS",
			"spec.tls.peer moved from autoTLS to certificates: members are restarted one at a time to present the "+
				"certificates while still on auto-TLS (verifying nobody), so no member is cut off")
	case peerMoveVerifying:
		r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonPeerCertificatesPresented, "MovePeersOffAutoTLS",
			"every member presents the peer certificates: members are restarted one at a time to verify their peers (peer mTLS)")
	}
	return nil
}

// peerMove is what a pass's latch decision changed.
type peerMove int

const (
	peerMoveNone peerMove = iota
	// peerMoveStarted: members still run plain auto-TLS under a spec that asks for certificates.
	peerMoveStarted
	// peerMoveVerifying: every member presents the certificates; verification comes next.
	peerMoveVerifying
)

// peerAutoTLSLatch is status.peerAutoTLS as the spec and the members make it. It is set while
// the spec asks for auto-TLS, or while a member still runs plain auto-TLS (also for a cluster
// whose latch was never written); it is cleared once every member presents the certificates
// from its running Pod, or no member runs auto-TLS any more (a clearing whose status write
// was lost).
func peerAutoTLSLatch(spec *v1alpha2.TLSSpec, latched bool, members []v1alpha2.EtcdMember) (bool, peerMove) {
	switch {
	case spec == nil || spec.Peer == nil:
		return false, peerMoveNone
	case spec.Peer.AutoTLS:
		return true, peerMoveNone
	case anyPeerTLS(members, plainAutoTLS):
		return true, peerMoveStarted
	case !latched || !anyPeerTLS(members, presenting):
		return false, peerMoveNone
	case allPresentFromRunningPods(members):
		return false, peerMoveVerifying
	}
	return true, peerMoveNone
}

func plainAutoTLS(t *v1alpha2.MemberTLS) bool { return t.PeerAutoTLS && t.PeerSecretRef == nil }
func presenting(t *v1alpha2.MemberTLS) bool   { return t.PeerAutoTLS && t.PeerSecretRef != nil }

// anyPeerTLS: some live member's spec is in that peer mode.
func anyPeerTLS(members []v1alpha2.EtcdMember, mode func(*v1alpha2.MemberTLS) bool) bool {
	for i := range members {
		m := &members[i]
		if m.DeletionTimestamp.IsZero() && m.Spec.TLS != nil && mode(m.Spec.TLS) {
			return true
		}
	}
	return false
}

// allPresentFromRunningPods: every running member's spec presents the certificates and its Pod
// runs that spec, ready (as allServeBoth for client TLS). Parked members start with their spec.
func allPresentFromRunningPods(members []v1alpha2.EtcdMember) bool {
	for i := range members {
		m := &members[i]
		if !m.DeletionTimestamp.IsZero() || m.Spec.Dormant {
			continue
		}
		s := m.Status
		if m.Spec.TLS == nil || !presenting(m.Spec.TLS) || s.CurrentRevision == "" || s.CurrentRevision != s.UpdateRevision ||
			!topology.StatusCurrent(m) || !topology.MemberReady(m) {
			return false
		}
	}
	return true
}
