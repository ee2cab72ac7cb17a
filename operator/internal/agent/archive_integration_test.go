package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/operator/internal/archive"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Integration tests of continuous archiving against a real etcd: a write load archived after a
// full snapshot, restored (snapshot + deltas) into fresh etcds and compared with the source's own
// history, key by key.

func clientOf(t *testing.T, url string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// load writes rounds of: a put, a three-op transaction (two puts and a delete), a delete, a key
// under a new lease and, every third round, the revocation of an earlier lease (its keys are
// deleted in one revision, as an expiry would).
func load(t *testing.T, cli *clientv3.Client, from, rounds int) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := from; i < from+rounds; i++ {
		must(cli.Put(ctx, fmt.Sprintf("k/%04d", i), fmt.Sprintf("value-%d", i)))
		must(cli.Txn(ctx).Then(clientv3.OpPut(fmt.Sprintf("t/%04d/a", i), "a"), clientv3.OpPut(fmt.Sprintf("t/%04d/b", i), "b"),
			clientv3.OpDelete(fmt.Sprintf("t/%04d/a", i-1))).Commit())
		must(cli.Delete(ctx, fmt.Sprintf("k/%04d", i-2)))
		lease, err := cli.Grant(ctx, int64(300+i))
		must(lease, err)
		must(cli.Put(ctx, fmt.Sprintf("l/%04d", i), strconv.Itoa(i), clientv3.WithLease(lease.ID)))
		must(cli.Put(ctx, fmt.Sprintf("l/%04d/2", i), strconv.Itoa(i), clientv3.WithLease(lease.ID)))
		if i%3 == 0 && i > from {
			// the previous round's lease: its two keys go in one revision
			leases, err := cli.Leases(ctx)
			must(leases, err)
			for _, l := range leases.Leases {
				if ttl, _ := cli.TimeToLive(ctx, l.ID); ttl.GrantedTTL == int64(300+i-1) {
					must(cli.Revoke(ctx, l.ID))
				}
			}
		}
	}
}

// keyspace is every key at rev (0: now), with what must survive a restore 1:1.
func keyspace(t *testing.T, cli *clientv3.Client, rev int64) (map[string]*mvccpb.KeyValue, int64) {
	t.Helper()
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := cli.Get(context.Background(), "", opts...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = kv
	}
	return out, resp.Header.Revision
}

// compare checks that got holds exactly want's keys, values and leases, and (offset 0) their
// create and mod revisions and versions; got's revisions are want's plus offset.
func compare(t *testing.T, what string, got, want map[string]*mvccpb.KeyValue, offset int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d keys restored, want %d", what, len(got), len(want))
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: %s missing", what, k)
		case string(g.Value) != string(w.Value) || g.Lease != w.Lease:
			t.Errorf("%s: %s = %q lease %x, want %q lease %x", what, k, g.Value, g.Lease, w.Value, w.Lease)
		case offset == 0 && (g.ModRevision != w.ModRevision || g.CreateRevision != w.CreateRevision || g.Version != w.Version):
			t.Errorf("%s: %s at mod %d create %d version %d, want %d %d %d", what, k, g.ModRevision, g.CreateRevision,
				g.Version, w.ModRevision, w.CreateRevision, w.Version)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s restored, but did not exist at the target", what, k)
		}
	}
}

// crashableFolder refuses every write once crashed: an archiver stopped then loses the segment
// it held in memory, as a killed process would.
type crashableFolder struct {
	snapshot.Folder
	crashed atomic.Bool
}

func (f *crashableFolder) Put(ctx context.Context, name string, r io.Reader) error {
	if f.crashed.Load() {
		return errors.New("the process was killed")
	}
	return f.Folder.Put(ctx, name, r)
}

