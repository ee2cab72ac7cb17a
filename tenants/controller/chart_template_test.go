package controller

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// The operator chart's own tenant template, rendered as the chart ships it (only the switch
// turned on), gives a TCP as Kamaji defaults it an EtcdCluster the API server accepts, with
// periodic compaction and a quota that fits its volume.
func TestChartDefaultTemplate(t *testing.T) {
	s := startSuite(t, testenv.FixtureCRDDir("kamaji"), Options{Template: chartTemplate(t), KamajiDefaultDataStore: KamajiDefaultDataStore})
	ns := s.namespace(t, nil)
	s.tcp(t, ns, "k8s", optIn, KamajiDefaultDataStore)
	n := specs.NamesOf(ns, "k8s")
	tcp := &kamaji.TenantControlPlane{}
	waitFor(t, "the TCP's state recorded", func() bool {
		return s.get(t, client.ObjectKey{Namespace: ns, Name: "k8s"}, tcp) && tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] != ""
	})
	if state := tcp.Annotations[v1alpha2.AnnotationTenantEtcdState]; !strings.HasPrefix(state, v1alpha2.ReasonTenantEtcdNotReady) {
		t.Fatalf("state %q: the chart's default template does not make a tenant etcd", state)
	}
	if tcp.Spec.DataStore != n.DataStore {
		t.Errorf("spec.dataStore %q, want %s", tcp.Spec.DataStore, n.DataStore)
	}
	c := &v1alpha2.EtcdCluster{}
	if !s.get(t, client.ObjectKey{Namespace: ns, Name: n.Cluster}, c) {
		t.Fatal("no EtcdCluster")
	}
	o := c.Spec.Options
	if o == nil || o.AutoCompactionMode != specs.TenantCompactionMode || o.AutoCompactionRetention != specs.TenantCompactionRetention ||
		o.QuotaBackendBytes == nil || *o.QuotaBackendBytes != specs.TenantQuota(c.Spec.Storage.Size) {
		t.Errorf("options %+v with storage %s: want periodic compaction every 5m and a quota of 0.95 × the volume", o, c.Spec.Storage.Size.String())
	}
}

// chartTemplate is the tenant template the operator chart mounts with its default values.
func chartTemplate(t *testing.T) []byte {
	t.Helper()
	ms, err := chartrender.RenderManifests(filepath.Join(testenv.RepoRoot(), "charts", "etcd-operator"),
		map[string]any{"tenantController": map[string]any{"enabled": true}},
		chartrender.Options{ReleaseName: "etcd-operator", Namespace: "etcd-operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Object.GetKind() != "ConfigMap" || !strings.HasSuffix(m.Object.GetName(), "-tenant-template") {
			continue
		}
		tmpl, found, err := unstructured.NestedString(m.Object.Object, "data", "template.yaml")
		if !found || err != nil {
			t.Fatalf("the tenant template ConfigMap has no template.yaml: %v", err)
		}
		return []byte(tmpl)
	}
	t.Fatal("the chart renders no tenant template ConfigMap with tenantController.enabled")
	return nil
}
