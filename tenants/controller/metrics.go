package controller

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

// The tenant fleet, read from the cache at each scrape: series of a gone TCP go with it, and
// cardinality is bounded by the TCPs served.
var (
	tenantsDesc = prometheus.NewDesc("etcd_operator_tenants",
		"TenantControlPlanes served by the tenant controller, by state (Ready, or the reason their etcd is not).",
		[]string{"state"}, nil)
	tenantReadyDesc = prometheus.NewDesc("etcd_operator_tenant_etcd_ready",
		"1 when a served TenantControlPlane's etcd is Available, else 0.",
		[]string{"namespace", "tenant", "etcd_cluster"}, nil)
)

// fleetCollector reports the served TCPs from their state annotations.
type fleetCollector struct{ reader client.Reader }

func (f fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- tenantsDesc
	ch <- tenantReadyDesc
}

func (f fleetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var list kamaji.TenantControlPlaneList
	if err := f.reader.List(ctx, &list); err != nil {
		return // a scrape does not fail the operator; the series are absent until the cache answers
	}
	counts := map[string]int{}
	for _, tcp := range list.Items {
		cluster, served := tcp.Annotations[v1alpha2.AnnotationTenantEtcdCluster]
		if !served {
			continue
		}
		state, _, _ := strings.Cut(tcp.Annotations[v1alpha2.AnnotationTenantEtcdState], ":")
		counts[state]++
		ready := 0.0
		if state == v1alpha2.TenantStateReady {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(tenantReadyDesc, prometheus.GaugeValue, ready, tcp.Namespace, tcp.Name, cluster)
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(tenantsDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// registerMetrics adds the fleet collector to controller-runtime's registry (served on the
// manager's metrics endpoint); once per process.
func registerMetrics(reader client.Reader) error {
	err := metrics.Registry.Register(fleetCollector{reader: reader})
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		return nil
	}
	return err
}
