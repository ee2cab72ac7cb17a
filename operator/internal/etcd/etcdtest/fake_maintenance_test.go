package etcdtest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

const ep1 = "http://m-1.c.ns.svc:2379"

// oneMember is a fake cluster formed by m-1, its client and m-1's ID.
func oneMember(t *testing.T) (*FakeCluster, etcd.Client, uint64) {
	t.Helper()
	f := NewFakeFactory()
	cli, err := f.Client(context.Background(), etcd.Target{Key: "ns/c", Endpoints: []string{ep1}})
	if err != nil {
		t.Fatal(err)
	}
	fc := f.Cluster("ns/c")
	return fc, cli, fc.Members()[0].ID
}

func TestFakeStatusReportsDBSizes(t *testing.T) {
	fc, cli, id := oneMember(t)
	ctx := context.Background()
	fc.SetDBSize(id, 300, 100)
	st, err := cli.Status(ctx, ep1)
	if err != nil || st.DBSize != 300 || st.DBSizeInUse != 100 || st.DBQuota != DefaultQuota {
		t.Fatalf("status %+v, %v; want 300/100 of the default quota", st, err)
	}
	fc.SetQuota(1 << 20)
	if st, _ := cli.Status(ctx, ep1); st.DBQuota != 1<<20 {
		t.Errorf("quota %d after SetQuota(1 MiB)", st.DBQuota)
	}
}

func TestFakeDefragment(t *testing.T) {
	fc, cli, id := oneMember(t)
	ctx := context.Background()
	fc.SetDBSize(id, 300, 100)
	if err := cli.Defragment(ctx, ep1); err != nil {
		t.Fatal(err)
	}
	if size, inUse := fc.DBSize(id); size != 100 || inUse != 100 {
		t.Errorf("after defrag: %d/%d, want 100/100", size, inUse)
	}
	if ops := fc.Ops(); !slices.Equal(ops, []string{"bootstrap m-1", "defrag m-1"}) {
		t.Errorf("ops %q", ops)
	}
	if err := cli.Defragment(ctx, "http://m-9.c.ns.svc:2379"); err == nil {
		t.Error("defrag of an unknown endpoint succeeded")
	}
}

func TestFakeDefragmentFails(t *testing.T) {
	fc, cli, id := oneMember(t)
	ctx := context.Background()
	fc.SetDBSize(id, 300, 100)
	fc.SetDown(id, true)
	if err := cli.Defragment(ctx, ep1); err == nil {
		t.Error("defrag of a member that is down succeeded")
	}
	fc.SetDown(id, false)
	injected := errors.New("injected")
	fc.Refuse("defrag", injected)
	if err := cli.Defragment(ctx, ep1); !errors.Is(err, injected) {
		t.Errorf("refused defrag: %v, want the injected error", err)
	}
	if size, _ := fc.DBSize(id); size != 300 || slices.Contains(fc.Ops(), "defrag m-1") {
		t.Errorf("a failed defrag changed the member: size %d, ops %q", size, fc.Ops())
	}
	if err := cli.Defragment(ctx, ep1); err != nil {
		t.Errorf("a refusal is for one call only: %v", err)
	}
}

func TestFakeAlarms(t *testing.T) {
	fc, cli, id := oneMember(t)
	ctx := context.Background()
	if got, err := cli.AlarmList(ctx); err != nil || len(got) != 0 {
		t.Fatalf("alarms of a new cluster: %v, %v", got, err)
	}
	fc.RaiseAlarm(id, etcd.AlarmNoSpace)
	fc.RaiseAlarm(id, etcd.AlarmNoSpace)
	nospace := etcd.Alarm{MemberID: id, Type: etcd.AlarmNoSpace}
	if got, _ := cli.AlarmList(ctx); !slices.Equal(got, []etcd.Alarm{nospace}) {
		t.Fatalf("alarms %+v, want one NOSPACE of m-1", got)
	}
	if err := cli.AlarmDisarm(ctx, etcd.Alarm{MemberID: id, Type: "NONE"}); err == nil {
		t.Error("disarming an unknown alarm type succeeded")
	}
	for range 2 { // the second disarm finds nothing to clear and succeeds, as in etcd
		if err := cli.AlarmDisarm(ctx, nospace); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := cli.AlarmList(ctx); len(got) != 0 {
		t.Errorf("alarms after disarm: %+v", got)
	}
	if ops := fc.Ops(); !slices.Equal(ops, []string{"bootstrap m-1", "alarm-disarm NOSPACE m-1"}) {
		t.Errorf("ops %q", ops)
	}
}

// With auth on, anyone logged in lists alarms but only root may defragment or disarm.
func TestFakeMaintenanceWithAuth(t *testing.T) {
	fc, cli, id := oneMember(t)
	ctx := context.Background()
	fc.RaiseAlarm(id, etcd.AlarmCorrupt)
	fc.EnableAuthBehindOperator("pw")
	if _, err := cli.AlarmList(ctx); !etcd.IsAuthRequired(err) {
		t.Errorf("anonymous AlarmList: %v, want auth required", err)
	}
	if err := cli.Defragment(ctx, ep1); !etcd.IsAuthRequired(err) {
		t.Errorf("anonymous Defragment: %v, want auth required", err)
	}
	if err := cli.AlarmDisarm(ctx, etcd.Alarm{MemberID: id, Type: etcd.AlarmCorrupt}); !etcd.IsAuthRequired(err) {
		t.Errorf("anonymous AlarmDisarm: %v, want auth required", err)
	}
}
