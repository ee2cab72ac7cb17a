package resources

import (
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
