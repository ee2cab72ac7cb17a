package metrics

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

const (
	repoRoot      = "../../.."
	rulesPath     = repoRoot + "/charts/etcd-operator/files/alerts/rules.yaml"
	dashboardPath = repoRoot + "/charts/etcd-operator/files/dashboards/etcd-operator.json"
)

// TestAlertRulesNameExportedMetrics: every metric an alert rule's expression names is one the
// operator exports (this package's collector, controller-runtime's reconcile metrics) or one
// every supported etcd serves on its /metrics (each version from the tools cache, run as a
// two-member cluster on loopback that served a request): a renamed metric breaks the test, not the
// alert in production.
func TestAlertRulesNameExportedMetrics(t *testing.T) {
	checkExpressions(t, ruleExpressions(t))
}

// TestDashboardNamesExportedMetrics: the same for every query of the Grafana dashboard (panel
// targets and template variables), which must also be valid JSON with a uid.
func TestDashboardNamesExportedMetrics(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" {
		t.Error("the dashboard has no uid")
	}
	exprs := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			exprs[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		// label_values(<selector>, <label>): Grafana's, not PromQL; its selector is.
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			exprs["variable "+v.Name] = m[1]
		} else if v.Definition != "" {
			t.Errorf("variable %s: %q is not label_values(<selector>, <label>)", v.Name, v.Definition)
		}
	}
	checkExpressions(t, exprs)
}

// checkExpressions fails for an expression naming no metric, or one that is not exported.
func checkExpressions(t *testing.T, exprs map[string]string) {
	t.Helper()
	known, versions := exportedMetrics(t)
	for what, expr := range exprs {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric found in %q", what, expr)
		}
		for _, n := range names {
			if !known[n] {
				t.Errorf("%s names %s, which neither the operator nor every etcd of %v exports", what, n, versions)
			}
		}
	}
}

var (
	exportedOnce     sync.Once
	exportedNames    map[string]bool
	exportedVersions []string
)

// exportedMetrics are the names the operator exports and those every supported etcd serves.
func exportedMetrics(t *testing.T) (map[string]bool, []string) {
	t.Helper()
	exportedOnce.Do(func() {
		known := operatorMetricNames(t)
		for name := range controllerRuntimeMetricNames(t) {
			known[name] = true
		}
		etcdNames := map[string]int{}
		versions := strings.Fields(pinned(t, "ETCD_VERSIONS"))
		for _, v := range versions {
			for name := range etcdMetricNames(t, v) {
				etcdNames[name]++
			}
		}
		for name, n := range etcdNames {
			if n == len(versions) {
				known[name] = true
			}
		}
		exportedNames, exportedVersions = known, versions
	})
	if exportedNames == nil {
		t.Fatal("the exported metric names could not be read (see the first test that asked)")
	}
	return exportedNames, exportedVersions
}

func ruleExpressions(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string } `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	if len(out) == 0 {
		t.Fatal("no rules read")
	}
	return out
}

var (
	stringLit   = regexp.MustCompile(`"[^"]*"`)
	matchers    = regexp.MustCompile(`\{[^}]*\}`)
	ranges      = regexp.MustCompile(`\[[^\]]*\]`)
	labelLists  = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	labelValues = regexp.MustCompile(`^label_values\((.*),\s*\w+\)$`)
	identifier  = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords    = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}
)

// metricNames are the metric names a PromQL expression selects: identifiers outside label
// matchers, ranges and label lists that are neither functions nor keywords.
func metricNames(expr string) []string {
	s := labelLists.ReplaceAllString(ranges.ReplaceAllString(matchers.ReplaceAllString(stringLit.ReplaceAllString(expr, ""), " "), " "), " ")
	var out []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		name, rest := s[loc[0]:loc[1]], strings.TrimLeft(s[loc[1]:], " \t\n")
		if keywords[name] || strings.HasPrefix(rest, "(") {
			continue
		}
		out = append(out, name)
	}
	return out
}

// operatorMetricNames are the names this package's collector exports.
func operatorMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, mf := range gatherAll(t) {
		out[mf.GetName()] = true
	}
	return out
}

