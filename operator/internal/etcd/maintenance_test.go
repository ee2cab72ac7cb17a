package etcd

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// fill writes n keys of size bytes under prefix, a transaction of 100 at a time (etcd's
// default limit of operations per transaction).
func fill(t *testing.T, ctx context.Context, c *clientv3.Client, prefix string, n, size int) {
	t.Helper()
	value := strings.Repeat("x", size)
	for i := 0; i < n; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%06d", prefix, j), value))
		}
		if _, err := c.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDefragmentAgainstRealEtcd: deleting data and compacting leaves free pages in the
// database (DBSize above DBSizeInUse); a defragmentation gives them back. A healthy cluster
// has no alarms, and disarming one that is not active succeeds.
func TestDefragmentAgainstRealEtcd(t *testing.T) {
	ep := startEtcd(t)
	pool := NewPool()
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := pool.Client(ctx, Target{Key: "ns/d", Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, func() (EndpointStatus, error) { return cli.Status(ctx, ep) })
	raw := cli.(*remote).c
	fill(t, ctx, raw, "/bulk/", 2000, 8<<10) // 16 MiB
	del, err := raw.Delete(ctx, "/bulk/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	// Physical: return once the compaction has reached the backend, freeing its pages.
	if _, err := raw.Compact(ctx, del.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	before, err := cli.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if before.DBSize < 16<<20 || before.DBSizeInUse > before.DBSize/2 || before.DBQuota <= 0 {
		t.Fatalf("after deleting 16 MiB: size %d, in use %d, quota %d; want mostly free pages and a quota",
			before.DBSize, before.DBSizeInUse, before.DBQuota)
	}
	if err := cli.Defragment(ctx, ep); err != nil {
		t.Fatal(err)
	}
	after, err := cli.Status(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("size %d (in use %d) -> %d (in use %d), quota %d", before.DBSize, before.DBSizeInUse, after.DBSize, after.DBSizeInUse, before.DBQuota)
	if after.DBSize > before.DBSize/2 {
		t.Errorf("defrag: size %d -> %d, want it to shrink to what is in use (%d)", before.DBSize, after.DBSize, before.DBSizeInUse)
	}
	if alarms, err := cli.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Errorf("alarms of a healthy cluster: %+v, %v", alarms, err)
	}
	if err := cli.AlarmDisarm(ctx, Alarm{MemberID: before.MemberID, Type: AlarmNoSpace}); err != nil {
		t.Errorf("disarming an alarm that is not active: %v", err)
	}
	if err := cli.AlarmDisarm(ctx, Alarm{Type: "NONE"}); err == nil {
		t.Error("an alarm of type NONE (clientv3's 'every alarm') was sent")
	}
}
