//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// table collects the rows printed at the end.
type table struct {
	mu   sync.Mutex
	rows [][3]string
}

func (tb *table) add(metric, value, target string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, [3]string{metric, value, target})
}

func (tb *table) print() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nmetric\tvalue\ttarget\n")
	for _, r := range tb.rows {
		fmt.Fprintf(w, "%s\t%s\t%s\n", r[0], r[1], r[2])
	}
	_ = w.Flush()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

const timeout = 5 * time.Minute

// TestBench runs every measurement against one local cluster and one operator process.
func TestBench(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	op := e2eutil.StartOperator(t, c)
	var tb table
	defer tb.print()
	tb.add("etcd version", e2eutil.EtcdVersion(), "")

	for _, n := range []int32{1, 3, 5} {
		ns := e2eutil.NewNamespace(t, c)
		start := time.Now()
		e2eutil.CreateCluster(t, c, ns, "etcd", n)
		e2eutil.Timeline(t, c, ns, "etcd", start, func() bool { return e2eutil.Converged(t, c, ns, "etcd", int(n)) })
		target := ""
		if n == 3 {
			target = "<= 15 s"
		}
		tb.add(fmt.Sprintf("create -> Available, %d member(s), PVC", n), secs(time.Since(start)), target)
	}

	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "step", 3)
	e2eutil.WaitConverged(t, c, ns, "step", 3, timeout)
	start := time.Now()
	e2eutil.Scale(t, c, ns, "step", 4)
	e2eutil.WaitConverged(t, c, ns, "step", 4, timeout)
	tb.add("scale step 3 -> 4 (learner added, promoted)", secs(time.Since(start)), "")
	start = time.Now()
	e2eutil.Scale(t, c, ns, "step", 3)
	e2eutil.WaitConverged(t, c, ns, "step", 3, timeout)
	tb.add("scale step 4 -> 3 (member removed)", secs(time.Since(start)), "")
	tb.add("recovery from Pod loss, PVC member", secs(podLoss(t, c, ns, "step")), "")

	ns = e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "mem", 3, e2eutil.Tmpfs)
	start = time.Now()
	e2eutil.WaitConverged(t, c, ns, "mem", 3, timeout)
	tb.add("create -> Available, 3 members, tmpfs", secs(time.Since(start)), "")
	tb.add("recovery from Pod loss, tmpfs member (replaced)", secs(podLoss(t, c, ns, "mem")), "<= 15 s")

	idle := idleClusters()
	start = time.Now()
	createIdle(t, c, idle)
	tb.add(fmt.Sprintf("create -> Available, %d one-member clusters at once", idle), secs(time.Since(start)), "")
	total := idle + 6 // plus the clusters above, all idle now
	writes := idleWrites(t, op)
	tb.add(fmt.Sprintf("operator API writes per idle cluster-minute (%d clusters, 60 s)", total),
		fmt.Sprintf("%.2f", writes/float64(total)), "0")
	rss, err := op.RSSBytes()
	if err != nil {
		t.Fatal(err)
	}
	tb.add(fmt.Sprintf("operator RSS with %d idle clusters", total), fmt.Sprintf("%.0f MiB", float64(rss)/(1<<20)), "")
	took, ours, all := scrapeCost(t, op)
	tb.add(fmt.Sprintf("metrics scrape with %d clusters: median of 5, series etcd_operator_* / all", total),
		fmt.Sprintf("%s, %d / %d", took.Round(time.Millisecond), ours, all), "")
}

// scrapeCost times five scrapes of the operator's metrics endpoint (the median) and counts the
// series it serves: the operator's own (etcd_operator_*) and all of them.
func scrapeCost(t *testing.T, op *e2eutil.Operator) (median time.Duration, ours, all int) {
	t.Helper()
	var took []time.Duration
	for range 5 {
		start := time.Now()
		families, err := op.Metrics(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		took = append(took, time.Since(start))
		ours, all = 0, 0
		for name, f := range families {
			all += len(f.GetMetric())
			if strings.HasPrefix(name, "etcd_operator_") {
				ours += len(f.GetMetric())
			}
		}
	}
	slices.Sort(took)
	return took[len(took)/2], ours, all
}

// podLoss deletes one member's Pod and returns how long until the cluster is whole again: for
// a PVC member its new Pod is Ready, a tmpfs member is gone and replaced, and etcd lists 3 voters.
func podLoss(t *testing.T, c *framework.Cluster, ns, name string) time.Duration {
	t.Helper()
	victim := e2eutil.Members(t, c, ns, name)[0]
	pod := e2eutil.Pod(t, c, ns, victim.Name)
	memory := victim.Spec.Storage.Medium == v1alpha2.StorageMediumMemory
	start := time.Now()
	if err := c.Client.Delete(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, timeout, "the lost member's recovery", func() bool {
		if memory {
			for _, m := range e2eutil.Members(t, c, ns, name) {
				if m.Name == victim.Name {
					return false
				}
			}
		} else if p := e2eutil.Pod(t, c, ns, victim.Name); p == nil || p.UID == pod.UID || !e2eutil.PodReady(p) {
			return false
		}
		return e2eutil.Converged(t, c, ns, name, 3)
	})
	return time.Since(start)
}

func idleClusters() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_IDLE_CLUSTERS")); err == nil && n >= 0 {
		return n
	}
	return 100
}

// createIdle creates n one-member clusters (PVC: a tmpfs member needs RAM for etcd's 64 MiB
// preallocated WAL segment) in one namespace and waits for all of them.
func createIdle(t *testing.T, c *framework.Cluster, n int) {
	t.Helper()
	ns := e2eutil.NewNamespace(t, c)
	for i := range n {
		e2eutil.CreateCluster(t, c, ns, fmt.Sprintf("idle-%03d", i), 1)
	}
	e2eutil.WaitFor(t, 30*time.Minute, fmt.Sprintf("%d idle clusters Available", n), func() bool {
		var list v1alpha2.EtcdClusterList
		if err := c.Client.List(context.Background(), &list); err != nil {
			return false
		}
		ready := 0
		for _, ec := range list.Items {
			if ec.Namespace == ns && ec.Status.ReadyMembers == 1 {
				ready++
			}
		}
		return ready == n
	})
}

// idleWrites counts the operator's mutating API requests over one minute of idleness, after
// letting in-flight work (status settling) finish.
func idleWrites(t *testing.T, op *e2eutil.Operator) float64 {
	t.Helper()
	ctx := context.Background()
	var before float64
	e2eutil.WaitFor(t, 5*time.Minute, "the operator to go quiet", func() bool {
		a, err := op.APIWrites(ctx)
		if err != nil {
			return false
		}
		time.Sleep(5 * time.Second) // a quiet window, not a wait for a condition
		b, err := op.APIWrites(ctx)
		before = b
		return err == nil && a == b
	})
	time.Sleep(time.Minute) // the measurement window itself
	after, err := op.APIWrites(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after > before {
		t.Logf("writes during the idle minute: %.0f", after-before)
	}
	return after - before
}
