//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// benchDefragMiB is how much the defrag bench writes and deletes before each phase
// (BENCH_DEFRAG_MIB, default 500).
func benchDefragMiB() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_DEFRAG_MIB")); err == nil && v > 0 {
		return v
	}
	return 500
}

// probeTimeout bounds one probe request, as a client's request timeout would.
const probeTimeout = 5 * time.Second

// TestBenchDefrag measures the defragmentation of a fragmented 3-member cluster two ways while a
// client keeps writing through the client Service: the operator's EtcdDefrag (one member at a
// time, followers first, the leader last after leadership moved) and every member at once (what
// a naive cron calling Defragment on each endpoint does). It also times a rolling upgrade of a
// 3-member cluster by one minor.
func TestBenchDefrag(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	e2eutil.StartOperator(t, c)
	var tb table
	defer tb.print()
	ctx := context.Background()
	ns := e2eutil.NewNamespace(t, c)
	mib := benchDefragMiB()
	e2eutil.CreateCluster(t, c, ns, "frag", 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.Storage.Size = resource.MustParse(fmt.Sprintf("%dMi", mib*4))
		s.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To(int64(mib*4) << 20)}
	})
	e2eutil.WaitConverged(t, c, ns, "frag", 3, timeout)
	tb.add("etcd version", e2eutil.EtcdVersion(), "")
	cli := e2eutil.EtcdClient(t, c, ns, "frag")

	p := startProbe(t, c, ns, "frag")
	time.Sleep(10 * time.Second) // the measurement window itself
	tb.add("probe, idle cluster (10 s)", p.stop().String(), "")

	start := time.Now()
	fragmentMiB(t, c, ns, "frag", cli, mib)
	tb.add(fmt.Sprintf("fragment: write %d MiB (512 KiB values), delete every other, compact", mib), secs(time.Since(start)), "")
	tb.add("member DB size (in use) before A", sizes(t, c, ns, "frag"), "")

	// Phase A: the operator, one member at a time.
	p = startProbe(t, c, ns, "frag")
	start = time.Now()
	d := &v1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frag-all"},
		Spec: v1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: "frag"},
			Rule: &v1alpha2.DefragRule{All: true}, MemberTimeoutSeconds: ptr.To[int32](900)}}
	if err := c.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 30*time.Minute, "EtcdDefrag "+d.Name+" finished", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		return d.Status.Phase == v1alpha2.DefragComplete || d.Status.Phase == v1alpha2.DefragFailed
	})
	tookA := time.Since(start)
	statsA := p.stop()
	e2eutil.LogEvents(t, c, ns, start.Add(-time.Second))
	for _, m := range d.Status.Members {
		t.Logf("A: %s %s: %s %s, %d -> %d bytes, finished %s", m.Role, m.Name, m.Outcome, m.Reason, m.DBSizeBefore, m.DBSizeAfter, m.FinishedAt)
	}
	if d.Status.Phase != v1alpha2.DefragComplete {
		t.Fatalf("EtcdDefrag ended %s: %+v", d.Status.Phase, d.Status)
	}
	tb.add("member DB size (in use) after A", sizes(t, c, ns, "frag"), "")
	tb.add("A: EtcdDefrag rule all (one at a time, leader last): create -> Complete", secs(tookA), "")
	tb.add("A: probe during it", statsA.String(), "")

	// Phase B: every member at once, from the test.
	start = time.Now()
	fragmentMiB(t, c, ns, "frag", cli, mib)
	tb.add(fmt.Sprintf("fragment again: delete the rest, write %d MiB, delete every other, compact", mib), secs(time.Since(start)), "")
	tb.add("member DB size (in use) before B", sizes(t, c, ns, "frag"), "")
	p = startProbe(t, c, ns, "frag")
	tookB, perMember := defragAllAtOnce(t, c, ns, "frag")
	statsB := p.stop()
	tb.add("member DB size (in use) after B", sizes(t, c, ns, "frag"), "")
	tb.add("B: Defragment on the 3 endpoints concurrently: wall time", secs(tookB), "")
	tb.add("  per member (RPC time, error)", perMember, "")
	tb.add("B: probe during it", statsB.String(), "")

	// A rolling upgrade by one minor, for scale.
	vs := e2eutil.EtcdVersions
	from, to := vs[1], vs[2]
	ns = e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "up", 3, e2eutil.Version(from))
	e2eutil.WaitConverged(t, c, ns, "up", 3, timeout)
	ec := e2eutil.GetCluster(t, c, ns, "up")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = to
	start = time.Now()
	if err := c.Client.Patch(ctx, ec, patch); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 3*timeout, "every member on "+to, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "up") {
			if m.Status.Version != to {
				return false
			}
		}
		return e2eutil.GetCluster(t, c, ns, "up").Status.Rollout == nil && e2eutil.Converged(t, c, ns, "up", 3)
	})
	tb.add(fmt.Sprintf("upgrade %s -> %s, 3 members: patch -> all on %s, converged", from, to, to), secs(time.Since(start)), "")
}

