//go:build e2e

// Package monitoring runs a real Prometheus (from the tools cache) in the local cluster: it
// scrapes the operator and, as the etcd chart's ServiceMonitor asks, the members through
// Kubernetes service discovery, and evaluates the operator chart's alert rules unchanged. The
// dashboard's queries are run against it too.
package monitoring

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// promAddr is where Prometheus listens inside the cluster netns (the operator has 19080/19081).
const promAddr = "127.0.0.1:19090"

// prometheusConfig scrapes the operator at its metrics address and the members the way
// prometheus-operator turns the etcd chart's ServiceMonitor into a scrape job (endpointslices of
// the <cluster>-metrics Service; namespace, service, pod and endpoint labels), every 2 s.
const prometheusConfig = `
global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [%q]
scrape_configs:
  - job_name: etcd-operator
    static_configs: [{targets: [%q]}]
  - job_name: serviceMonitor/%[3]s/%[4]s/0
    kubernetes_sd_configs:
      - {role: endpointslice, kubeconfig_file: %[5]q, namespaces: {names: [%[3]s]}}
    relabel_configs:
      - {source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_component], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_service_label_app_kubernetes_io_part_of], regex: %[4]s, action: keep}
      - {source_labels: [__meta_kubernetes_endpointslice_port_name], regex: metrics, action: keep}
      - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
      - {source_labels: [__meta_kubernetes_service_name], target_label: service}
      - {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
      - {target_label: endpoint, replacement: metrics}
`

// startPrometheus runs Prometheus in the cluster's netns with the shipped rules, scraping the
// operator and the members of cluster in ns; it is killed with the test.
func startPrometheus(t *testing.T, c *framework.Cluster, ns, cluster string) promv1.API {
	t.Helper()
	bin, err := localcluster.ResolvePrometheus(localcluster.Options{Name: c.Name})
	if err != nil {
		t.Fatal(err)
	}
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf(prometheusConfig, filepath.Join(root, "charts/etcd-operator/files/alerts/rules.yaml"),
		e2eutil.OperatorMetricsAddr, ns, cluster, c.State.InnerKubeconfig)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := localcluster.InClusterCommand(ctx, c.State, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			tail, _ := exec.Command("tail", "-n", "40", logf.Name()).Output()
			t.Logf("prometheus log, last lines:\n%s", tail)
		}
	})
	api, err := promapi.NewClient(promapi.Config{Address: "http://" + promAddr, RoundTripper: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.DialContext(ctx, network, addr)
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p := promv1.NewAPI(api)
	e2eutil.WaitNoError(t, time.Minute, "prometheus ready", func() error {
		_, err := p.Buildinfo(context.Background())
		return err
	})
	return p
}

// query runs an instant query and returns its vector.
func query(p promv1.API, q string) (model.Vector, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, err := p.Query(ctx, q, time.Now())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("%s: a %s, not a vector", q, v.Type())
	}
	return vec, nil
}

// alerts are the alerts of the shipped rules that are pending or firing for the cluster, by
// name.
func alerts(t *testing.T, p promv1.API, ns string) map[string]promv1.AlertState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.Alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]promv1.AlertState{}
	for _, a := range res.Alerts {
		if string(a.Labels["namespace"]) == ns {
			out[string(a.Labels["alertname"])] = a.State
		}
	}
	return out
}
