//go:build e2e

package day2

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestDefragScheduleRuns: an EtcdDefragSchedule every minute creates an EtcdDefrag at the next
// minute, which defragments the cluster's member; the schedule records the success. It runs
// beside the other tests (its own namespace) to overlap the wait for the minute.
func TestDefragScheduleRuns(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "sched", 1)
	e2eutil.WaitConverged(t, c, ns, "sched", 1, 2*step)
	ctx := context.Background()
	ds := &v1alpha2.EtcdDefragSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sched"},
		Spec: v1alpha2.EtcdDefragScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "sched"}, Schedule: "* * * * *",
			Rule: &v1alpha2.DefragRule{All: true}}}
	if err := c.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitFor(t, 3*time.Minute, "a scheduled run Complete", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
			t.Fatal(err)
		}
		return ds.Status.LastSuccessfulTime != nil
	})
	t.Logf("first scheduled run complete %s after the schedule was created", took.Round(time.Second))
	d := &v1alpha2.EtcdDefrag{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ds.Status.LastRun}, d); err != nil {
		t.Fatal(err)
	}
	if d.Status.Phase != v1alpha2.DefragComplete || d.Status.Defragmented != 1 || !metav1.IsControlledBy(d, ds) {
		t.Errorf("run %s: %s, %d defragmented, owners %v", d.Name, d.Status.Phase, d.Status.Defragmented, d.OwnerReferences)
	}
}
