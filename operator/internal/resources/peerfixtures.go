package resources

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Moving peers from etcd's auto-TLS to certificates cannot go member by member directly: a
// member that verifies its peers refuses the self-signed certificates of those still on
// auto-TLS (no CA signed them, and they are not client certificates). But auto-TLS presents
// whatever pair it finds in <data-dir>/fixtures/peer and verifies nobody. So the move takes two
// rolling updates: first every member keeps --peer-auto-tls with the plane's certificate
// installed there (this init container), then every member verifies (--peer-client-cert-auth
// with the trust bundle). At every moment each member accepts every other.

// presentsPeerCertificate: the member runs auto-TLS with the plane's certificate as its own.
func presentsPeerCertificate(m *v1alpha2.EtcdMember) bool {
	t := m.Spec.TLS
	return t != nil && t.PeerAutoTLS && t.PeerSecretRef != nil
}

// PeerFixturesDir is where etcd's --peer-auto-tls keeps (and looks for) its pair.
func PeerFixturesDir(m *v1alpha2.EtcdMember) string {
	return MemberDataDir(m) + "/fixtures/peer"
}

// peerFixturesInitContainer copies the member's active peer Secret into the fixtures with the
// operator's binary, before etcd starts.
func peerFixturesInitContainer(m *v1alpha2.EtcdMember, opts PodOptions) corev1.Container {
	return corev1.Container{
		Name: v1alpha2.PeerFixturesContainer, Image: opts.AgentImage,
		Command: []string{"/manager", snapshot.CommandInstallPeerFixtures, peerTLSDir, PeerFixturesDir(m)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "data", MountPath: DataDir},
			{Name: "tls-peer", MountPath: peerTLSDir, ReadOnly: true},
		},
		SecurityContext: containerSecurityContext(),
		Resources:       agentResources(),
	}
}
