package helm

import (
	"os"
	"path/filepath"
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

// etcdValues is a plaintext 3-member cluster on PVCs of the default StorageClass.
// TODO(tls): switch to the chart's default tls.mode=pki once the operator consumes spec.tls.
func etcdValues() map[string]any {
	return map[string]any{
		"replicas": etcdReplicas,
		"tls":      map[string]any{"mode": "none"},
	}
}

// TestValuesFitTheLocalCluster renders both charts with the e2e values and checks what the
// local cluster depends on: the operator image resolves to the operator binary, the manager runs
// with leader election, and the EtcdCluster has 3 replicas and no TLS.
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
	if _, ok := nested[map[string]any](t, ec.Object, "spec")["tls"]; ok {
		t.Errorf("EtcdCluster has spec.tls with tls.mode=none")
	}
	if ec.GetName() != etcdRelease {
		t.Errorf("EtcdCluster %q, want the release name %q", ec.GetName(), etcdRelease)
	}
	for _, o := range objs {
		if o.GetAPIVersion() == "cert-manager.io/v1" {
			t.Errorf("tls.mode=none renders %s %s", o.GetKind(), o.GetName())
		}
	}
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
