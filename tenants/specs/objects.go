package specs

import (
	"time"

	"maps"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

// caDuration: the tenant CA is never re-keyed (rotationPolicy Never), so its renewals
// keep every member, the operator and Kamaji trusting it; ten years, like the etcd chart's.
var caDuration = metav1.Duration{Duration: 10 * 365 * 24 * time.Hour}

// Labels are on everything made for the TCP; they find it again once the TCP is gone.
func (n Names) Labels() map[string]string {
	return map[string]string{
		v1alpha2.LabelAppManagedBy:    v1alpha2.ManagedByTenants,
		v1alpha2.LabelTenantNamespace: n.Namespace,
		v1alpha2.LabelTenantName:      n.TCP,
	}
}

func (n Names) meta(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: n.Labels(),
		Annotations: map[string]string{v1alpha2.AnnotationTenant: n.Namespace + "/" + n.TCP}}
}

// EtcdCluster is the tenant's etcd: the spec from Spec, with TLS from the tenant's CA for
// clients, peers and the operator. policy is recorded on it: the cluster outlives the TCP.
// It is built unstructured from the spec as written, for server-side apply: fields the user
// left out are not sent, so they keep the API's defaults.
func EtcdCluster(n Names, spec ClusterSpec, policy string) (*unstructured.Unstructured, error) {
	ca := v1alpha2.IssuerReference{Name: n.CA(), Kind: cmapi.IssuerKind, Group: "cert-manager.io"}
	tls, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha2.TLSSpec{
		Client: &v1alpha2.ClientTLS{CertManager: &v1alpha2.ClientCertManager{ServerIssuerRef: ca, OperatorClientIssuerRef: &ca}},
		Peer:   &v1alpha2.PeerTLS{CertManager: &v1alpha2.PeerCertManager{IssuerRef: ca}},
	})
	if err != nil {
		return nil, err
	}
	body := maps.Clone(spec.Raw)
	if body == nil {
		body = map[string]any{}
	}
	body["tls"] = tls
	m := n.meta(n.Cluster, n.Namespace)
	m.Annotations[v1alpha2.AnnotationTenantDeletionPolicy] = policy
	return operatorObject("EtcdCluster", m, body), nil
}

// operatorObject is an object of the operator's API with metadata m and spec, unstructured for
// server-side apply.
func operatorObject(kind string, m metav1.ObjectMeta, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(v1alpha2.GroupVersion.String())
	u.SetKind(kind)
	u.SetName(m.Name)
	u.SetNamespace(m.Namespace)
	u.SetLabels(m.Labels)
	u.SetAnnotations(m.Annotations)
	return u
}

// NewCAKey is the key of a new tenant CA: RSA in PKCS#1, the only CA key Kamaji 1.0.0 parses
// (it signs each tenant's etcd client certificate with it, x509.ParsePKCS1PrivateKey); later
// Kamaji releases parse it too. 4096 bits: the CA lives ten years and is never re-keyed, past
// 2030, when 2048-bit RSA falls below the 112-bit strength NIST asks for; its key signs only at
// issuance, so the size costs nothing at run time. Cozystack's etcd app uses RSA 4096 as well.
// The leaves stay ECDSA P-256: Kamaji reads its root client certificate with tls.X509KeyPair,
// which takes any key type.
func NewCAKey() *cmapi.CertificatePrivateKey {
	return &cmapi.CertificatePrivateKey{Algorithm: cmapi.RSAKeyAlgorithm, Encoding: cmapi.PKCS1, Size: 4096,
		RotationPolicy: cmapi.RotationPolicyNever}
}

// CAKey is the key spec of the tenant's CA Certificate: the one it has (a CA made by an earlier
// release is ECDSA P-256, and changing its key would be a trust rotation Kamaji's minted client
// certificates do not follow: see docs/kamaji.md), else NewCAKey.
func CAKey(existing *cmapi.Certificate) *cmapi.CertificatePrivateKey {
	if existing == nil || existing.Spec.PrivateKey == nil || existing.Spec.PrivateKey.Algorithm == "" {
		return NewCAKey()
	}
	key := existing.Spec.PrivateKey.DeepCopy()
	key.RotationPolicy = cmapi.RotationPolicyNever
	return key
}

