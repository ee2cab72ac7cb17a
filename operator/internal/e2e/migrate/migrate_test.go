//go:build e2e

// Package migrate is etcd-migrate's e2e: clusters built exactly as the legacy etcd.aenix.io
// operator builds them (StatefulSet, Services, ConfigMap, flags, auto-TLS or BYO TLS peers) are
// adopted in place by the real binary while a client writes through the legacy client Service,
// then managed by the operator (scale, upgrade).
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/migrate"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

const convergeTimeout = 5 * time.Minute

// adopted is a legacy cluster the test adopted, with what must hold once the operator runs it.
type adopted struct {
	l       *legacy.EtcdCluster
	tls     func(*clientv3.Config)
	cli     *clientv3.Client // closed with the subtest that made it: see reconnect
	ids     map[string]uint64
	facts   podFacts
	restart bool // the operator restarts its members once (TLS: onto its own Secret copies)
}

// TestMigrate adopts legacy clusters with the operator stopped, as the tool requires, then starts
// the operator and has it scale and upgrade the adopted cluster.
func TestMigrate(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	e2eutil.InstallLegacyCRD(t, c)
	k := newTool(t, c)
	ns := e2eutil.NewNamespace(t, c)
	var done []adopted
	var op *e2eutil.Operator
	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"LearnerRefused", func(t *testing.T) { testLearnerRefused(t, c, k, ns) }},
		{"ResumesAfterEachStep", func(t *testing.T) { done = append(done, testResumes(t, c, ns)) }},
		{"AutoTLSPeers", func(t *testing.T) { done = append(done, testAdopt(t, c, k, ns, "kv", nil)) }},
		// TLS as the legacy operator wires it, with auth on: root without a password, reached by
		// the CN-root client certificate.
		{"BYOTLSAndAuth", func(t *testing.T) { done = append(done, testAdopt(t, c, k, ns, "sec", byoTLS(t, c, ns, "sec"))) }},
		// The operator lives as long as the whole test: the next step needs it too.
		{"OperatorTakesOver", func(st *testing.T) { op = e2eutil.StartSuiteOperator(t, c, 300); testTakeOver(st, c, done) }},
		{"ScaleAndUpgrade", func(t *testing.T) { testScaleAndUpgrade(t, c, op, done[1]) }},
		{"PeersOffAutoTLS", func(t *testing.T) { testPeersOffAutoTLS(t, c, done[1]) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.run) {
			return
		}
	}
}

// testLearnerRefused: a cluster with a learner is refused, by the dry run and by --apply, and
// left exactly as it was.
func testLearnerRefused(t *testing.T, c *framework.Cluster, k tool, ns string) {
	l := e2eutil.CreateLegacyCluster(t, c, ns, "ln", func(l *legacy.EtcdCluster) { l.Spec.Replicas = ptrTo(int32(1)) })
	cli := clientOf(t, c, l, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.MemberAddAsLearner(ctx, []string{legacy.PeerURL(l, 1)}); err != nil {
		t.Fatal(err)
	}
	pods := podNames(e2eutil.LegacyPods(t, c, ns, "ln"))
	facts := factsOf(t, c, ns, pods)
	for _, args := range [][]string{{"ln"}, {"ln", "--apply", "--yes", "--skip-backup", "--skip-controller-check"}} {
		out, errOut, code := k.run(t, ns, args...)
		if code != 3 || !strings.Contains(out+errOut, "is a learner") {
			t.Fatalf("etcd-migrate %v: exit %d, want 3 naming the learner\nstdout: %s\nstderr: %s", args, code, out, errOut)
		}
	}
	facts.check(t, c, ns, "after the refusal")
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ln"}, &v1alpha2.EtcdCluster{}); !apierrors.IsNotFound(err) {
		t.Errorf("an EtcdCluster was created for a refused cluster (err %v)", err)
	}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ln"}, &appsv1.StatefulSet{}); err != nil {
		t.Errorf("the refused cluster's StatefulSet: %v", err)
	}
}

