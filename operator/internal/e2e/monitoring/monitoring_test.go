//go:build e2e

package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/chartrender"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

const (
	convergeTimeout = 5 * time.Minute
	name            = "mon"
	// quota is small so that the test can fill the database near it quickly.
	quota = 24 << 20
)

// TestPrometheus: a cluster made from the etcd chart (with its metrics Service), a real
// Prometheus scraping it and the operator and evaluating the shipped rules: healthy raises
// nothing, every dashboard panel has data, the member counts follow a scale 3→5→3, a member held
// down and a database near its quota raise their alerts.
func TestPrometheus(t *testing.T) {
	c := framework.Shared(t)
	e2eutil.StartSuiteOperator(t, c, 300)
	ns := e2eutil.NewNamespace(t, c)
	createFromChart(t, c, ns)
	cfg := e2eutil.TLSConfig(t, c, ns, name+"-server", "")
	e2eutil.WaitConvergedTLS(t, c, ns, name, 3, cfg, convergeTimeout)
	p := startPrometheus(t, c, ns, name)
	waitQuery(t, p, "the operator and 3 members scraped", `count(up{job="etcd-operator"} == 1) + count(up{namespace="`+ns+`",service="`+name+`-metrics"} == 1)`, 4)
	cli := e2eutil.TLSEtcdClient(t, c, ns, name, cfg)

	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Healthy", func(t *testing.T) { testHealthy(t, p, ns) }},
		{"Dashboard", func(t *testing.T) { testDashboard(t, c, p, ns) }},
		{"Scale", func(t *testing.T) { testScale(t, c, p, ns, cli) }},
		{"MemberDown", func(t *testing.T) { testMemberDown(t, c, p, ns) }},
		{"NearQuota", func(t *testing.T) { testNearQuota(t, p, ns, cli, e2eutil.TLSMembersClient(t, c, ns, name, cfg)) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			return
		}
	}
}

// createFromChart applies the EtcdCluster and the metrics Service the etcd chart renders: TLS on
// the client plane from a Secret (so the operator exports certificate expiry), the chart's
// ServiceMonitor turned on (its Service is what Prometheus discovers), a small quota.
func createFromChart(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	// 90 days: the shipped rules rightly alert on a certificate that expires within 7.
	all := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns, ClusterDomain: c.ClusterDomain()})
	e2eutil.CreateTLSSecret(t, c, ns, name+"-server",
		pkitest.NewCA(t, name+"-ca").SecretDataValidFor(t, 90*24*time.Hour, all.DNS, all.IPs, pkitest.ServerAndClient...))
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"replicas": 3, "version": e2eutil.EtcdVersion(), "options": map[string]any{"quotaBackendBytes": quota},
		"tls":     map[string]any{"mode": "secrets", "clientAuth": false, "peer": false, "secrets": map[string]any{"server": name + "-server"}},
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
	}
	ms, err := chartrender.RenderManifests(filepath.Join(root, "charts/etcd"), values, chartrender.Options{ReleaseName: name, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, m := range ms {
		if k := m.Object.GetKind(); k != "EtcdCluster" && k != "Service" {
			continue // the ServiceMonitor: this test's Prometheus config is what prometheus-operator makes of it
		}
		if err := c.Client.Create(context.Background(), m.Object); err != nil {
			t.Fatalf("%s %s: %v", m.Object.GetKind(), m.Object.GetName(), err)
		}
		applied++
	}
	if applied != 2 {
		t.Fatalf("the chart rendered %d EtcdClusters and Services, want one of each", applied)
	}
}

// testHealthy: once every rule group has been evaluated on the scraped data, no alert of the
// shipped rules is pending or firing for the cluster.
func testHealthy(t *testing.T, p promv1.API, ns string) {
	start := time.Now()
	e2eutil.WaitNoError(t, time.Minute, "every rule group evaluated after the first scrapes", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rules, err := p.Rules(ctx, nil)
		if err != nil {
			return err
		}
		if len(rules.Groups) != 3 {
			return fmt.Errorf("%d rule groups loaded, want 3", len(rules.Groups))
		}
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				a, ok := r.(promv1.AlertingRule)
				switch {
				case !ok:
				case a.Health != promv1.RuleHealthGood:
					return fmt.Errorf("rule %s: health %s (%s)", a.Name, a.Health, a.LastError)
				case a.LastEvaluation.Before(start):
					return fmt.Errorf("rule %s last evaluated %s", a.Name, a.LastEvaluation)
				}
			}
		}
		return nil
	})
	if a := alerts(t, p, ns); len(a) != 0 {
		t.Errorf("a healthy cluster raised %v", a)
	}
}

// testDashboard runs every panel query of the shipped dashboard for this cluster; each returns
// data, except the one that lists clusters short of members (checked in MemberDown).
func testDashboard(t *testing.T, c *framework.Cluster, p promv1.API, ns string) {
	takeSnapshot(t, c, ns) // the backup panels
	for title, q := range dashboardQueries(t, ns) {
		if strings.HasPrefix(title, shortOfMembersPanel+" #") {
			continue
		}
		e2eutil.WaitNoError(t, time.Minute, "panel "+title, func() error {
			vec, err := query(p, q)
			if err == nil && len(vec) == 0 {
				err = fmt.Errorf("%s: no data", q)
			}
			return err
		})
	}
}

const shortOfMembersPanel = "Clusters with fewer ready members than desired"

