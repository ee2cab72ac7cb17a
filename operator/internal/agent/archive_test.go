package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/archive"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcd/etcdtest"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Unit tests of the archiver and the delta restore against the in-memory etcd; the integration
// tests (archive_integration_test.go) do the same against a real one.

// archiverRun is an archiver running in the background, whose stored segments a test awaits.
type archiverRun struct {
	a      *Archiver
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	last   int64
	stored chan struct{}
}

func startArchiver(t *testing.T, c etcd.Client, folder snapshot.Folder, base int64, opts ...func(*Archiver)) *archiverRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &archiverRun{cancel: cancel, done: make(chan error, 1), stored: make(chan struct{}, 1)}
	r.a = &Archiver{Client: c, Folder: folder, BaseRevision: base, Period: 20 * time.Millisecond, MaxBytes: 300,
		Retry: 10 * time.Millisecond, Log: NewLogger(testWriter{t}, "archive-agent"),
		Written: func(ref archive.Ref) {
			r.mu.Lock()
			r.last = max(r.last, ref.Last)
			r.mu.Unlock()
			select {
			case r.stored <- struct{}{}:
			default:
			}
		}}
	for _, o := range opts {
		o(r.a)
	}
	go func() { r.done <- r.a.Run(ctx) }()
	t.Cleanup(func() { r.stop() })
	return r
}

// waitFor returns once a segment reaching rev is stored, or fails after a deadline.
func (r *archiverRun) waitFor(t *testing.T, rev int64) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		r.mu.Lock()
		last := r.last
		r.mu.Unlock()
		if last >= rev {
			return
		}
		select {
		case <-r.stored:
		case err := <-r.done:
			t.Fatalf("the archiver ended at revision %d before %d: %v", last, rev, err)
		case <-deadline:
			t.Fatalf("no segment reached revision %d (last %d)", rev, last)
		}
	}
}

func (r *archiverRun) stop() error {
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(time.Minute):
		return errors.New("the archiver did not stop")
	}
}

