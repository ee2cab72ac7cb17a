//go:build e2e

package lifecycle

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestRollingUpgrade: a version change is rolled out one member at a time while a client keeps
// writing; every member keeps its ID and data, and no acknowledged write is lost.
func TestRollingUpgrade(t *testing.T) {
	from, to := e2eutil.EtcdVersions[0], e2eutil.EtcdVersions[len(e2eutil.EtcdVersions)-1]
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "up", 3, e2eutil.Version(from))
	e2eutil.WaitConverged(t, c, ns, "up", 3, 2*step)
	before := map[string]v1alpha2.EtcdMember{}
	podUID := map[string]string{}
	for _, m := range e2eutil.Members(t, c, ns, "up") {
		before[m.Name] = m
		podUID[m.Name] = string(e2eutil.Pod(t, c, ns, m.Name).UID)
	}
	cli := e2eutil.EtcdClient(t, c, ns, "up")
	w := e2eutil.StartWriter(cli, "upgrade")
	e2eutil.WaitFor(t, step, "the writer's first writes", func() bool { return w.Acked() > 10 })

	ec := e2eutil.GetCluster(t, c, ns, "up")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = to
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	sawRollout := false
	took := e2eutil.WaitFor(t, 3*step, "every member on "+to, func() bool {
		ec := e2eutil.GetCluster(t, c, ns, "up")
		if p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionProgressing); p != nil && p.Reason == v1alpha2.ReasonRollingUpdate {
			sawRollout = true
		}
		for _, m := range e2eutil.Members(t, c, ns, "up") {
			if m.Status.Version != to {
				return false
			}
		}
		return ec.Status.Rollout == nil && e2eutil.Converged(t, c, ns, "up", 3)
	})
	acked, failed, errs := w.Stop()
	t.Logf("%s -> %s: rolled 3 members in %s; %d writes during it, %d failed attempts (retried) %v",
		from, to, took.Round(100*time.Millisecond), acked, failed, errs)
	e2eutil.VerifyWrites(t, cli, "upgrade", acked)
	if !sawRollout {
		t.Error("Progressing never reported RollingUpdate")
	}
	for _, m := range e2eutil.Members(t, c, ns, "up") {
		b, ok := before[m.Name]
		switch {
		case !ok:
			t.Errorf("member %s is new: the upgrade replaced a member instead of restarting it", m.Name)
		case m.Status.MemberID != b.Status.MemberID:
			t.Errorf("member %s ID %s -> %s", m.Name, b.Status.MemberID, m.Status.MemberID)
		case string(e2eutil.Pod(t, c, ns, m.Name).UID) == podUID[m.Name]:
			t.Errorf("member %s Pod was not restarted", m.Name)
		}
	}
}
