//go:build e2e

package cozystack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// appValues are an existing tenant's HelmRelease values of Cozystack's current app (its spec), with
// the etcd version the tools cache has of the app's 3.6 line (the app's default is 3.6.11).
func appValues() map[string]any {
	return map[string]any{"version": e2eutil.EtcdVersion(), "size": "4Gi", "storageClass": "", "replicas": replicas,
		"resources": map[string]any{"cpu": "1000m", "memory": "512Mi"}}
}

// upgradeFromCozystackApp installs the stand-in of Cozystack's current app as release etcd, waits
// for it to serve, starts a writer and upgrades the release to packages/extra/etcd with the same
// app values plus what Cozystack merges in. The upgrade is done when every member serves the
// package's certificates (which add the cluster-domain names) and the cluster is Available and
// idle again: the members must be the same etcd members, every acknowledged write readable, and
// never more than one member down at once.
func upgradeFromCozystackApp(t *testing.T, c *framework.Cluster) {
	ns := upgradedTenant
	e2eutil.DiagnoseOnFailure(t, c, nil, ns, appRelease)
	rel := helmrelease.New(t, c, appRelease, ns)
	took := rel.Install(t, appChart, appValues())
	t.Logf("helm install %s -n %s (Cozystack's current app): %s", appRelease, ns, took.Round(time.Millisecond))
	took = waitAvailable(t, c, ns)
	t.Logf("EtcdCluster %s/%s Available with %d members: %s", ns, appRelease, replicas, took.Round(time.Millisecond))
	before := memberIDs(t, c, ns)

	down := watchMembersDown(t, c, ns)
	cli := e2eutil.TLSMembersClient(t, c, ns, appRelease, tlsConfig(t, c, ns))
	w := e2eutil.StartWriter(cli, "/e2e/upgrade")
	e2eutil.WaitFor(t, 30*time.Second, "the writer's first acknowledged write", func() bool { return w.Acked() > 0 })

	values := tenantValues(ns)
	maps.Copy(values, appValues())
	start := time.Now()
	took = rel.Upgrade(t, helmrelease.RepoPath(t, "packages/extra/etcd"), values)
	t.Logf("helm upgrade %s -n %s to packages/extra/etcd (same app values + _cluster, _namespace): %s", appRelease, ns, took.Round(time.Millisecond))
	waitServing(t, c, ns, memberFQDNWildcard(ns))
	waitAvailable(t, c, ns)
	t.Logf("every member serves the package's certificates and the cluster is Available and idle: %s after the upgrade", time.Since(start).Round(time.Millisecond))

	acked, failed, lastErrs := w.Stop()
	e2eutil.VerifyWrites(t, cli, "/e2e/upgrade", acked)
	t.Logf("writer: %d acknowledged writes, all readable; %d failed attempts (last: %v)", acked, failed, lastErrs)
	if after := memberIDs(t, c, ns); !maps.Equal(before, after) {
		t.Errorf("members after the upgrade %v, before %v: want the same etcd members", after, before)
	}
	peak, restarts := down.result()
	t.Logf("member Pods down at once: at most %d; went down: %v", peak, restarts)
	if peak > 1 {
		t.Errorf("%d members were down at the same moment during the upgrade; want at most one", peak)
	}
}

// memberIDs maps each EtcdMember to the etcd member ID it records; the IDs are checked against
// etcd's own member list by Converged.
func memberIDs(t *testing.T, c *framework.Cluster, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range e2eutil.Members(t, c, ns, appRelease) {
		out[m.Name] = m.Status.MemberID
	}
	return out
}

// downWatch follows the cluster's member Pods and records the most that were down at once (not
// Ready, being deleted or gone) and how often each went down.
type downWatch struct {
	mu    sync.Mutex
	down  map[string]bool // by Pod name: a replaced Pod keeps its member's name
	peak  int
	times map[string]int
}

func watchMembersDown(t *testing.T, c *framework.Cluster, ns string) *downWatch {
	t.Helper()
	sel := v1alpha2.LabelCluster + "=" + appRelease
	pods, err := c.Kube.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	d := &downWatch{down: map[string]bool{}, times: map[string]int{}}
	for i := range pods.Items {
		d.see(&pods.Items[i])
	}
	if d.peak != 0 {
		t.Fatalf("member Pods down before the upgrade: %v", d.down)
	}
	e2eutil.WatchPods(t, c, ns, metav1.ListOptions{LabelSelector: sel, ResourceVersion: pods.ResourceVersion},
		func(p *corev1.Pod) bool { d.see(p); return false })
	return d
}

func (d *downWatch) see(p *corev1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	isDown := p.DeletionTimestamp != nil || !e2eutil.PodReady(p)
	if isDown && !d.down[p.Name] {
		d.times[p.Name]++
	}
	d.down[p.Name] = isDown
	n := 0
	for _, v := range d.down {
		if v {
			n++
		}
	}
	d.peak = max(d.peak, n)
}

func (d *downWatch) result() (peak int, times []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(d.times)) {
		times = append(times, fmt.Sprintf("%s %d×", name, d.times[name]))
	}
	return d.peak, times
}