func TestArchiveRestoreToAPoint(t *testing.T) {
	e := startEtcd(t)
	src := clientOf(t, e.URL)
	load(t, src, 0, 20)
	snapDir := t.TempDir()
	snap, code := runSnapshotAgent(t, pvcEnv(e, snapDir, "uid-1"))
	if code != 0 {
		t.Fatalf("snapshot: %+v", snap)
	}
	base := archive.Base{Name: "snap.db", Revision: snap.Revision, Time: time.Now()}
	dir, err := snapshot.NewDirFolder(t.TempDir(), "backups", "c/segments")
	if err != nil {
		t.Fatal(err)
	}
	folder := &crashableFolder{Folder: dir}

	// Archive while writing, cutting by size only; kill the archiver mid-stream (the segment it
	// holds is lost) and start another with the default cut by time.
	run := startArchiver(t, e.client(t), folder, base.Revision, func(a *Archiver) { a.MaxBytes, a.Period = 4<<10, time.Hour })
	load(t, src, 20, 40)
	_, killedAt := keyspace(t, src, 0)
	run.waitFor(t, base.Revision+1)
	load(t, src, 60, 5)
	folder.crashed.Store(true)
	_ = run.stop()
	folder.crashed.Store(false)
	names, _ := folder.List(context.Background())
	if stored := archive.Analyze([]archive.Base{base}, archive.ParseSegmentNames(names)).Chains[0].Reach; stored >= killedAt {
		t.Fatalf("the killed archiver had stored everything up to %d: the kill tests nothing", stored)
	}
	load(t, src, 65, 20)
	run = startArchiver(t, e.client(t), folder, base.Revision)
	_, markRev := keyspace(t, src, 0)
	run.waitFor(t, markRev)
	markTime := time.Now()
	load(t, src, 85, 20)
	_, latest := keyspace(t, src, 0)
	run.waitFor(t, latest)

	names, err = folder.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	refs := archive.ParseSegmentNames(names)
	report := archive.Analyze([]archive.Base{base}, refs)
	t.Logf("%d segments; report %+v", len(refs), report.Recoverable)
	if len(report.Gaps) != 0 || report.Chains[0].Reach != latest {
		t.Fatalf("after a kill: gaps %v, reach %d, want %d", report.Gaps, report.Chains[0].Reach, latest)
	}

	restoreTo := func(t *testing.T, target archive.Target, bump int64) (*clientv3.Client, DeltaResult) {
		t.Helper()
		dataDir, peer := t.TempDir(), peerURL(t)
		env := restoreEnv(t, dataDir, peer).with(snapshot.EnvRestoreSource, snapshot.DestPVC,
			snapshot.EnvRestoreFile, filepath.Join(snapDir, "snap.db"))
		if bump != 0 {
			env = env.with(snapshot.EnvRestoreBumpRevision, strconv.FormatInt(bump, 10), snapshot.EnvRestoreMarkCompacted, "true")
		}
		if r, code := runRestoreAgent(t, env); code != 0 {
			t.Fatalf("restore: %+v", r)
		}
		restored := startEtcdAt(t, "r-0", dataDir, "restored", peer)
		plan, err := archive.PlanRestore([]archive.Base{base}, refs, target)
		if err != nil {
			t.Fatal(err)
		}
		res, err := (&DeltaRestore{Client: restored.client(t), Folder: folder, Plan: plan, Offset: bump,
			Log: NewLogger(testWriter{t}, "restore")}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return clientOf(t, restored.URL), res
	}
	for _, tc := range []struct {
		name   string
		target archive.Target
		want   int64
		bump   int64
	}{
		{"latest", archive.Target{Kind: archive.TargetLatest}, latest, 0},
		{"a revision before the kill", archive.Target{Kind: archive.TargetRevision, Revision: killedAt - 7}, killedAt - 7, 0},
		{"a revision after the kill", archive.Target{Kind: archive.TargetRevision, Revision: killedAt + 30}, killedAt + 30, 0},
		{"the base's revision", archive.Target{Kind: archive.TargetRevision, Revision: base.Revision}, base.Revision, 0},
		{"a time", archive.Target{Kind: archive.TargetTime, Time: markTime}, markRev, 0},
		{"latest, revisions bumped", archive.Target{Kind: archive.TargetLatest}, latest, 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cli, res := restoreTo(t, tc.target, tc.bump)
			got, rev := keyspace(t, cli, 0)
			want, _ := keyspace(t, src, tc.want)
			compare(t, tc.name, got, want, tc.bump)
			if res.Revision != tc.want || rev != tc.want+tc.bump {
				t.Errorf("replayed to %d, etcd at %d; want %d+%d", res.Revision, rev, tc.want, tc.bump)
			}
		})
	}
}

