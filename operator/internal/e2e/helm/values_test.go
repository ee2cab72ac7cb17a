package helm

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/images"
	"github.com/cozystack/etcd-operator/internal/chartrender"
)

// Releases, namespaces and names of the e2e installs.
const (
	operatorRelease   = "etcd-operator"
	operatorNamespace = "etcd-operator-system"
	// operatorReplicas is two, so the Lease really elects one of several Pods.
	operatorReplicas = 2
	// operatorImage is an air-gapped-style override; the node agent runs any
	// <registry>/etcd-operator:<tag> image as the operator binary it was given.
	operatorImageRepository = "registry.local/etcd-operator"
	operatorImageTag        = "e2e"

	etcdRelease   = "etcd"
	etcdNamespace = "tenant-helm"
	etcdReplicas  = 3
)

// chartDir is a chart folder of this repository.
func chartDir(tb testing.TB, name string) string {
	tb.Helper()
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, "charts", name)
}

// operatorValues installs the operator chart as a platform team would, with the image moved to
// another registry (which also proves the override reaches the Deployment).
func operatorValues() map[string]any {
	return map[string]any{
		"image":    map[string]any{"repository": operatorImageRepository, "tag": operatorImageTag},
		"replicas": operatorReplicas,
	}
}

// The Secrets charts/etcd's default TLS (tls.mode=pki, leaf certificates rendered by the chart,
// client auth and peer TLS on) has cert-manager fill and hands to the EtcdCluster's spec.tls.
const (
	etcdServerSecret = etcdRelease + "-server-tls"
	etcdClientSecret = etcdRelease + "-client-tls" // CN root, the tenant's (and the operator's) client certificate
	etcdPeerSecret   = etcdRelease + "-peer-tls"
)

// etcdValues keeps every chart default, TLS included (a cert-manager CA and the leaf
// Certificates the chart renders), with the replicas set explicitly because the e2e counts
// members. The local cluster needs nothing else: its DNS domain is the chart's fallback
// cluster domain (cluster.local, which the server certificate's names use; clusterDomain and
// _cluster.cluster-domain are unset), its default
// StorageClass backs the PVCs, and its nodes run the default etcd version from the tools cache.
func etcdValues() map[string]any {
	return map[string]any{"replicas": etcdReplicas}
}

// TestValuesFitTheLocalCluster renders both charts with the e2e values and checks what the
// local cluster depends on: the operator image resolves to the operator binary, the manager runs
// with leader election, and the EtcdCluster has 3 replicas and TLS on both planes from Secrets
// that the chart's own cert-manager Certificates fill, the server one covering the name the e2e dials.
func TestValuesFitTheLocalCluster(t *testing.T) {
	objs, err := chartrender.Render(chartDir(t, "etcd-operator"), operatorValues(), operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	d := find(t, objs, "Deployment")
	containers := nested[[]any](t, d.Object, "spec", "template", "spec", "containers")
	manager := containers[0].(map[string]any)
	bin := filepath.Join(t.TempDir(), "manager")
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	res, err := images.Table{OperatorBinary: bin}.Resolve(manager["image"].(string))
	if err != nil || res.Kind != images.KindOperator {
		t.Errorf("image %v: the node agent resolves it to %q, %v; want the operator binary", manager["image"], res.Kind, err)
	}
	if got := nested[int64](t, d.Object, "spec", "replicas"); got != operatorReplicas {
		t.Errorf("Deployment replicas %d, want %d", got, operatorReplicas)
	}
	if args := manager["args"].([]any); args[0] != "--leader-elect=true" {
		t.Errorf("manager args %v: want leader election on", args)
	}

	objs, err = chartrender.Render(chartDir(t, "etcd"), etcdValues(), etcdNamespace)
	if err != nil {
		t.Fatal(err)
	}
	ec := find(t, objs, "EtcdCluster")
	if got := nested[int64](t, ec.Object, "spec", "replicas"); got != etcdReplicas {
		t.Errorf("EtcdCluster replicas %d, want %d", got, etcdReplicas)
	}
	if ec.GetName() != etcdRelease {
		t.Errorf("EtcdCluster %q, want the release name %q", ec.GetName(), etcdRelease)
	}
	certs := certificatesBySecret(t, objs)
	for _, ref := range []struct {
		field []string
		want  string
	}{
		{[]string{"client", "serverSecretRef"}, etcdServerSecret},
		{[]string{"client", "operatorClientSecretRef"}, etcdClientSecret},
		{[]string{"peer", "secretRef"}, etcdPeerSecret},
	} {
		secret := nested[string](t, ec.Object, append(append([]string{"spec", "tls"}, ref.field...), "name")...)
		if secret != ref.want {
			t.Errorf("spec.tls.%v: Secret %q, want %q", ref.field, secret, ref.want)
		}
		if _, ok := certs[secret]; !ok {
			t.Errorf("spec.tls.%v names Secret %q, which no rendered Certificate fills (Certificates by Secret: %v)", ref.field, secret, keys(certs))
		}
	}
	// The operator starts no member whose server certificate misses a form of either Service
	// (it reports CertificateInvalid instead); the client Service's FQDN is also what the e2e dials.
	if server, ok := certs[etcdServerSecret]; ok {
		dnsNames := nested[[]any](t, server.Object, "spec", "dnsNames")
		for _, svc := range []string{etcdRelease, etcdRelease + "-client"} {
			for _, name := range []string{svc, svc + "." + etcdNamespace, svc + "." + etcdNamespace + ".svc",
				svc + "." + etcdNamespace + ".svc." + localcluster.DefaultClusterDomain} {
				if !slices.Contains(dnsNames, any(name)) {
					t.Errorf("server Certificate dnsNames %v lack %q", dnsNames, name)
				}
			}
		}
	}
	if n := len(certs); n != 4 {
		t.Errorf("%d Certificates rendered (%v), want the CA, server, peer and client ones", n, keys(certs))
	}
}

// certificatesBySecret indexes the rendered cert-manager Certificates by the Secret they fill.
func certificatesBySecret(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetAPIVersion() == "cert-manager.io/v1" && o.GetKind() == "Certificate" {
			out[nested[string](t, o.Object, "spec", "secretName")] = o
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// find returns the one rendered object of kind.
func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var out *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			if out != nil {
				t.Fatalf("more than one %s rendered", kind)
			}
			out = o
		}
	}
	if out == nil {
		t.Fatalf("no %s rendered", kind)
	}
	return out
}

// nested reads a field of a rendered object, failing the test when it is missing or of another type.
func nested[T any](t *testing.T, obj map[string]any, fields ...string) T {
	t.Helper()
	v, ok, err := unstructured.NestedFieldNoCopy(obj, fields...)
	got, isT := v.(T)
	if err != nil || !ok || !isT {
		t.Fatalf("field %v: %v (%T), want a %T", fields, v, v, got)
	}
	return got
}