// testResumes kills the adoption after each step (the package's step hook) and runs it again:
// every run picks up where the last one stopped, and a run after the last step changes nothing.
func testResumes(t *testing.T, c *framework.Cluster, ns string) adopted {
	l := e2eutil.CreateLegacyCluster(t, c, ns, "rs", func(l *legacy.EtcdCluster) { l.Spec.Replicas = ptrTo(int32(1)) })
	a := adopted{l: l, cli: clientOf(t, c, l, nil)}
	a.ids = memberIDs(t, a.cli)
	a.facts = factsOf(t, c, ns, podNames(e2eutil.LegacyPods(t, c, ns, "rs")))
	backup := filepath.Join(t.TempDir(), "rs.db")
	for _, step := range migrate.Steps {
		t.Run("killed after "+step, func(t *testing.T) {
			st, err := migrate.Inspect(context.Background(), env(c), ns, "rs")
			if err != nil {
				t.Fatal(err)
			}
			err = migrate.Apply(context.Background(), env(c), st, migrate.Options{BackupFile: backup, StopAfter: step})
			if !errors.Is(err, migrate.ErrStopped) {
				t.Fatalf("apply stopping after %s: %v", step, err)
			}
			a.facts.check(t, c, ns, "after "+step)
		})
	}
	st, err := migrate.Inspect(context.Background(), env(c), ns, "rs")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := migrate.Plan(st); !errors.Is(err, migrate.ErrAdopted) {
		t.Fatalf("a run after the last step: %v, want ErrAdopted", err)
	}
	legacyGone(t, c, l)
	return a
}