// gatherAll gathers the collector over a cluster with every kind of series (members, a rollout,
// a snapshot, certificates).
func gatherAll(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"},
		Spec:   v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3)},
		Status: v1alpha2.EtcdClusterStatus{Rollout: &v1alpha2.RolloutStatus{}}}
	snap := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "s"},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "a"}},
		Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete, CompletionTime: &metav1.Time{Time: time.Unix(1, 0)},
			Duration: &metav1.Duration{Duration: time.Second}, Artifact: &v1alpha2.SnapshotArtifact{SizeBytes: 1}}}
	cert := pkitest.NewCA(t, "ca").SecretData(t, []string{"a"}, nil, pkitest.ServerAndClient...)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: v1alpha2.ActiveServerSecretName("a")}, Data: cert}
	obs := NewObservations()
	obs.Record(client.ObjectKeyFromObject(ec), Observation{Leader: 1, Alarms: []string{"NOSPACE"},
		Members: []MemberDB{{Name: "a-x", Size: 2, InUse: 1}}})
	obs.ReconcileError(client.ObjectKeyFromObject(ec), "Reconcile")
	etcd.RequestDuration.WithLabelValues("t", "a", "etcdserverpb.Cluster/MemberList").Observe(0.01)
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(ec, snap, sec).Build(), Observations: obs}, etcd.RequestDuration)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// controllerRuntimeMetricNames are the reconcile metrics of the controller-runtime this module
// builds with, read from its source (they are registered, but have no series until a
// controller runs).
func controllerRuntimeMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/controller-runtime").Output()
	if err != nil {
		t.Fatalf("go list controller-runtime: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "pkg/internal/controller/metrics/metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`Name:\s*"([a-z_]+)"`).FindAllStringSubmatch(string(src), -1) {
		out[m[1]] = true
	}
	if !out["controller_runtime_reconcile_errors_total"] {
		t.Fatalf("controller-runtime's metrics source names no controller_runtime_reconcile_errors_total: %v", out)
	}
	return out
}

// etcdMetricNames runs the tools cache's etcd of that version on loopback and reads the metric
// names its /metrics serves (a histogram's _bucket, _sum and _count included).
func etcdMetricNames(t *testing.T, version string) map[string]bool {
	t.Helper()
	bin := filepath.Join(toolsDir(), "etcd-"+version, "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing (%v): run `make tools`", bin, err)
	}
	// Two members, so the series of peers exist (the round-trip prober's histogram), and a request
	// through the gRPC gateway, so do those of served requests (grpc_server_handled_total).
	peers := []string{loopbackURL(t), loopbackURL(t)}
	initial := "m0=" + peers[0] + ",m1=" + peers[1]
	var client, metrics string
	for i, peer := range peers {
		c, m := loopbackURL(t), loopbackURL(t)
		if i == 0 {
			client, metrics = c, m
		}
		cmd := exec.Command(bin, fmt.Sprintf("--name=m%d", i), "--data-dir="+t.TempDir(), "--listen-client-urls="+c, "--advertise-client-urls="+c,
			"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer, "--initial-cluster="+initial,
			"--listen-metrics-urls="+m, "--log-level=error")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	want := []string{"etcd_server_has_leader", "grpc_server_handled_total", "etcd_network_peer_round_trip_time_seconds_bucket"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Post(client+"/v3/kv/range", "application/json", strings.NewReader(`{"key":"YQ=="}`)); err == nil {
			_ = resp.Body.Close()
		}
		names, err := scrapeNames(metrics + "/metrics")
		if err == nil && hasAll(names, want) {
			return names
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Fatalf("etcd %s served no metrics: %v", version, err)
			}
			return names // what is missing is reported as not exported
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func hasAll(names map[string]bool, want []string) bool {
	for _, n := range want {
		if !names[n] {
			return false
		}
	}
	return true
}

func scrapeNames(url string) (map[string]bool, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bufio.NewReader(resp.Body))
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for name, mf := range mfs {
		out[name] = true
		if mf.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				out[name+suffix] = true
			}
		}
	}
	return out, nil
}

func loopbackURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprintf("http://%s", l.Addr())
}

func toolsDir() string {
	if dir := os.Getenv("ETCD_OPERATOR_TOOLS"); dir != "" {
		return dir
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "etcd-operator-tools")
}

// pinned reads a value of hack/versions.env.
func pinned(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(repoRoot + "/hack/versions.env")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+"="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	t.Fatalf("%s not in hack/versions.env", name)
	return ""
}

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string]string{
		`etcd_operator_cluster_leader_present == 0 and on(namespace, cluster) etcd_operator_cluster_members{state="desired"} > 0`: "etcd_operator_cluster_leader_present etcd_operator_cluster_members",
		`max by (namespace, service) (increase(etcd_server_leader_changes_seen_total[1h])) > 4`:                                   "etcd_server_leader_changes_seen_total",
		`time() - etcd_operator_cluster_last_snapshot_timestamp_seconds > 25 * 3600`:                                              "etcd_operator_cluster_last_snapshot_timestamp_seconds",
		`histogram_quantile(0.99, sum by (namespace, service, le) (rate(etcd_disk_wal_fsync_duration_seconds_bucket[5m]))) > 0.5`: "etcd_disk_wal_fsync_duration_seconds_bucket",
	} {
		if got := strings.Join(metricNames(expr), " "); got != want {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}