// dashboardQueries are the dashboard's panel queries by title, with its variables set.
func dashboardQueries(t *testing.T, ns string) map[string]string {
	t.Helper()
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "charts/etcd-operator/files/dashboards/etcd-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$namespace", ns, "$cluster", name, "$__rate_interval", "1m")
	out := map[string]string{}
	for _, panel := range d.Panels {
		for i, target := range panel.Targets {
			out[fmt.Sprintf("%s #%d", panel.Title, i)] = vars.Replace(target.Expr)
		}
	}
	if len(out) < 15 {
		t.Fatalf("only %d panel queries read", len(out))
	}
	return out
}

func takeSnapshot(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	e2eutil.SnapshotToNewPVC(t, c, ns, name, "first", v1alpha2.PVCLocation{ClaimName: "snaps"}, 2*time.Minute)
}

// testScale: Prometheus sees the operator's member counts and a leader follow 3→5→3.
func testScale(t *testing.T, c *framework.Cluster, p promv1.API, ns string, cli *clientv3.Client) {
	sel := `{namespace="` + ns + `",cluster="` + name + `"}`
	for _, n := range []int32{5, 3} {
		e2eutil.Scale(t, c, ns, name, n)
		e2eutil.WaitConvergedWith(t, c, ns, name, int(n), cli, convergeTimeout)
		waitQuery(t, p, fmt.Sprintf("%d voting members in Prometheus", n), `etcd_operator_cluster_members{state="voting",namespace="`+ns+`",cluster="`+name+`"}`, float64(n))
		waitQuery(t, p, fmt.Sprintf("%d members' database sizes in Prometheus", n), `count(etcd_operator_cluster_member_db_size_bytes`+sel+`)`, float64(n))
		waitQuery(t, p, "a leader in Prometheus", `etcd_operator_cluster_leader_present`+sel, 1)
	}
}

// testMemberDown stops the node of one member and holds it down: the member-down and
// quorum-at-risk alerts go pending (they fire after their `for`, which promtool tests cover),
// and the dashboard's list of clusters short of members shows the cluster.
func testMemberDown(t *testing.T, c *framework.Cluster, p promv1.API, ns string) {
	node := nodeOfAMember(t, c, ns)
	start := time.Now()
	if err := c.StopNode(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StartNode(node) })
	took := e2eutil.WaitFor(t, 2*time.Minute, "EtcdClusterMemberDown and EtcdClusterQuorumAtRisk pending", func() bool {
		a := alerts(t, p, ns)
		return a["EtcdClusterMemberDown"] != "" && a["EtcdClusterQuorumAtRisk"] != ""
	})
	t.Logf("node %d stopped: member-down and quorum-at-risk pending %s later", node, took.Round(time.Millisecond))
	q := dashboardQueries(t, ns)[shortOfMembersPanel+" #0"]
	waitQuery(t, p, "the dashboard's list of clusters short of members", `sum(`+q+`)`, 1)
	if err := c.StartNode(node); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 3*time.Minute, "the alerts resolved once the node is back", func() bool {
		a := alerts(t, p, ns)
		return a["EtcdClusterMemberDown"] == "" && a["EtcdClusterQuorumAtRisk"] == ""
	})
	t.Logf("resolved %s after the stop", time.Since(start).Round(time.Millisecond))
}

func nodeOfAMember(t *testing.T, c *framework.Cluster, ns string) int {
	t.Helper()
	m := e2eutil.Members(t, c, ns, name)[0]
	pod := e2eutil.Pod(t, c, ns, m.Name)
	i, err := c.NodeIndex(pod.Spec.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// testNearQuota writes until a member's database passes 85% of its quota (read from etcd after
// each write; short of NOSPACE): the near-quota alert goes pending, from etcd's own metrics, and
// the operator reports the quota it was given.
func testNearQuota(t *testing.T, p promv1.API, ns string, cli, members *clientv3.Client) {
	waitQuery(t, p, "the operator's quota", `etcd_operator_cluster_db_quota_bytes{namespace="`+ns+`",cluster="`+name+`"}`, quota)
	value := strings.Repeat("x", 256<<10)
	written := 0
	for largestDB(t, members) < quota*85/100 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("/fill/%04d", written), value)
		cancel()
		if err != nil {
			t.Fatalf("put %d: %v", written, err)
		}
		written++
	}
	took := e2eutil.WaitFor(t, time.Minute, "EtcdDatabaseNearQuota pending", func() bool {
		return alerts(t, p, ns)["EtcdDatabaseNearQuota"] != ""
	})
	t.Logf("%d KiB written, a database past 85%% of its %d MiB quota: near-quota pending %s later", written*256, quota>>20, took.Round(time.Millisecond))
}

// largestDB is the largest member database, as etcd reports it (cli lists every member).
func largestDB(t *testing.T, cli *clientv3.Client) int64 {
	t.Helper()
	var largest int64
	for _, ep := range cli.Endpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err != nil {
			t.Fatalf("status of %s: %v", ep, err)
		}
		largest = max(largest, st.DbSize)
	}
	return largest
}

// waitQuery waits until q returns one sample equal to want.
func waitQuery(t *testing.T, p promv1.API, what, q string, want float64) {
	t.Helper()
	e2eutil.WaitNoError(t, 2*time.Minute, what, func() error {
		vec, err := query(p, q)
		switch {
		case err != nil:
			return err
		case len(vec) != 1:
			return fmt.Errorf("%s: %d samples", q, len(vec))
		case float64(vec[0].Value) != want:
			return fmt.Errorf("%s = %v, want %v", q, vec[0].Value, want)
		}
		return nil
	})
}
