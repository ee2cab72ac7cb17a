package resources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestNewMemberCopiesTemplate(t *testing.T) {
	c := &v1alpha2.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"},
		Spec: v1alpha2.EtcdClusterSpec{Version: "3.6.16", PriorityClassName: "high", NodeSelector: map[string]string{"a": "b"},
			Tolerations: []corev1.Toleration{{Key: "k"}}, ImageRepository: "mirror/etcd",
			AdditionalMetadata: &v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "x", v1alpha2.LabelCluster: "evil"}},
			TLS: &v1alpha2.TLSSpec{
				Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}, OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "op"}},
				Peer:   &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}},
			}},
	}
	m := NewMember(c, "tok", true, nil, TemplateInputs{TrustBundle: "c-trust-1", ClientTLSServing: true})
	switch {
	case m.GenerateName != "c-" || m.Namespace != "ns" || !m.Spec.Bootstrap || m.Spec.ClusterToken != "tok" || m.Spec.InitialCluster != "":
		t.Errorf("identity: %+v", m.ObjectMeta)
	case m.Labels[v1alpha2.LabelCluster] != "c" || m.Labels["team"] != "x":
		t.Errorf("labels %v", m.Labels)
	case m.Spec.PriorityClassName != "high" || m.Spec.NodeSelector["a"] != "b" || len(m.Spec.Tolerations) != 1 || m.Spec.ImageRepository != "mirror/etcd":
		t.Errorf("scheduling fields not copied: %+v", m.Spec)
	case m.Spec.TLS == nil || m.Spec.TLS.ClientServerSecretRef.Name != "c-active-server-tls" || !m.Spec.TLS.ClientMTLS ||
		m.Spec.TLS.PeerSecretRef.Name != "c-active-peer-tls" || m.Spec.TLS.TrustBundle != "c-trust-1" || m.Spec.TLS.ClientPlaintext:
		t.Errorf("tls %+v", m.Spec.TLS)
	case len(m.OwnerReferences) != 1 || m.OwnerReferences[0].UID != "u" || !*m.OwnerReferences[0].Controller:
		t.Errorf("owner %+v", m.OwnerReferences)
	}
}

// Members keep a plaintext client listener beside TLS until client TLS is latched as served.
func TestMemberTLSPlaintextUntilLatched(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha2.EtcdClusterSpec{
		TLS: &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "srv"}}}}}
	if got := memberTLS(c, TemplateInputs{}); got == nil || !got.ClientPlaintext || got.ClientServerSecretRef == nil {
		t.Errorf("before the latch: %+v, want TLS beside plaintext", got)
	}
	if got := memberTLS(c, TemplateInputs{ClientTLSServing: true}); got == nil || got.ClientPlaintext {
		t.Errorf("after the latch: %+v, want TLS only", got)
	}
	c.Spec.TLS = &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}
	if got := memberTLS(c, TemplateInputs{}); got == nil || got.ClientPlaintext {
		t.Errorf("peer TLS only: %+v, want no client listener flags", got)
	}
}

// Peers moving off auto-TLS: while status.peerAutoTLS is latched, a member whose spec asks for
// peer certificates keeps --peer-auto-tls and presents the plane's certificate (an init
// container installs it into the fixtures); once cleared, it verifies its peers.
func TestPeerMoveOffAutoTLS(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Spec: v1alpha2.EtcdClusterSpec{
		Version: "3.5.35", Layout: &v1alpha2.Layout{DataDirSubPath: "default.etcd"},
		TLS: &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "peer"}}}}}
	pod := func(in TemplateInputs) *corev1.Pod {
		m := NewMember(c, "tok", false, nil, in)
		m.Name = "c-a"
		return Pod(m, PodOptions{AgentImage: "operator:dev"})
	}
	presenting := pod(TemplateInputs{TrustBundle: "c-trust-1", PeerAutoTLS: true})
	flags := presenting.Spec.Containers[0].Command
	if !slices.Contains(flags, "--peer-auto-tls") || slices.Contains(flags, "--peer-client-cert-auth=true") {
		t.Errorf("presenting: flags %v, want --peer-auto-tls and no verification", flags)
	}
	ics := presenting.Spec.InitContainers
	if len(ics) != 1 || ics[0].Name != v1alpha2.PeerFixturesContainer || ics[0].Image != "operator:dev" ||
		!slices.Equal(ics[0].Command, []string{"/manager", "install-peer-fixtures", "/etc/etcd/tls/peer", "/var/lib/etcd/default.etcd/fixtures/peer"}) {
		t.Errorf("presenting: init containers %+v", ics)
	}
	verifying := pod(TemplateInputs{TrustBundle: "c-trust-1"})
	flags = verifying.Spec.Containers[0].Command
	if slices.Contains(flags, "--peer-auto-tls") || !slices.Contains(flags, "--peer-client-cert-auth=true") || len(verifying.Spec.InitContainers) != 0 {
		t.Errorf("verifying: flags %v, init containers %d; want peer mTLS and no fixtures", flags, len(verifying.Spec.InitContainers))
	}
	c.Spec.TLS.Peer = &v1alpha2.PeerTLS{AutoTLS: true}
	if auto := pod(TemplateInputs{PeerAutoTLS: true}); len(auto.Spec.InitContainers) != 0 || !slices.Contains(auto.Spec.Containers[0].Command, "--peer-auto-tls") {
		t.Errorf("plain auto-TLS: %v with %d init containers", auto.Spec.Containers[0].Command, len(auto.Spec.InitContainers))
	}
}