// A compaction past the archiver's position is reported as a gap, and nothing is stored.
func TestArchiveCompactionIsAGap(t *testing.T) {
	e := startEtcd(t)
	src := clientOf(t, e.URL)
	load(t, src, 0, 5)
	_, at := keyspace(t, src, 0)
	load(t, src, 5, 5)
	_, now := keyspace(t, src, 0)
	if _, err := src.Compact(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	folder, err := snapshot.NewDirFolder(t.TempDir(), "backups", "c/segments")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := &Archiver{Client: e.client(t), Folder: folder, BaseRevision: at, Log: NewLogger(testWriter{t}, "archive-agent")}
	var gap *ArchiveGapError
	if err := a.Run(ctx); !errors.As(err, &gap) || gap.Next != at+1 || gap.Compacted != now {
		t.Fatalf("Run: %v, want a gap from %d to %d", err, at+1, now)
	}
	t.Log(gap)
	if names, _ := folder.List(ctx); len(names) != 0 {
		t.Errorf("a gap stored %v", names)
	}
}

// Both folders hold segments alike: a write is visible whole under its name, listing skips what
// is not an artifact of the folder (a part, a deeper key), a missing artifact is SourceNotFound.
func TestFolders(t *testing.T) {
	s := startS3(t)
	s.createBucket(t, "archive")
	s3f, err := snapshot.NewS3Folder(s.config("archive", "ns/c/segments"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	dirf, err := snapshot.NewDirFolder(dir, "backups", "ns/c/segments")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, f := range map[string]snapshot.Folder{"s3": s3f, "dir": dirf} {
		t.Run(name, func(t *testing.T) {
			for _, n := range []string{"b.seg", "a.seg"} {
				if err := f.Put(ctx, n, strings.NewReader("body of "+n)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.Put(ctx, "x/y.seg", strings.NewReader("")); err == nil {
				t.Error("a name with '/' was accepted")
			}
			names, err := f.List(ctx)
			if err != nil || strings.Join(names, ",") != "a.seg,b.seg" {
				t.Fatalf("List: %v %v", names, err)
			}
			rc, err := f.Open(ctx, "a.seg")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(rc)
			_ = rc.Close()
			if string(body) != "body of a.seg" {
				t.Errorf("read %q", body)
			}
			if err := f.Delete(ctx, "a.seg"); err != nil {
				t.Fatal(err)
			}
			if err := f.Delete(ctx, "a.seg"); err != nil {
				t.Errorf("deleting a missing artifact: %v", err)
			}
			if _, err := f.Open(ctx, "a.seg"); snapshot.ReasonOf(err) != snapshot.ReasonSourceNotFound {
				t.Errorf("opening a deleted artifact: %v", err)
			}
		})
	}
	// What the folders do not list: a part left by a crash, a deeper key.
	if err := os.WriteFile(filepath.Join(dir, "c.seg"+snapshot.PartSuffix), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.store(t, "archive", "ns/c/segments/deeper/d.seg").Put(ctx, strings.NewReader(""), snapshot.Meta{}); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]snapshot.Folder{"s3": s3f, "dir": dirf} {
		if names, err := f.List(ctx); err != nil || strings.Join(names, ",") != "b.seg" {
			t.Errorf("%s lists %v %v", name, names, err)
		}
	}
}
