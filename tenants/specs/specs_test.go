package specs

import (
	"errors"
	"strings"
	"testing"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestSpec(t *testing.T) {
	template := "replicas: 3\nversion: 3.6.16\nstorage:\n  size: 2Gi\n"
	cases := []struct {
		name, template, override string
		check                    func(v1alpha2.EtcdClusterSpec) bool
		err                      string
	}{
		{"empty template", "", "", func(s v1alpha2.EtcdClusterSpec) bool { return s.Replicas == nil }, ""},
		{"template only", template, "", func(s v1alpha2.EtcdClusterSpec) bool {
			return *s.Replicas == 3 && s.Version == "3.6.16" && s.Storage.Size.String() == "2Gi"
		}, ""},
		{"override wins, the rest stays", template, `{"replicas": 5}`, func(s v1alpha2.EtcdClusterSpec) bool {
			return *s.Replicas == 5 && s.Version == "3.6.16" && s.Storage.Size.String() == "2Gi"
		}, ""},
		{"override in YAML, null removes", template, "version: 3.7.3\nstorage: null\n", func(s v1alpha2.EtcdClusterSpec) bool {
			return *s.Replicas == 3 && s.Version == "3.7.3" && s.Storage.Size.IsZero()
		}, ""},
		{"typo refused", template, `{"replica": 5}`, nil, `unknown field "replica"`},
		{"wrong type refused", template, `{"replicas": "five"}`, nil, "cannot unmarshal"},
		{"not an object", template, `[1]`, nil, "must be an object"},
		{"not YAML", template, "replicas: [", nil, "is not YAML or JSON"},
		{"TLS refused", template, `{"tls": {"client": {}}}`, nil, ErrTLSInTemplate.Error()},
	}
	for _, tc := range cases {
		got, err := Spec([]byte(tc.template), tc.override)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !tc.check(got.Typed):
			t.Errorf("%s: got %+v", tc.name, got)
		}
	}
	if _, err := Spec([]byte("tls: {}"), ""); !errors.Is(err, ErrTLSInTemplate) {
		t.Errorf("TLS in the template: %v", err)
	}
}

func TestBuilders(t *testing.T) {
	n := NamesOf("tenant-a", "k8s")
	if err := n.Check(); err != nil {
		t.Fatal(err)
	}
	if err := NamesOf("tenant-a", strings.Repeat("x", 60)).Check(); err == nil {
		t.Error("a DataStore name over 63 characters passed")
	}
	spec, err := Spec([]byte("version: 3.6.16"), "")
	if err != nil {
		t.Fatal(err)
	}
	u, err := EtcdCluster(n, spec, v1alpha2.TenantDeletionRetain)
	if err != nil {
		t.Fatal(err)
	}
	c := &v1alpha2.EtcdCluster{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		t.Fatal(err)
	}
	if c.Name != "k8s-etcd" || c.Namespace != "tenant-a" || c.Spec.Version != "3.6.16" || c.Kind != "EtcdCluster" {
		t.Errorf("cluster %s %s/%s %+v", c.Kind, c.Namespace, c.Name, c.Spec)
	}
	if _, sent := u.Object["spec"].(map[string]any)["storage"]; sent {
		t.Error("a field the spec left out is applied (it would override the API's default)")
	}
	if c.Spec.TLS.Client.CertManager.ServerIssuerRef.Name != n.CA() || c.Spec.TLS.Peer.CertManager.IssuerRef.Name != n.CA() ||
		c.Spec.TLS.Client.CertManager.OperatorClientIssuerRef.Name != n.CA() {
		t.Errorf("TLS not from the tenant CA: %+v", c.Spec.TLS)
	}
	if c.Annotations[v1alpha2.AnnotationTenantDeletionPolicy] != v1alpha2.TenantDeletionRetain || c.Labels[v1alpha2.LabelTenantName] != "k8s" {
		t.Errorf("metadata %v %v", c.Labels, c.Annotations)
	}
	ds := DataStore(n)
	if ds.Name != "tenant-a.k8s" || ds.Namespace != "" || ds.Spec.Endpoints[0] != "k8s-etcd-client.tenant-a.svc:2379" {
		t.Errorf("DataStore %s %v", ds.Name, ds.Spec.Endpoints)
	}
	tls := ds.Spec.TLSConfig
	if tls.CertificateAuthority.PrivateKey.SecretReference.Name != n.CA() || tls.ClientCertificate.Certificate.SecretReference.Name != n.ClientCertificate() {
		t.Errorf("DataStore TLS %+v", tls)
	}
	pki := PKI(n, NewCAKey())
	if got := len(pki); got != 4 {
		t.Fatalf("PKI has %d objects", got)
	}
	if key := pki[1].(*cmapi.Certificate).Spec.PrivateKey; key.Algorithm != cmapi.RSAKeyAlgorithm || key.Encoding != cmapi.PKCS1 ||
		key.RotationPolicy != cmapi.RotationPolicyNever {
		t.Errorf("CA key %+v: want RSA in PKCS#1, never rotated (Kamaji 1.0.0 parses nothing else)", key)
	}
}

// A new CA is RSA; an existing one keeps its key (changing it would re-key the tenant's trust).
func TestCAKey(t *testing.T) {
	ecdsa := &cmapi.Certificate{Spec: cmapi.CertificateSpec{PrivateKey: &cmapi.CertificatePrivateKey{Algorithm: cmapi.ECDSAKeyAlgorithm, Size: 256,
		RotationPolicy: cmapi.RotationPolicyNever}}}
	for _, tc := range []struct {
		name     string
		existing *cmapi.Certificate
		algo     cmapi.PrivateKeyAlgorithm
		size     int
	}{
		{"new", nil, cmapi.RSAKeyAlgorithm, 4096},
		{"no key spec", &cmapi.Certificate{}, cmapi.RSAKeyAlgorithm, 4096},
		{"an earlier release's ECDSA CA", ecdsa, cmapi.ECDSAKeyAlgorithm, 256},
		{"an RSA CA", &cmapi.Certificate{Spec: cmapi.CertificateSpec{PrivateKey: NewCAKey()}}, cmapi.RSAKeyAlgorithm, 4096},
	} {
		got := CAKey(tc.existing)
		if got.Algorithm != tc.algo || got.Size != tc.size || got.RotationPolicy != cmapi.RotationPolicyNever {
			t.Errorf("%s: %+v, want %s %d never rotated", tc.name, got, tc.algo, tc.size)
		}
	}
	if CAKey(ecdsa) == ecdsa.Spec.PrivateKey {
		t.Error("CAKey returned the existing object's key, not a copy")
	}
}
