//go:build e2e

package day2

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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

const step = 4 * time.Minute

// TestDefragFragmentedCluster: a 3-member cluster whose database was made fragmented (written,
// deleted, compacted) is defragmented by an EtcdDefrag while a client keeps writing: every
// member shrinks, followers first and the leader last (after leadership moved off it), and no
// acknowledged write is lost.
func TestDefragFragmentedCluster(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "frag", 3)
	e2eutil.WaitConverged(t, c, ns, "frag", 3, 2*step)
	cli := e2eutil.EtcdClient(t, c, ns, "frag")
	fragment(t, cli, 32<<20)

	w := e2eutil.StartWriter(cli, "defrag")
	e2eutil.WaitFor(t, step, "the writer's first writes", func() bool { return w.Acked() > 10 })
	start := time.Now()
	d := runDefrag(t, c, ns, "frag", &v1alpha2.DefragRule{FreeSpaceAbove: ptr.To(resource.MustParse("8Mi"))})
	took := time.Since(start)
	acked, failed, errs := w.Stop()
	t.Logf("defrag of 3 members in %s; %d writes meanwhile, %d failed attempts (retried) %v", took.Round(100*time.Millisecond), acked, failed, errs)
	e2eutil.VerifyWrites(t, cli, "defrag", acked)

	if d.Status.Phase != v1alpha2.DefragComplete || d.Status.Defragmented != 3 {
		t.Fatalf("run ended %s with %d defragmented: %+v", d.Status.Phase, d.Status.Defragmented, d.Status)
	}
	for i, m := range d.Status.Members {
		t.Logf("%s %s: %s %s, %d → %d bytes", m.Role, m.Name, m.Outcome, m.Reason, m.DBSizeBefore, m.DBSizeAfter)
		if m.Outcome != v1alpha2.DefragOutcomeDefragmented || m.DBSizeAfter >= m.DBSizeBefore || m.ReclaimedBytes < 16<<20 {
			t.Errorf("member %s: %s, %d → %d bytes: want it defragmented and at least 16MiB smaller", m.Name, m.Outcome, m.DBSizeBefore, m.DBSizeAfter)
		}
		if (m.Role == "leader") != (i == len(d.Status.Members)-1) {
			t.Errorf("member %s (%s) is number %d of %d: the leader goes last, followers first", m.Name, m.Role, i+1, len(d.Status.Members))
		}
		if i > 0 && m.FinishedAt.Before(d.Status.Members[i-1].FinishedAt) {
			t.Errorf("member %s finished before %s, which comes first", m.Name, d.Status.Members[i-1].Name)
		}
	}
	if ev := e2eutil.FindEvent(t, c, ns, d.Name, v1alpha2.ReasonDefragmenting); ev == nil || !strings.Contains(ev.Note, "one at a time") {
		t.Errorf("no Defragmenting Event announcing the plan: %v", ev)
	}
	again := runDefrag(t, c, ns, "frag", nil) // the default rule: nothing left above 200Mi
	for _, m := range again.Status.Members {
		if m.Outcome != v1alpha2.DefragOutcomeSkipped || m.Reason != v1alpha2.ReasonBelowThreshold {
			t.Errorf("second run, member %s: %s %s, want Skipped BelowThreshold", m.Name, m.Outcome, m.Reason)
		}
	}
}

// TestDefragClearsNoSpace: a cluster that filled its small quota raises NOSPACE and refuses
// writes; once its keys are deleted and compacted, an EtcdDefrag reclaims the space and
// disarms the alarm, and writes go through again.
func TestDefragClearsNoSpace(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "full", 1, func(s *v1alpha2.EtcdClusterSpec) {
		s.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](16 << 20)}
	})
	e2eutil.WaitConverged(t, c, ns, "full", 1, 2*step)
	cli := e2eutil.EtcdClient(t, c, ns, "full")
	ctx := context.Background()
	value := strings.Repeat("x", 256<<10)
	var err error
	for i := 0; err == nil && i < 200; i++ {
		_, err = cli.Put(ctx, fmt.Sprintf("/fill/%04d", i), value)
	}
	if !errors.Is(err, rpctypes.ErrNoSpace) {
		t.Fatalf("filling the quota ended with %v, want %v", err, rpctypes.ErrNoSpace)
	}
	if alarms := alarmList(t, cli); len(alarms) == 0 {
		t.Fatal("no alarm after NOSPACE")
	}
	dr, err := cli.Delete(ctx, "/fill/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, dr.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
	d := runDefrag(t, c, ns, "full", &v1alpha2.DefragRule{All: true})
	if d.Status.Phase != v1alpha2.DefragComplete {
		t.Fatalf("run ended %s: %+v", d.Status.Phase, d.Status)
	}
	if alarms := alarmList(t, cli); len(alarms) != 0 {
		t.Errorf("alarms after the defrag: %v", alarms)
	}
	if e2eutil.FindEvent(t, c, ns, d.Name, v1alpha2.ReasonAlarmDisarmed) == nil {
		t.Error("no AlarmDisarmed Event")
	}
	e2eutil.PutGet(t, c, ns, "full", "after", "defrag")
}

// fragment writes about size bytes of values, deletes them and compacts: the members' files
// keep their size while the data in use shrinks.
func fragment(t *testing.T, cli *clientv3.Client, size int) {
	t.Helper()
	ctx := context.Background()
	value := strings.Repeat("f", 128<<10)
	for i := range size / len(value) {
		if _, err := cli.Put(ctx, fmt.Sprintf("/frag/%04d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	dr, err := cli.Delete(ctx, "/frag/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, dr.Header.Revision, clientv3.WithCompactPhysical()); err != nil {
		t.Fatal(err)
	}
}

// runDefrag creates an EtcdDefrag of cluster with rule and waits for it to finish.
func runDefrag(t *testing.T, c *framework.Cluster, ns, cluster string, rule *v1alpha2.DefragRule) *v1alpha2.EtcdDefrag {
	t.Helper()
	d := &v1alpha2.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: cluster + "-defrag-"},
		Spec: v1alpha2.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}, Rule: rule}}
	if err := c.Client.Create(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 2*step, "EtcdDefrag "+d.Name+" finished", func() bool {
		if err := c.Client.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		return d.Status.Phase == v1alpha2.DefragComplete || d.Status.Phase == v1alpha2.DefragFailed
	})
	return d
}

func alarmList(t *testing.T, cli *clientv3.Client) []string {
	t.Helper()
	resp, err := cli.AlarmList(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range resp.Alarms {
		out = append(out, fmt.Sprintf("%x:%s", a.MemberID, a.Alarm))
	}
	return out
}
