package resources

import (
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// maxCommonName is cert-manager's (and RFC 5280's) limit on a commonName.
const maxCommonName = 64

// IssuerRef names the issuer of an emitted Certificate. Kind is Issuer or ClusterIssuer (or
// an external issuer's kind); an empty Group is cert-manager.io, any other selects an
// external issuer.
type IssuerRef struct {
	Name, Kind, Group string
}

// IssuerRefFrom converts the API's reference; cert-manager.io spelled out is the same issuer
// as an empty group, so it is dropped to keep the emitted spec (and its comparison) canonical.
func IssuerRefFrom(r v1alpha2.IssuerReference) IssuerRef {
	group := r.Group
	if group == cmapi.SchemeGroupVersion.Group {
		group = ""
	}
	return IssuerRef{Name: r.Name, Kind: r.Kind, Group: group}
}

func (r IssuerRef) api() cmmeta.IssuerReference {
	kind := r.Kind
	if kind == "" {
		kind = cmapi.IssuerKind
	}
	return cmmeta.IssuerReference{Name: r.Name, Kind: kind, Group: r.Group}
}

// Settings are the user-tunable parts of an emitted Certificate. Zero values leave
// cert-manager's defaults for duration and renewBefore, and pick ECDSA P-256 keys: fast to
// generate on small nodes and accepted by etcd's Go TLS stack.
type Settings struct {
	Duration    *metav1.Duration
	RenewBefore *metav1.Duration
	// KeyAlgorithm is RSA, ECDSA or Ed25519; empty means ECDSA.
	KeyAlgorithm cmapi.PrivateKeyAlgorithm
	// KeySize is the RSA modulus or ECDSA curve size; 0 means 2048 for RSA, 256 for ECDSA.
	KeySize int
}

// SettingsFrom reads spec.tls.certificateTemplate; nil keeps every default.
func SettingsFrom(t *v1alpha2.CertificateTemplate) Settings {
	if t == nil {
		return Settings{}
	}
	s := Settings{Duration: t.Duration, RenewBefore: t.RenewBefore}
	if k := t.PrivateKey; k != nil {
		s.KeyAlgorithm, s.KeySize = cmapi.PrivateKeyAlgorithm(k.Algorithm), k.Size
	}
	return s
}

func (s Settings) privateKey() *cmapi.CertificatePrivateKey {
	alg, size := s.KeyAlgorithm, s.KeySize
	if alg == "" {
		alg = cmapi.ECDSAKeyAlgorithm
	}
	if size == 0 {
		switch alg {
		case cmapi.RSAKeyAlgorithm:
			size = 2048
		case cmapi.ECDSAKeyAlgorithm:
			size = 256
		}
	}
	return &cmapi.CertificatePrivateKey{
		Algorithm: alg,
		Size:      size,
		// A fresh key on every renewal: a leaked key stops being useful at the next renewal.
		RotationPolicy: cmapi.RotationPolicyAlways,
	}
}

// usages are the key usages of a leaf: digital signature always; key encipherment only for
// RSA, the one algorithm whose TLS key exchange can use it; and the extended usages asked for.
func (s Settings) usages(ext ...cmapi.KeyUsage) []cmapi.KeyUsage {
	u := []cmapi.KeyUsage{cmapi.UsageDigitalSignature}
	if s.privateKey().Algorithm == cmapi.RSAKeyAlgorithm {
		u = append(u, cmapi.UsageKeyEncipherment)
	}
	return append(u, ext...)
}

// ServerCertificate is the client-plane certificate every member serves on :2379. It carries
// client auth too: etcd's grpc-gateway presents it to the member's own listener.
func ServerCertificate(c *v1alpha2.EtcdCluster, clusterDomain string, issuer IssuerRef, s Settings) *cmapi.Certificate {
	names := pki.ServerNames(clusterRef(c, clusterDomain))
	return certificate(c, v1alpha2.ServerCertificateName(c.Name), v1alpha2.ServerSecretName(c.Name), issuer, s, cmapi.CertificateSpec{
		CommonName:  commonName(v1alpha2.ServerCertificateName(c.Name)),
		DNSNames:    names.DNS,
		IPAddresses: names.IPStrings(),
		Usages:      s.usages(cmapi.UsageServerAuth, cmapi.UsageClientAuth),
	})
}

// PeerCertificate is the peer-plane certificate (:2380); peers are each other's servers and
// clients, so it carries both usages.
func PeerCertificate(c *v1alpha2.EtcdCluster, clusterDomain string, issuer IssuerRef, s Settings) *cmapi.Certificate {
	names := pki.PeerNames(clusterRef(c, clusterDomain))
	return certificate(c, v1alpha2.PeerCertificateName(c.Name), v1alpha2.PeerSecretName(c.Name), issuer, s, cmapi.CertificateSpec{
		CommonName:  commonName(v1alpha2.PeerCertificateName(c.Name)),
		DNSNames:    names.DNS,
		IPAddresses: names.IPStrings(),
		Usages:      s.usages(cmapi.UsageServerAuth, cmapi.UsageClientAuth),
	})
}

// OperatorClientCertificate is the certificate the operator dials members with under client
// mTLS. With auth on, its CN is root: etcd maps a verified client certificate's CN to the
// user, which is how the operator (and Kamaji, with its own certificate) act as root without
// a password.
func OperatorClientCertificate(c *v1alpha2.EtcdCluster, issuer IssuerRef, s Settings) *cmapi.Certificate {
	cn := commonName(v1alpha2.OperatorClientCertificateName(c.Name))
	if authEnabled(c) {
		cn = v1alpha2.RootUser
	}
	return certificate(c, v1alpha2.OperatorClientCertificateName(c.Name), v1alpha2.OperatorClientSecretName(c.Name), issuer, s,
		cmapi.CertificateSpec{CommonName: cn, Usages: s.usages(cmapi.UsageClientAuth)})
}

// DesiredCertificates are the Certificates a cluster's spec asks the operator to emit (none
// for BYO planes), in a stable order: server, operator-client, peer. All of them follow
// spec.tls.certificateTemplate.
func DesiredCertificates(c *v1alpha2.EtcdCluster, clusterDomain string) []*cmapi.Certificate {
	var out []*cmapi.Certificate
	if c.Spec.TLS == nil {
		return nil
	}
	s := SettingsFrom(c.Spec.TLS.CertificateTemplate)
	if cl := c.Spec.TLS.Client; cl != nil && cl.CertManager != nil {
		out = append(out, ServerCertificate(c, clusterDomain, IssuerRefFrom(cl.CertManager.ServerIssuerRef), s))
		if ref := cl.CertManager.OperatorClientIssuerRef; ref != nil {
			out = append(out, OperatorClientCertificate(c, IssuerRefFrom(*ref), s))
		}
	}
	if p := c.Spec.TLS.Peer; p != nil && p.CertManager != nil {
		out = append(out, PeerCertificate(c, clusterDomain, IssuerRefFrom(p.CertManager.IssuerRef), s))
	}
	return out
}

// NeedsUpdate reports whether an existing Certificate differs from the desired one in what
// the operator owns (spec and the operator's labels), so names that change with the cluster
// are re-issued rather than created once and forgotten.
func NeedsUpdate(existing, desired *cmapi.Certificate) bool {
	if !equality.Semantic.DeepEqual(existing.Spec, desired.Spec) {
		return true
	}
	for k, v := range desired.Labels {
		if existing.Labels[k] != v {
			return true
		}
	}
	return false
}

func certificate(c *v1alpha2.EtcdCluster, name, secret string, issuer IssuerRef, s Settings, spec cmapi.CertificateSpec) *cmapi.Certificate {
	spec.SecretName = secret
	spec.IssuerRef = issuer.api()
	spec.Duration, spec.RenewBefore = s.Duration, s.RenewBefore
	spec.PrivateKey = s.privateKey()
	// Old CertificateRequests are garbage: the Secret is the only state that matters.
	spec.RevisionHistoryLimit = ptr.To[int32](1)
	// The cluster's labels on the Secret let the operator watch only its own Secrets.
	spec.SecretTemplate = &cmapi.CertificateSecretTemplate{Labels: ClusterLabels(c.Name)}
	return &cmapi.Certificate{
		TypeMeta:   metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: cmapi.CertificateKind},
		ObjectMeta: ClusterObjectMeta(c, name, ""),
		Spec:       spec,
	}
}

func clusterRef(c *v1alpha2.EtcdCluster, clusterDomain string) pki.ClusterRef {
	return pki.ClusterRef{Name: c.Name, Namespace: c.Namespace, ClusterDomain: clusterDomain, Layout: c.Spec.Layout}
}

func authEnabled(c *v1alpha2.EtcdCluster) bool { return c.Spec.Auth != nil && c.Spec.Auth.Enabled }

func commonName(s string) string {
	if len(s) > maxCommonName {
		return s[:maxCommonName]
	}
	return s
}