// testAdopt: dry run, then --apply by the binary while a client writes through the legacy client
// Service and every DNS name clients use is dialled afresh every 100 ms.
func testAdopt(t *testing.T, c *framework.Cluster, k tool, ns, name string, tlsCfg func(*legacy.EtcdCluster, *clientv3.Config)) adopted {
	l := e2eutil.CreateLegacyCluster(t, c, ns, name, func(l *legacy.EtcdCluster) {
		if tlsCfg != nil {
			tlsCfg(l, nil)
		}
	})
	var withTLS func(*clientv3.Config)
	if tlsCfg != nil {
		withTLS = func(cfg *clientv3.Config) { tlsCfg(nil, cfg) }
	}
	a := adopted{l: l, tls: withTLS, cli: clientOf(t, c, l, withTLS), restart: tlsCfg != nil}
	if legacy.AuthEnabled(l) {
		enableLegacyAuth(t, a.cli)
	}
	pods := podNames(e2eutil.LegacyPods(t, c, ns, name))
	a.ids, a.facts = memberIDs(t, a.cli), factsOf(t, c, ns, pods)

	out, errOut, code := k.run(t, ns, name)
	if code != 0 || !strings.Contains(out, "Steps of --apply") || !strings.Contains(out, "kind: EtcdMember") {
		t.Fatalf("dry run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("dry run:\n%s", out)
	addrs := []string{legacy.ClientServiceName(l) + "." + ns + ".svc:2379"}
	for i := range pods {
		addrs = append(addrs, legacy.MemberHost(l, i)+":2379")
	}
	w := e2eutil.StartWriter(a.cli, name)
	p := startProbe(c, addrs...)
	authWatch := watchAuth(a.cli, legacy.AuthEnabled(l))
	backup := filepath.Join(t.TempDir(), name+".db")
	start := time.Now()
	out, errOut, code = k.run(t, ns, name, "--apply", "--yes", "--backup-file", backup)
	took := time.Since(start)
	tries, failedDials := p.Stop()
	authWatch.check(t)
	failedBefore := w.Failed()
	if code != 0 {
		t.Fatalf("--apply: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	t.Logf("--apply took %s:\n%s", took.Round(time.Millisecond), out)
	if len(failedDials) > 0 || failedBefore > 0 {
		t.Errorf("during the adoption %d of %d dials failed (%v) and %d writes failed", len(failedDials), tries, failedDials, failedBefore)
	}
	acked, failed, _ := w.Stop()
	t.Logf("during the adoption: %d dials of %d names, none failed; %d writes acknowledged, %d failed", tries, len(addrs), acked, failed)
	e2eutil.VerifyWrites(t, a.cli, name, acked)
	checkBackup(t, backup)
	a.facts.check(t, c, ns, "after the adoption")
	if got := memberIDs(t, a.cli); !equalIDs(got, a.ids) {
		t.Errorf("member IDs %v, were %v", got, a.ids)
	}
	legacyGone(t, c, l)
	if out, _, code := k.run(t, ns, name, "--apply", "--yes", "--skip-backup"); code != 0 || !strings.Contains(out, "Nothing to do") {
		t.Errorf("a second --apply: exit %d, output %s", code, out)
	}
	return a
}

func checkBackup(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := snapshot.NewDigest()
	if _, err := io.Copy(d, f); err != nil {
		t.Fatal(err)
	}
	if err := d.Intact(); err != nil {
		t.Errorf("backup %s: %v", path, err)
	}
}

func equalIDs(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func ptrTo[T any](v T) *T { return &v }

// byoTLS makes the legacy operator's bring-your-own TLS: server, client and peer Secrets of one
// CA, client certificate auth, peer mTLS. The returned func sets a legacy spec's Secrets, or a
// client's TLS.
func byoTLS(t *testing.T, c *framework.Cluster, ns, name string) func(*legacy.EtcdCluster, *clientv3.Config) {
	ca := pkitest.NewCA(t, name+"-ca")
	names := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns, ClusterDomain: c.ClusterDomain(),
		Layout: &v1alpha2.Layout{HeadlessServiceName: name + "-headless", ClientServiceName: name}})
	e2eutil.CreateTLSSecret(t, c, ns, name+"-server", ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...))
	e2eutil.CreateTLSSecret(t, c, ns, name+"-peer", ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...))
	e2eutil.CreateTLSSecret(t, c, ns, name+"-client", ca.ClientSecretData(t, "root"))
	cfg := e2eutil.TLSConfig(t, c, ns, name+"-server", name+"-client")
	return func(l *legacy.EtcdCluster, cc *clientv3.Config) {
		if l != nil {
			l.Spec.Security = &legacy.SecuritySpec{EnableAuth: true, TLS: legacy.TLSSpec{
				ServerSecret: name + "-server", ServerTrustedCASecret: name + "-server",
				ClientSecret: name + "-client", ClientTrustedCASecret: name + "-server",
				PeerSecret: name + "-peer", PeerTrustedCASecret: name + "-peer"}}
		}
		if cc != nil {
			cc.TLS = cfg
		}
	}
}

// testTakeOver: with the operator started, every adopted cluster converges with its etcd member IDs,
// and a cluster whose template the operator renders as the legacy Pods run keeps its Pods.
func testTakeOver(t *testing.T, c *framework.Cluster, done []adopted) {
	for _, a := range done {
		a.cli = clientOf(t, c, a.l, a.tls)
		took := e2eutil.WaitConvergedWith(t, c, a.l.Namespace, a.l.Name, len(a.ids), a.cli, convergeTimeout)
		t.Logf("%s converged under the operator in %s", a.l.Name, took.Round(time.Millisecond))
		if legacy.AuthEnabled(a.l) {
			checkOperatorUser(t, a.cli)
		}
		if got := memberIDs(t, a.cli); !equalIDs(got, a.ids) {
			t.Errorf("%s: member IDs %v, were %v", a.l.Name, got, a.ids)
		}
		if !a.restart {
			a.facts.check(t, c, a.l.Namespace, a.l.Name+" under the operator")
		}
	}
}

// testScaleAndUpgrade: the operator scales the adopted cluster 3→5→3 and upgrades it one minor,
// with a client writing through the legacy client Service throughout.
func testScaleAndUpgrade(t *testing.T, c *framework.Cluster, op *e2eutil.Operator, a adopted) {
	ns, name := a.l.Namespace, a.l.Name
	start := time.Now()
	t.Cleanup(func() {
		if t.Failed() {
			e2eutil.LogEvents(t, c, ns, start)
			t.Logf("cluster status: %+v", e2eutil.GetCluster(t, c, ns, name).Status)
		}
	})
	a.cli = clientOf(t, c, a.l, a.tls)
	w := e2eutil.StartWriter(a.cli, name+"-day2")
	for _, n := range []int32{5, 3} {
		e2eutil.Scale(t, c, ns, name, n)
		took := e2eutil.WaitConvergedWith(t, c, ns, name, int(n), a.cli, convergeTimeout)
		t.Logf("scaled to %d in %s", n, took.Round(time.Millisecond))
		checkMetrics(t, c, op, a, int(n))
	}
	for _, m := range e2eutil.Members(t, c, ns, name) {
		if got, want := e2eutil.Pod(t, c, ns, m.Name).Spec.Subdomain, legacy.HeadlessServiceName(a.l); got != want {
			t.Errorf("member %s: subdomain %s, want %s", m.Name, got, want)
		}
	}
	ec := e2eutil.GetCluster(t, c, ns, name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = "3.6.16"
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitFor(t, convergeTimeout, name+" on 3.6.16", func() bool {
		ec := e2eutil.GetCluster(t, c, ns, name)
		for _, m := range ec.Status.Members {
			if m.Version != "3.6.16" {
				return false
			}
		}
		return len(ec.Status.Members) == 3 && e2eutil.ConvergedWith(t, c, ns, name, 3, a.cli)
	})
	t.Logf("upgraded to 3.6.16 in %s", took.Round(time.Millisecond))
	e2eutil.WaitNoError(t, time.Minute, "a leader change counted", func() error {
		families, err := op.Metrics(context.Background())
		if err != nil {
			return err
		}
		if n, _ := e2eutil.Gauge(families, "etcd_operator_cluster_leader_changes_total", map[string]string{"namespace": ns, "cluster": name}); n < 1 {
			return fmt.Errorf("%v leader changes counted after a rollout that restarted the leader", n)
		}
		return nil
	})
	acked, failed, last := w.Stop()
	t.Logf("writes during scale and upgrade: %d acknowledged, %d failed attempts (retried; last %v)", acked, failed, last)
	e2eutil.VerifyWrites(t, a.cli, name+"-day2", acked)
}

// checkMetrics: the operator's metrics of the adopted cluster once it converged at n members:
// member counts, a leader, every member's database size, the quota the translation made explicit,
// no alarm, and timed calls to its etcd.
func checkMetrics(t *testing.T, c *framework.Cluster, op *e2eutil.Operator, a adopted, n int) {
	t.Helper()
	ns, name := a.l.Namespace, a.l.Name
	cl := map[string]string{"namespace": ns, "cluster": name}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for kk, vv := range cl {
			m[kk] = vv
		}
		return m
	}
	quota := float64(*e2eutil.GetCluster(t, c, ns, name).Spec.Options.QuotaBackendBytes)
	e2eutil.WaitNoError(t, time.Minute, fmt.Sprintf("the metrics of %s at %d members", name, n), func() error {
		families, err := op.Metrics(context.Background())
		if err != nil {
			return err
		}
		got := func(metric string, labels map[string]string) float64 {
			v, _ := e2eutil.Gauge(families, metric, labels)
			return v
		}
		if v := got("etcd_operator_cluster_members", with("state", "voting")); v != float64(n) {
			return fmt.Errorf("voting members %v, want %d", v, n)
		}
		if v := got("etcd_operator_cluster_leader_present", cl); v != 1 {
			return fmt.Errorf("leader present %v", v)
		}
		for _, m := range e2eutil.Members(t, c, ns, name) {
			if v := got("etcd_operator_cluster_member_db_size_bytes", with("member", m.Name)); v <= 0 {
				return fmt.Errorf("member %s db size %v", m.Name, v)
			}
		}
		if v := got("etcd_operator_cluster_db_quota_bytes", cl); v != quota {
			return fmt.Errorf("quota %v, want %v (0.95 of the legacy claim, made explicit)", v, quota)
		}
		if v, ok := e2eutil.Gauge(families, "etcd_operator_cluster_alarm_active", with("alarm", "NOSPACE")); !ok || v != 0 {
			return fmt.Errorf("NOSPACE alarm %v (present %v)", v, ok)
		}
		if v := got("etcd_operator_etcd_request_duration_seconds", with("method", "etcdserverpb.Cluster/MemberList")); v < 1 {
			return fmt.Errorf("%v timed MemberList calls", v)
		}
		return nil
	})
}
