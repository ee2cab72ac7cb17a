//go:build e2e

package e2eutil

// Kamaji's part in the tenant e2e and bench: its CRDs, TenantControlPlanes, what its etcd
// driver does per tenant, and a tenant kube-apiserver run as a Pod from the tools cache.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

// TenantCreds is what Kamaji's etcd driver gives one tenant's kube-apiserver: the DataStore's
// endpoints and CA, and a client certificate with CN = the tenant's etcd user.
type TenantCreds struct {
	Endpoints       []string
	CAPEM           []byte
	CertPEM, KeyPEM []byte
}

// SecretRef reads one key of a DataStore's Secret reference.
func SecretRef(t *testing.T, c *framework.Cluster, r kamaji.ContentRef) []byte {
	t.Helper()
	if r.Content != nil {
		return r.Content
	}
	data := SecretData(t, c, r.SecretReference.Namespace, r.SecretReference.Name)
	v, ok := data[r.SecretReference.KeyPath]
	if !ok {
		t.Fatalf("Secret %s/%s has no %s", r.SecretReference.Namespace, r.SecretReference.Name, r.SecretReference.KeyPath)
	}
	return v
}

// DataStoreClient connects to the DataStore the way Kamaji does: its endpoints over TLS, its CA,
// the client certificate it names (or the one given).
func DataStoreClient(t *testing.T, c *framework.Cluster, ds *kamaji.DataStore, cert *tls.Certificate) (*clientv3.Client, error) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(SecretRef(t, c, ds.Spec.TLSConfig.CertificateAuthority.Certificate)) {
		t.Fatal("DataStore CA certificate does not parse")
	}
	if cert == nil {
		pair, err := tls.X509KeyPair(SecretRef(t, c, ds.Spec.TLSConfig.ClientCertificate.Certificate),
			SecretRef(t, c, ds.Spec.TLSConfig.ClientCertificate.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		cert = &pair
	}
	var endpoints []string
	for _, e := range ds.Spec.Endpoints {
		endpoints = append(endpoints, "https://"+e)
	}
	conf := ClientConfig(c, endpoints...)
	conf.TLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	cli, err := clientv3.New(conf)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, nil
}

// PlayKamaji does what Kamaji's etcd driver does for a TCP (user without password, a role
// with read-write on /<schema>/, the user granted it) and mints the tenant's client certificate
// from the DataStore's CA certificate and key.
func PlayKamaji(t *testing.T, c *framework.Cluster, dsName, user, schema string) TenantCreds {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds := &kamaji.DataStore{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: dsName}, ds); err != nil {
		t.Fatal(err)
	}
	cli, err := DataStoreClient(t, c, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	WaitNoError(t, time.Minute, "Kamaji's health check (AuthStatus) with the DataStore's root certificate", func() error {
		_, err := cli.AuthStatus(ctx)
		return err
	})
	prefix := "/" + schema + "/"
	for _, step := range []func() error{
		func() error {
			_, err := cli.UserAddWithOptions(ctx, user, "", &clientv3.UserAddOptions{NoPassword: true})
			return err
		},
		func() error { _, err := cli.RoleAdd(ctx, schema); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, schema, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserGrantRole(ctx, user, schema); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	caPEM := SecretRef(t, c, ds.Spec.TLSConfig.CertificateAuthority.Certificate)
	certPEM, keyPEM := MintClient(t, caPEM, SecretRef(t, c, *ds.Spec.TLSConfig.CertificateAuthority.PrivateKey), user)
	return TenantCreds{Endpoints: ds.Spec.Endpoints, CAPEM: caPEM, CertPEM: certPEM, KeyPEM: keyPEM}
}

// MintClient signs a client certificate with CN cn by the CA as Kamaji 1.0.0 does per tenant:
// it reads the CA key only as PKCS#1 RSA (x509.ParsePKCS1PrivateKey; a CA of another key type
// fails here as it fails in Kamaji) and gives the tenant an RSA 2048 key.
func MintClient(t *testing.T, caPEM, caKeyPEM []byte, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	caBlock, _ := pem.Decode(caPEM)
	keyBlock, _ := pem.Decode(caKeyPEM)
	if caBlock == nil || keyBlock == nil {
		t.Fatal("the DataStore's CA certificate or key is not PEM")
	}
	caCert, err := x509.ParseCertificate(caBlock.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParsePKCS1PrivateKey(keyBlock.Bytes)
	if err != nil {
		t.Fatalf("Kamaji 1.0.0 cannot sign with the DataStore's CA key (PEM %s): %v", keyBlock.Type, err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

const apiserverToken = "tenant-admin-token"

// StartTenantAPIServer runs kube-apiserver from the tools cache as a Pod in ns with the flags
// Kamaji gives a tenant (reference §3.3: --etcd-servers, --etcd-prefix=/<schema>, the etcd
// CA, the tenant's client certificate, --etcd-compaction-interval=0), and returns a client of it once /readyz answers.
func StartTenantAPIServer(t *testing.T, c *framework.Cluster, ns, schema string, creds TenantCreds) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	ctx := context.Background()
	version, err := localcluster.KubernetesVersion(localcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	saKey, saPub := serviceAccountKeys(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tenant-apiserver", Namespace: ns}, Data: map[string][]byte{
		"etcd-ca.crt": creds.CAPEM, "etcd-client.crt": creds.CertPEM, "etcd-client.key": creds.KeyPEM,
		"sa.key": saKey, "sa.pub": saPub, "tokens.csv": []byte(apiserverToken + ",tenant-admin,tenant-admin,system:masters\n"),
	}}
	if err := c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, e := range creds.Endpoints {
		servers = append(servers, "https://"+e)
	}
	args := []string{
		"--etcd-servers=" + strings.Join(servers, ","), "--etcd-prefix=/" + schema,
		"--etcd-cafile=/pki/etcd-ca.crt", "--etcd-certfile=/pki/etcd-client.crt", "--etcd-keyfile=/pki/etcd-client.key",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=/pki/sa.pub",
		"--service-account-signing-key-file=/pki/sa.key", "--service-cluster-ip-range=10.250.0.0/24",
		"--authorization-mode=AlwaysAllow", "--token-auth-file=/pki/tokens.csv", "--secure-port=6443",
		"--cert-dir=/var/run/kubernetes", "--enable-priority-and-fairness=false",
		// As Kamaji runs every tenant apiserver: compaction is the datastore's job.
		"--etcd-compaction-interval=0",
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-apiserver", Namespace: ns}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:" + version,
			Command:      append([]string{"kube-apiserver"}, args...),
			VolumeMounts: []corev1.VolumeMount{{Name: "pki", MountPath: "/pki", ReadOnly: true}, {Name: "certs", MountPath: "/var/run/kubernetes"}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		Volumes: []corev1.Volume{
			{Name: "pki", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name, DefaultMode: ptr.To[int32](0o444)}}},
			{Name: "certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 2*time.Minute, "the tenant apiserver Pod has an IP", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		return pod.Status.PodIP != ""
	})
	dial := ClusterDialer(c)
	cfg := &rest.Config{Host: "https://" + pod.Status.PodIP + ":6443", BearerToken: apiserverToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Dial: dial, Timeout: 5 * time.Second, QPS: 100, Burst: 100}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	WaitNoError(t, 2*time.Minute, "the tenant apiserver's /readyz", func() error {
		return Readyz(ctx, cs)
	})
	return cs, cfg
}

func Readyz(ctx context.Context, cs *kubernetes.Clientset) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

// serviceAccountKeys is the tenant apiserver's token signing key pair.
func serviceAccountKeys(t *testing.T) (keyPEM, pubPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// InstallKamajiCRDs installs the operator's CRDs and Kamaji's (its real ones when ../shared has them).
func InstallKamajiCRDs(t *testing.T, c *framework.Cluster) {
	t.Helper()
	if err := InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	dir := KamajiCRDDir()
	t.Logf("Kamaji CRDs from %s", dir)
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
}

// KamajiCRDDir is the folder of Kamaji's real CRDs in ../shared when CI has it, else the
// generated fixture.
func KamajiCRDDir() string {
	if shared, ok := testenv.SharedDir(); ok {
		if _, err := os.Stat(filepath.Join(shared, "crds", "kamaji")); err == nil {
			return filepath.Join(shared, "crds", "kamaji")
		}
	}
	return testenv.FixtureCRDDir("kamaji")
}

// CreateTCP creates a TenantControlPlane that opts in, with what Kamaji's CRD requires (and
// its webhook would default); no Kamaji controller runs.
func CreateTCP(t *testing.T, c *framework.Cluster, ns, name string, spec *string) *kamaji.TenantControlPlane {
	t.Helper()
	annotations := map[string]string{v1alpha2.AnnotationTenantEtcd: "true"}
	if spec != nil {
		annotations[v1alpha2.AnnotationTenantEtcdSpec] = *spec
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"controlPlane":   map[string]any{"service": map[string]any{"serviceType": "ClusterIP"}},
		"kubernetes":     map[string]any{"version": "v1.33.0", "kubelet": map[string]any{}},
		"networkProfile": map[string]any{"port": int64(6443)},
	}}}
	u.SetGroupVersionKind(kamaji.GroupVersion.WithKind("TenantControlPlane"))
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetAnnotations(annotations)
	if err := c.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return GetTCP(t, c, ns, name)
}

func GetTCP(t *testing.T, c *framework.Cluster, ns, name string) *kamaji.TenantControlPlane {
	t.Helper()
	tcp := &kamaji.TenantControlPlane{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tcp); err != nil {
		t.Fatal(err)
	}
	return tcp
}

func DataStore(t *testing.T, c *framework.Cluster, name string) *kamaji.DataStore {
	t.Helper()
	ds := &kamaji.DataStore{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

// WaitTenantState waits for the TCP's state annotation.
func WaitTenantState(t *testing.T, c *framework.Cluster, tcp *kamaji.TenantControlPlane, want string, timeout time.Duration) {
	t.Helper()
	var got string
	WaitFor(t, timeout, "TCP state "+want, func() bool {
		got = GetTCP(t, c, tcp.Namespace, tcp.Name).Annotations[v1alpha2.AnnotationTenantEtcdState]
		return got == want
	})
}
