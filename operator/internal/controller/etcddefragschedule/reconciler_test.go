package etcddefragschedule

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

var t0 = time.Date(2026, 12, 6, 10, 0, 30, 0, time.UTC)

type world struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	now time.Time
}

func newWorld(t *testing.T, mod func(*v1alpha2.EtcdDefragSchedule), withCluster bool) *world {
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := &v1alpha2.EtcdDefragSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: "ds-uid", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha2.EtcdDefragScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "* * * * *",
			Rule: &v1alpha2.DefragRule{QuotaUsageAbove: "80%"}, SuccessfulRunsHistoryLimit: ptr.To[int32](2)},
	}
	if mod != nil {
		mod(ds)
	}
	objs := []client.Object{ds}
	if withCluster {
		objs = append(objs, &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}})
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&v1alpha2.EtcdDefragSchedule{}, &v1alpha2.EtcdDefrag{}).Build()
	w := &world{t: t, c: c, now: t0}
	w.r = &Reconciler{Client: c, Now: func() time.Time { return w.now }}
	return w
}

func (w *world) reconcile() reconcile.Result {
	w.t.Helper()
	res, err := w.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "nightly"}})
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *world) schedule() *v1alpha2.EtcdDefragSchedule {
	ds := &v1alpha2.EtcdDefragSchedule{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "nightly"}, ds); err != nil {
		w.t.Fatal(err)
	}
	return ds
}

func (w *world) runs() []string {
	var list v1alpha2.EtcdDefragList
	if err := w.c.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, d := range list.Items {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

func (w *world) finish(name string) {
	w.t.Helper()
	d := &v1alpha2.EtcdDefrag{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, d); err != nil {
		w.t.Fatal(err)
	}
	d.Status.Phase, d.Status.CompletedAt = v1alpha2.DefragComplete, &metav1.Time{Time: w.now}
	if err := w.c.Status().Update(context.Background(), d); err != nil {
		w.t.Fatal(err)
	}
}

func runName(at time.Time) string { return fmt.Sprintf("nightly-%d", at.Unix()/60) }

// Each minute a run with the schedule's rule, owned by the schedule; none while the previous
// is unfinished (counted as missed); the oldest finished runs beyond the history limit go.
func TestScheduleCreatesRunsAndKeepsHistory(t *testing.T) {
	w := newWorld(t, nil, true)
	if res := w.reconcile(); len(w.runs()) != 0 || res.RequeueAfter != 31*time.Second {
		t.Fatalf("before the first minute: runs %v, requeue %s", w.runs(), res.RequeueAfter)
	}
	first := t0.Add(30 * time.Second).Truncate(time.Minute)
	w.now = first.Add(time.Second)
	w.reconcile()
	if got := w.runs(); !slices.Equal(got, []string{runName(first)}) {
		t.Fatalf("runs %v, want %s", got, runName(first))
	}
	d := &v1alpha2.EtcdDefrag{}
	_ = w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: runName(first)}, d)
	if d.Spec.Rule == nil || d.Spec.Rule.QuotaUsageAbove != "80%" || d.Labels[v1alpha2.LabelDefragSchedule] != "nightly" ||
		len(d.OwnerReferences) != 1 || d.OwnerReferences[0].UID != "ds-uid" {
		t.Errorf("run %+v", d)
	}
	if s := w.schedule().Status; s.Active != runName(first) || s.NextScheduleTime == nil {
		t.Errorf("status %+v", s)
	}

	w.now = first.Add(time.Minute + time.Second) // the first is still running: skipped
	w.reconcile()
	if got, s := w.runs(), w.schedule().Status; len(got) != 1 || s.MissedRuns != 1 {
		t.Errorf("runs %v, missed %d: want the second minute skipped", got, s.MissedRuns)
	}
	for i := 2; i <= 4; i++ {
		w.finish(w.schedule().Status.LastRun)
		w.now = first.Add(time.Duration(i)*time.Minute + time.Second)
		w.reconcile()
	}
	want := []string{runName(first.Add(3 * time.Minute)), runName(first.Add(4 * time.Minute))}
	if got := w.runs(); !slices.Equal(got, []string{runName(first.Add(2 * time.Minute)), want[0], want[1]}) {
		t.Errorf("runs %v, want the two newest finished and the one in flight", got)
	}
	if s := w.schedule().Status; s.LastSuccessfulTime == nil || s.Active != want[1] {
		t.Errorf("status %+v", s)
	}
}

func TestScheduleConditions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*v1alpha2.EtcdDefragSchedule)
		cluster bool
		reason  string
	}{
		{"invalid", func(ds *v1alpha2.EtcdDefragSchedule) { ds.Spec.Schedule = "every day" }, true, v1alpha2.ReasonInvalidSchedule},
		{"bad zone", func(ds *v1alpha2.EtcdDefragSchedule) { ds.Spec.TimeZone = "Mars/Olympus" }, true, v1alpha2.ReasonInvalidSchedule},
		{"suspended", func(ds *v1alpha2.EtcdDefragSchedule) { ds.Spec.Suspend = true }, true, v1alpha2.ReasonSuspended},
		{"no cluster", nil, false, v1alpha2.ReasonClusterNotFound},
		{"scheduled", nil, true, v1alpha2.ReasonScheduled},
	} {
		w := newWorld(t, tc.mod, tc.cluster)
		w.now = t0.Add(time.Minute)
		w.reconcile()
		c := meta.FindStatusCondition(w.schedule().Status.Conditions, v1alpha2.ConditionReady)
		if c == nil || c.Reason != tc.reason {
			t.Errorf("%s: Ready %+v, want reason %s", tc.name, c, tc.reason)
		}
		if tc.reason != v1alpha2.ReasonScheduled && len(w.runs()) != 0 {
			t.Errorf("%s: runs %v, want none", tc.name, w.runs())
		}
	}
}