// fakeEtcd is a client of a new in-memory etcd, and the etcd.
func fakeEtcd(t *testing.T) (etcd.Client, *etcdtest.FakeCluster) {
	t.Helper()
	f := etcdtest.NewFakeFactory()
	c, err := f.Client(context.Background(), etcd.Target{Key: "c", Endpoints: []string{"http://c-0.c:2379"}})
	if err != nil {
		t.Fatal(err)
	}
	return c, f.Cluster("c")
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// writeLoad writes n rounds of puts, a two-key transaction, a delete and a leased key; it
// returns the keyspace after each revision.
func writeLoad(t *testing.T, c *etcdtest.FakeCluster, from, n int) map[int64]map[string]string {
	t.Helper()
	ctx := context.Background()
	states := map[int64]map[string]string{}
	do := func(ops ...etcd.Op) {
		rev, err := c.Write(ctx, ops)
		if err != nil {
			t.Fatal(err)
		}
		states[rev] = c.Keyspace()
	}
	for i := from; i < from+n; i++ {
		do(etcd.Op{Key: []byte(fmt.Sprintf("k/%03d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
		do(etcd.Op{Key: []byte(fmt.Sprintf("t/%03d/a", i)), Value: []byte("a")}, etcd.Op{Key: []byte(fmt.Sprintf("t/%03d/b", i)), Value: []byte("b")})
		if i > from {
			do(etcd.Op{Key: []byte(fmt.Sprintf("k/%03d", i-1)), Delete: true})
		}
		lease := int64(0x1000 + i)
		if err := c.LeaseGrant(ctx, lease, 30+int64(i)); err != nil {
			t.Fatal(err)
		}
		do(etcd.Op{Key: []byte(fmt.Sprintf("l/%03d", i)), Value: []byte("leased"), Lease: lease})
	}
	return states
}

func restoreInto(t *testing.T, folder snapshot.Folder, base int64, target archive.Target) (*etcdtest.FakeCluster, DeltaResult) {
	t.Helper()
	ctx := context.Background()
	names, err := folder.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := archive.PlanRestore([]archive.Base{{Name: "base", Revision: base}}, archive.ParseSegmentNames(names), target)
	if err != nil {
		t.Fatal(err)
	}
	client, fresh := fakeEtcd(t)
	res, err := (&DeltaRestore{Client: client, Folder: folder, Plan: plan, Log: NewLogger(testWriter{t}, "restore")}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fresh, res
}

func sameKeyspace(t *testing.T, got, want map[string]string, what string) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("%s: restored %d keys %v, want %d %v", what, len(got), got, len(want), want)
	}
}

// The archive of a write load restores exactly, to the latest revision and to an earlier one,
// leases included; an archiver stopped and started mid-stream leaves no gap and no revision
// twice.
func TestArchiverRestoresExactly(t *testing.T) {
	client, src := fakeEtcd(t)
	folder, err := snapshot.NewDirFolder(t.TempDir(), "backups", "c/segments")
	if err != nil {
		t.Fatal(err)
	}
	run := startArchiver(t, client, folder, 1)
	states := writeLoad(t, src, 0, 10)
	run.waitFor(t, src.Revision())
	if err := run.stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped archiver: %v", err)
	}
	mid := src.Revision()
	for k, v := range writeLoad(t, src, 10, 10) {
		states[k] = v
	}
	run = startArchiver(t, client, folder, 1)
	run.waitFor(t, src.Revision())

	names, _ := folder.List(context.Background())
	report := archive.Analyze([]archive.Base{{Revision: 1}}, archive.ParseSegmentNames(names))
	if len(report.Gaps) != 0 || len(report.Overlaps) != 0 || len(report.Duplicates) != 0 || report.Chains[0].Reach != src.Revision() {
		t.Fatalf("chain %+v after a restart at %d", report, mid)
	}
	latest, res := restoreInto(t, folder, 1, archive.Target{Kind: archive.TargetLatest})
	sameKeyspace(t, latest.Keyspace(), src.Keyspace(), "latest")
	if res.Revision != src.Revision() || latest.Revision() != src.Revision() || latest.KeyLease("l/019") != 0x1000+19 {
		t.Errorf("latest: %+v, restored at %d, l/019's lease %x", res, latest.Revision(), latest.KeyLease("l/019"))
	}
	for _, target := range []int64{2, mid, mid + 1, src.Revision() - 3} {
		got, _ := restoreInto(t, folder, 1, archive.Target{Kind: archive.TargetRevision, Revision: target})
		sameKeyspace(t, got.Keyspace(), states[target], fmt.Sprintf("revision %d", target))
		if got.Revision() != target {
			t.Errorf("restored to revision %d, want %d", got.Revision(), target)
		}
	}
}

// A watch that ends (its member died, lost the leader) is watched again from the folder's state:
// no gap, nothing twice.
func TestArchiverResumesAfterTheWatchEnds(t *testing.T) {
	client, src := fakeEtcd(t)
	dir, err := snapshot.NewDirFolder(t.TempDir(), "backups", "c/segments")
	if err != nil {
		t.Fatal(err)
	}
	folder := &listCounter{Folder: dir}
	run := startArchiver(t, client, folder, 1)
	for i := 0; i < 3; i++ {
		writeLoad(t, src, 5*i, 5)
		run.waitFor(t, src.Revision()) // its watch is open
		src.EndWatches(errors.New("etcdserver: no leader"))
	}
	writeLoad(t, src, 15, 5)
	run.waitFor(t, src.Revision())
	if n := folder.lists.Load(); n != 4 {
		t.Errorf("the archiver resumed %d times, want 4 (a start and 3 ended watches)", n)
	}
	names, _ := folder.List(context.Background())
	report := archive.Analyze([]archive.Base{{Revision: 1}}, archive.ParseSegmentNames(names))
	if len(report.Gaps) != 0 || len(report.Duplicates) != 0 || len(report.Overlaps) != 0 || report.Chains[0].Reach != src.Revision() {
		t.Fatalf("%d segments, report %+v", len(names), report)
	}
	got, _ := restoreInto(t, folder, 1, archive.Target{Kind: archive.TargetLatest})
	sameKeyspace(t, got.Keyspace(), src.Keyspace(), "latest")
}

// listCounter counts the listings of a folder: an archiver lists once per (re)start.
type listCounter struct {
	snapshot.Folder
	lists atomic.Int32
}

func (f *listCounter) List(ctx context.Context) ([]string, error) {
	f.lists.Add(1)
	return f.Folder.List(ctx)
}

// A compaction past the archiver's position is a gap, reported, never skipped.
func TestArchiverReportsCompactionAsGap(t *testing.T) {
	client, src := fakeEtcd(t)
	writeLoad(t, src, 0, 3)
	src.Compact(src.Revision())
	folder, err := snapshot.NewDirFolder(t.TempDir(), "backups", "c/segments")
	if err != nil {
		t.Fatal(err)
	}
	a := &Archiver{Client: client, Folder: folder, BaseRevision: 1, Period: 10 * time.Millisecond, Log: NewLogger(testWriter{t}, "archive-agent")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var gap *ArchiveGapError
	if err := a.Run(ctx); !errors.As(err, &gap) || gap.Next != 2 || gap.Compacted != src.Revision() {
		t.Fatalf("Run: %v, want a gap from 2 to %d", err, src.Revision())
	}
	if names, _ := folder.List(ctx); len(names) != 0 {
		t.Errorf("a gap stored %v", names)
	}
}