// PKI is the tenant's CA chain: a self-signed Issuer, the CA Certificate it signs (with caKey,
// from CAKey), and the CA Issuer that signs the etcd leaves and the DataStore's root client
// certificate.
func PKI(n Names, caKey *cmapi.CertificatePrivateKey) []any {
	selfSigned := &cmapi.Issuer{TypeMeta: typeMeta(cmapi.IssuerKind), ObjectMeta: n.meta(n.SelfSignedIssuer(), n.Namespace),
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{SelfSigned: &cmapi.SelfSignedIssuer{}}}}
	ca := &cmapi.Certificate{TypeMeta: typeMeta(cmapi.CertificateKind), ObjectMeta: n.meta(n.CA(), n.Namespace),
		Spec: cmapi.CertificateSpec{IsCA: true, CommonName: n.CA(), SecretName: n.CA(), Duration: &caDuration,
			SecretTemplate: &cmapi.CertificateSecretTemplate{Labels: n.Labels()},
			PrivateKey:     caKey,
			Usages:         []cmapi.KeyUsage{cmapi.UsageCertSign, cmapi.UsageCRLSign, cmapi.UsageDigitalSignature},
			IssuerRef:      cmmeta.IssuerReference{Name: n.SelfSignedIssuer(), Kind: cmapi.IssuerKind, Group: "cert-manager.io"}}}
	caIssuer := &cmapi.Issuer{TypeMeta: typeMeta(cmapi.IssuerKind), ObjectMeta: n.meta(n.CA(), n.Namespace),
		Spec: cmapi.IssuerSpec{IssuerConfig: cmapi.IssuerConfig{CA: &cmapi.CAIssuer{SecretName: n.CA()}}}}
	// CN root: with etcd auth on, a client certificate's CN is the user it acts as; Kamaji
	// creates each tenant's user and role with it.
	client := &cmapi.Certificate{TypeMeta: typeMeta(cmapi.CertificateKind), ObjectMeta: n.meta(n.ClientCertificate(), n.Namespace),
		Spec: cmapi.CertificateSpec{CommonName: "root", SecretName: n.ClientCertificate(),
			SecretTemplate: &cmapi.CertificateSecretTemplate{Labels: n.Labels()},
			PrivateKey:     &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256, RotationPolicy: cmapi.RotationPolicyAlways},
			Usages:         []cmapi.KeyUsage{cmapi.UsageDigitalSignature, cmapi.UsageKeyEncipherment, cmapi.UsageClientAuth},
			IssuerRef:      cmmeta.IssuerReference{Name: n.CA(), Kind: cmapi.IssuerKind, Group: "cert-manager.io"}}}
	return []any{selfSigned, ca, caIssuer, client}
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: cmapi.SchemeGroupVersion.String(), Kind: kind}
}

// DataStore points Kamaji at the tenant's etcd through its client Service: the CA certificate
// and key (Kamaji signs the tenant's client certificate with them; etcd trusts that CA for
// clients) and the root client certificate (Kamaji creates the tenant's user and role with it).
func DataStore(n Names) *kamaji.DataStore {
	ref := func(secret, key string) kamaji.ContentRef {
		return kamaji.ContentRef{SecretReference: &kamaji.SecretReference{Name: secret, Namespace: n.Namespace, KeyPath: key}}
	}
	caKey := ref(n.CA(), "tls.key")
	// The tenant's cluster is this controller's own, never an adopted one: no layout.
	ds := &kamaji.DataStore{TypeMeta: metav1.TypeMeta{APIVersion: kamaji.GroupVersion.String(), Kind: "DataStore"},
		ObjectMeta: n.meta(n.DataStore, ""),
		Spec: kamaji.DataStoreSpec{Driver: kamaji.DriverEtcd,
			Endpoints: []string{v1alpha2.ClientServiceName(n.Cluster, nil) + "." + n.Namespace + ".svc:2379"},
			TLSConfig: &kamaji.TLSConfig{
				CertificateAuthority: kamaji.CertKeyPair{Certificate: ref(n.CA(), "tls.crt"), PrivateKey: &caKey},
				ClientCertificate: &kamaji.ClientCertificate{Certificate: ref(n.ClientCertificate(), "tls.crt"),
					PrivateKey: ref(n.ClientCertificate(), "tls.key")},
			}}}
	return ds
}