// fragmentMiB deletes what an earlier round left under /frag/, writes about mib MiB of 512 KiB
// values with four clients (under etcd's default 1.5 MiB request limit), deletes every other one
// and compacts physically: the members' files keep their size while half of it is free, in
// holes between the values still in use, which a defrag has to copy. It returns once every
// member has applied the compaction.
func fragmentMiB(t *testing.T, c *framework.Cluster, ns, name string, cli *clientv3.Client, mib int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cli.Delete(ctx, "/frag/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	n := mib * 2
	v := strings.Repeat("f", 512<<10)
	parallel(t, n, func(i int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cli.Put(ctx, fmt.Sprintf("/frag/%06d", i), v)
		return err
	})
	parallel(t, n, func(i int) error {
		if i%2 == 0 {
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := cli.Delete(ctx, fmt.Sprintf("/frag/%06d", i))
		return err
	})
	resp, err := cli.Put(ctx, "/frag-compact-at", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	// WithCompactPhysical waits for the member that served it; the others compact on their own.
	clients := memberClients(t, c, ns, name)
	var last []int64
	for start := time.Now(); time.Since(start) < 2*time.Minute; time.Sleep(time.Second) {
		// bbolt keeps freed pages pending until a later write transaction: write, so that every
		// member commits one and counts them free.
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(pctx, "/frag-compact-at", "")
		pcancel()
		if err != nil {
			t.Fatal(err)
		}
		last = last[:0]
		for _, mc := range clients {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, err := mc.Status(ctx, mc.Endpoints()[0])
			cancel()
			if err == nil {
				last = append(last, st.DbSizeInUse)
			}
		}
		if len(last) == len(clients) && slices.Max(last)-slices.Min(last) <= slices.Max(last)/20 {
			return
		}
	}
	t.Logf("the members' sizes in use did not settle within 2 minutes: %v", last)
}

// parallel runs do(0..n-1) with four workers and fails the test on the first error.
func parallel(t *testing.T, n int, do func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				if err := do(i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// memberClients dials each member of the cluster at its own client URL; they are closed with
// the test.
func memberClients(t *testing.T, c *framework.Cluster, ns, name string) map[string]*clientv3.Client {
	t.Helper()
	out := map[string]*clientv3.Client{}
	for _, m := range e2eutil.Members(t, c, ns, name) {
		mc, err := e2eutil.MemberClient(c, ns, name, m.Name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = mc.Close() })
		out[m.Name] = mc
	}
	return out
}

// sizes is each member's database size and size in use, from etcd's Status, the leader marked.
func sizes(t *testing.T, c *framework.Cluster, ns, name string) string {
	t.Helper()
	clients := memberClients(t, c, ns, name)
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(clients)) {
		mc := clients[n]
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		st, err := mc.Status(ctx, mc.Endpoints()[0])
		cancel()
		if err != nil {
			t.Fatalf("status of %s: %v", n, err)
		}
		leader := ""
		if st.Leader == st.Header.MemberId {
			leader = "*"
		}
		parts = append(parts, fmt.Sprintf("%.0f (%.0f)%s", float64(st.DbSize)/(1<<20), float64(st.DbSizeInUse)/(1<<20), leader))
	}
	s := strings.Join(parts, ", ") + " MiB"
	t.Logf("%s/%s members: %s", ns, name, s)
	return s
}

// defragAllAtOnce calls Maintenance.Defragment on every member's endpoint at the same time and
// returns the wall time until the last one returned and each member's time and error.
func defragAllAtOnce(t *testing.T, c *framework.Cluster, ns, name string) (time.Duration, string) {
	t.Helper()
	clients := memberClients(t, c, ns, name)
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out []string
	)
	start := time.Now()
	for n, mc := range clients {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			s := time.Now()
			_, err := mc.Defragment(ctx, mc.Endpoints()[0])
			res := fmt.Sprintf("%s %s", n, secs(time.Since(s)))
			if err != nil {
				res += fmt.Sprintf(" (%v)", err)
			}
			mu.Lock()
			out = append(out, res)
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	slices.Sort(out)
	return took, strings.Join(out, "; ")
}

// probe writes small keys one after another through the client Service and records each
// request's latency and outcome.
type probe struct {
	stop func() probeStats
}

type probeStats struct {
	lat      []time.Duration // every request, failed ones included
	errs     int
	maxOK    time.Duration // the slowest acknowledged write
	maxGap   time.Duration // the longest stretch without an acknowledged write
	served   map[uint64]int
	lastErrs []string
}

func startProbe(t *testing.T, c *framework.Cluster, ns, name string) *probe {
	t.Helper()
	// Its own client, so its own connection to whichever member the Service picks.
	cli, err := clientv3.New(e2eutil.ClientConfig(c, "http://"+v1alpha2.ClientServiceName(name, nil)+"."+ns+".svc:2379"))
	if err != nil {
		t.Fatal(err)
	}
	p := &probe{}
	quit := make(chan struct{})
	done := make(chan probeStats)
	go func() {
		st := probeStats{served: map[uint64]int{}}
		lastOK := time.Now()
		for i := 0; ; i++ {
			select {
			case <-quit:
				if gap := time.Since(lastOK); gap > st.maxGap {
					st.maxGap = gap
				}
				done <- st
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
			s := time.Now()
			resp, err := cli.Put(ctx, fmt.Sprintf("/probe/%08d", i), "v")
			d := time.Since(s)
			cancel()
			st.lat = append(st.lat, d)
			if err != nil {
				st.errs++
				st.lastErrs = append(st.lastErrs[max(0, len(st.lastErrs)-2):], fmt.Sprintf("%s %v", s.Format("15:04:05.000"), err))
				time.Sleep(50 * time.Millisecond) // a client's retry back-off
				continue
			}
			st.served[resp.Header.MemberId]++
			st.maxOK = max(st.maxOK, d)
			now := time.Now()
			if gap := now.Sub(lastOK); gap > st.maxGap {
				st.maxGap = gap
			}
			lastOK = now
		}
	}()
	p.stop = func() probeStats {
		close(quit)
		st := <-done
		_ = cli.Close()
		names := map[uint64]string{}
		for _, m := range e2eutil.Members(t, c, ns, name) {
			if id, err := strconv.ParseUint(m.Status.MemberID, 16, 64); err == nil {
				names[id] = m.Name
			}
		}
		var served []string
		for id, n := range st.served {
			served = append(served, fmt.Sprintf("%s %d", names[id], n))
		}
		t.Logf("probe: %s; served by %v; last errors %v", st, served, st.lastErrs)
		return st
	}
	return p
}

func (s probeStats) String() string {
	if len(s.lat) == 0 {
		return "no requests"
	}
	l := slices.Clone(s.lat)
	slices.Sort(l)
	q := func(f float64) time.Duration { return l[min(len(l)-1, int(f*float64(len(l))))] }
	return fmt.Sprintf("%d puts, p50 %s, p99 %s, max %s (slowest acked %s), %d errors, longest gap %s",
		len(l), ms(q(0.5)), ms(q(0.99)), ms(l[len(l)-1]), ms(s.maxOK), s.errs, ms(s.maxGap))
}

func ms(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
}
