package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// TemplateInputs are what a member's template takes besides the cluster's spec: the state the
// cluster controller keeps for it.
type TemplateInputs struct {
	// TrustBundle is the trust bundle ConfigMap of the cluster's CAs ("" without TLS Secrets).
	TrustBundle string
	// ClientTLSServing is status.clientTLSServing as the pass latched it: until it is set,
	// members keep a plaintext listener beside TLS.
	ClientTLSServing bool
	// PeerAutoTLS is status.peerAutoTLS as the pass latched it: while it is set, members whose
	// spec asks for peer certificates still run --peer-auto-tls, presenting the certificates.
	PeerAutoTLS bool
}

// NewMember is a member created from the cluster's current template; its name is generated.
// restore seeds the data dir of a new cluster's seed from a snapshot (nil for other members).
func NewMember(c *v1alpha2.EtcdCluster, token string, seed bool, restore *v1alpha2.MemberRestore, in TemplateInputs) *v1alpha2.EtcdMember {
	meta := ClusterObjectMeta(c, "", "")
	meta.GenerateName = c.Name + "-"
	m := &v1alpha2.EtcdMember{
		ObjectMeta: meta,
		Spec: v1alpha2.EtcdMemberSpec{
			ClusterName: c.Name, Bootstrap: seed, ClusterToken: token, Replicas: ptr.To[int32](1), Restore: restore,
		},
	}
	ApplyTemplate(c, &m.Spec, in)
	return m
}

// ApplyTemplate copies the cluster's member template into a member's spec: everything a
// member's Pod is built from, and nothing of its identity (name, seed, initial cluster,
// restore source).
func ApplyTemplate(c *v1alpha2.EtcdCluster, spec *v1alpha2.EtcdMemberSpec, in TemplateInputs) {
	s := c.Spec
	spec.Version, spec.Storage, spec.Resources = s.Version, s.Storage, s.Resources
	spec.AdditionalMetadata, spec.Affinity, spec.TopologySpreadConstraints = s.AdditionalMetadata, s.Affinity, s.TopologySpreadConstraints
	spec.Options, spec.ImagePullSecrets, spec.TLS = s.Options, s.ImagePullSecrets, memberTLS(c, in)
	spec.NodeSelector, spec.Tolerations = s.NodeSelector, s.Tolerations
	spec.PriorityClassName, spec.ImageRepository = s.PriorityClassName, s.ImageRepository
	spec.Layout = s.Layout
}

// memberTLS passes what a member's Pod mounts: the operator's active copies of the cluster's
// TLS Secrets (package trust keeps them in step with cert-manager's or the user's) and the
// trust bundle. Until every member serves client TLS, members keep a plaintext listener
// beside it.
func memberTLS(c *v1alpha2.EtcdCluster, in TemplateInputs) *v1alpha2.MemberTLS {
	if c.Spec.TLS == nil {
		return nil
	}
	names := pki.SecretsOf(c)
	out := &v1alpha2.MemberTLS{}
	if names.Server != "" {
		out.ClientServerSecretRef = &corev1.LocalObjectReference{Name: v1alpha2.ActiveServerSecretName(c.Name)}
		out.ClientMTLS = names.OperatorClient != ""
		out.ClientPlaintext = !in.ClientTLSServing
		out.TrustBundle = in.TrustBundle
	}
	if names.Peer != "" {
		out.PeerSecretRef = &corev1.LocalObjectReference{Name: v1alpha2.ActivePeerSecretName(c.Name)}
		out.TrustBundle = in.TrustBundle
	}
	out.PeerAutoTLS = c.Spec.TLS.Peer != nil && (c.Spec.TLS.Peer.AutoTLS || in.PeerAutoTLS)
	return out
}

// Components (app.kubernetes.io/component) of the Secrets and ConfigMaps a cluster owns.
const (
	ComponentTLS          = "tls"
	ComponentOperatorAuth = "operator-auth"
)

// ActiveTLSSecret is one of the operator's active copies of a TLS Secret (see
// v1alpha2.ActiveServerSecretName): the key pair being served and the CAs being trusted.
func ActiveTLSSecret(c *v1alpha2.EtcdCluster, name string, cert, key, ca []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: ClusterObjectMeta(c, name, ComponentTLS),
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{pki.KeyCert: cert, pki.KeyKey: key, pki.KeyCA: ca},
	}
}

// TrustBundle is an immutable ConfigMap of the CAs members trust, by plane key (TrustKeyClientCA,
// TrustKeyPeerCA). Its name carries a hash of its content (v1alpha2.TrustBundleName), so a Pod
// that mounts a given name loads exactly those CAs.
func TrustBundle(c *v1alpha2.EtcdCluster, name string, cas map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: ClusterObjectMeta(c, name, v1alpha2.ComponentTrustBundle),
		Immutable:  ptr.To(true),
		Data:       cas,
	}
}

// OperatorAuthSecret holds the operator's own etcd credentials (see package authcred).
func OperatorAuthSecret(c *v1alpha2.EtcdCluster, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: ClusterObjectMeta(c, v1alpha2.OperatorAuthSecretName(c.Name), ComponentOperatorAuth),
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}
