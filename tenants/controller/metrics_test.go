package controller

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

func TestFleetMetrics(t *testing.T) {
	s := runtime.NewScheme()
	if err := kamaji.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	tcp := func(name, state string) *kamaji.TenantControlPlane {
		a := map[string]string{}
		if state != "" {
			a[v1alpha2.AnnotationTenantEtcdCluster] = name + "-etcd"
			a[v1alpha2.AnnotationTenantEtcdState] = state
		}
		return &kamaji.TenantControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, Annotations: a}}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(tcp("a", "Ready"), tcp("b", "Ready"),
		tcp("c", "TenantEtcdNotReady: EtcdCluster c-etcd is not Available: Bootstrapping: 1 of 3"), tcp("d", "")).Build()
	reg := prometheus.NewRegistry()
	reg.MustRegister(fleetCollector{reader: c})
	want := `
# HELP etcd_operator_tenant_etcd_ready 1 when a served TenantControlPlane's etcd is Available, else 0.
# TYPE etcd_operator_tenant_etcd_ready gauge
etcd_operator_tenant_etcd_ready{etcd_cluster="a-etcd",namespace="t",tenant="a"} 1
etcd_operator_tenant_etcd_ready{etcd_cluster="b-etcd",namespace="t",tenant="b"} 1
etcd_operator_tenant_etcd_ready{etcd_cluster="c-etcd",namespace="t",tenant="c"} 0
# HELP etcd_operator_tenants TenantControlPlanes served by the tenant controller, by state (Ready, or the reason their etcd is not).
# TYPE etcd_operator_tenants gauge
etcd_operator_tenants{state="Ready"} 2
etcd_operator_tenants{state="TenantEtcdNotReady"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
