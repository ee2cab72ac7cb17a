package etcdbackupschedule

import (
	"context"
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

var t0 = time.Date(2026, 12, 3, 10, 0, 30, 0, time.UTC)

type world struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	now time.Time
}

func newWorld(t *testing.T, mod func(*v1alpha2.EtcdBackupSchedule), objs ...client.Object) *world {
	scheme := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	bs := &v1alpha2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: "ns", CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1alpha2.EtcdBackupScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "* * * * *",
			SnapshotTemplate: v1alpha2.SnapshotTemplate{Destination: v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "b"}}},
			Retention:        v1alpha2.BackupRetention{KeepLast: ptr.To[int32](3)}},
	}
	if mod != nil {
		mod(bs)
	}
	cluster := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "etcd", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(objs, bs, cluster)...).
		WithStatusSubresource(&v1alpha2.EtcdBackupSchedule{}, &v1alpha2.EtcdSnapshot{}).Build()
	w := &world{t: t, c: c, now: t0}
	w.r = &Reconciler{Client: c, Now: func() time.Time { return w.now }}
	return w
}

func (w *world) reconcile() reconcile.Result {
	w.t.Helper()
	res, err := w.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "hourly"}})
	if err != nil {
		w.t.Fatal(err)
	}
	return res
}

func (w *world) schedule() *v1alpha2.EtcdBackupSchedule {
	bs := &v1alpha2.EtcdBackupSchedule{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "hourly"}, bs); err != nil {
		w.t.Fatal(err)
	}
	return bs
}

func (w *world) snapshots() []v1alpha2.EtcdSnapshot {
	var list v1alpha2.EtcdSnapshotList
	if err := w.c.List(context.Background(), &list, client.InNamespace("ns")); err != nil {
		w.t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b v1alpha2.EtcdSnapshot) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	return list.Items
}

func (w *world) finish(name string, phase v1alpha2.SnapshotPhase) {
	w.t.Helper()
	s := &v1alpha2.EtcdSnapshot{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, s); err != nil {
		w.t.Fatal(err)
	}
	s.Status.Phase, s.Status.CompletionTime = phase, &metav1.Time{Time: w.now}
	if err := w.c.Status().Update(context.Background(), s); err != nil {
		w.t.Fatal(err)
	}
}

func names(snaps []v1alpha2.EtcdSnapshot) []string {
	out := []string{}
	for _, s := range snaps {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// Five runs of a schedule keeping three: one snapshot per run, named after its minute, the two
// oldest deleted, status telling the last success and the next run.
func TestFiveRunsKeepThree(t *testing.T) {
	w := newWorld(t, nil)
	var want []string
	for i := 1; i <= 5; i++ {
		w.now = t0.Add(time.Duration(i) * time.Minute)
		w.reconcile()
		name := v1alpha2.ScheduledSnapshotName("hourly", t0.Truncate(time.Minute).Add(time.Duration(i)*time.Minute).Unix()/60)
		want = append(want, name)
		w.finish(name, v1alpha2.SnapshotComplete)
		w.reconcile() // the snapshot's watch
	}
	got := names(w.snapshots())
	if !slices.Equal(got, want[2:]) {
		t.Errorf("snapshots %v, want the last three %v", got, want[2:])
	}
	bs := w.schedule()
	st := bs.Status
	if st.LastSuccessfulTime == nil || !st.LastSuccessfulTime.Time.Equal(w.now) || st.NextScheduleTime == nil ||
		!st.NextScheduleTime.Time.Equal(w.now.Truncate(time.Minute).Add(time.Minute)) || st.MissedRuns != 0 || st.Active != "" {
		t.Errorf("status %+v", st)
	}
	s := w.snapshots()[0]
	if s.Labels[v1alpha2.LabelBackupSchedule] != "hourly" || s.Spec.DeletionPolicy != v1alpha2.SnapshotDelete || len(s.OwnerReferences) != 0 {
		t.Errorf("snapshot %+v: want the schedule's label, deletionPolicy Delete, no owner", s.ObjectMeta)
	}
}

// Forbid skips a run while one is in flight and counts it; Replace supersedes the one in flight.
func TestConcurrencyPolicy(t *testing.T) {
	w := newWorld(t, nil)
	w.now = t0.Add(time.Minute)
	w.reconcile()
	w.now = t0.Add(2 * time.Minute)
	w.reconcile()
	if n := len(w.snapshots()); n != 1 || w.schedule().Status.MissedRuns != 1 {
		t.Fatalf("Forbid: %d snapshots, missed %d; want 1 and 1", n, w.schedule().Status.MissedRuns)
	}
	bs := w.schedule()
	bs.Spec.ConcurrencyPolicy = v1alpha2.ConcurrencyReplace
	if err := w.c.Update(context.Background(), bs); err != nil {
		t.Fatal(err)
	}
	w.now = t0.Add(3 * time.Minute)
	w.reconcile()
	snaps := w.snapshots()
	if len(snaps) != 2 || snaps[0].Annotations[v1alpha2.AnnotationSuperseded] == "" {
		t.Errorf("Replace: %d snapshots, first annotated %v; want 2 and superseded", len(snaps), snaps[0].Annotations)
	}
}

// An operator down for hours starts only the latest missed run, within the deadline only.
func TestMissedRuns(t *testing.T) {
	w := newWorld(t, func(bs *v1alpha2.EtcdBackupSchedule) { bs.Spec.StartingDeadlineSeconds = ptr.To[int64](30) })
	w.now = t0.Add(11*time.Minute + 15*time.Second) // 10:11:45, 45 s past the 10:11 run: too late
	w.reconcile()
	if n := len(w.snapshots()); n != 0 || w.schedule().Status.MissedRuns != 11 {
		t.Errorf("%d snapshots, %d missed; want 0 and 11 (10:01 to 10:11)", n, w.schedule().Status.MissedRuns)
	}
	w.reconcile() // handled runs are not counted twice
	if got := w.schedule().Status.MissedRuns; got != 11 {
		t.Errorf("missed %d after a second pass, want 11", got)
	}
	w.now = t0.Add(11*time.Minute + 40*time.Second) // 10:12:10, within 30 s of 10:12
	w.reconcile()
	if n := len(w.snapshots()); n != 1 {
		t.Errorf("%d snapshots within the deadline, want 1", n)
	}
}

// A bad schedule or zone is a condition, not a crash; suspend stops new runs.
func TestInvalidAndSuspended(t *testing.T) {
	w := newWorld(t, func(bs *v1alpha2.EtcdBackupSchedule) { bs.Spec.TimeZone = "Mars/Olympus" })
	w.now = t0.Add(time.Minute)
	w.reconcile()
	if c := meta.FindStatusCondition(w.schedule().Status.Conditions, v1alpha2.ConditionReady); c == nil || c.Reason != v1alpha2.ReasonInvalidSchedule {
		t.Errorf("condition %+v, want InvalidSchedule", c)
	}
	w = newWorld(t, func(bs *v1alpha2.EtcdBackupSchedule) { bs.Spec.Suspend = true })
	w.now = t0.Add(5 * time.Minute)
	w.reconcile()
	if n := len(w.snapshots()); n != 0 || w.schedule().Status.NextScheduleTime != nil {
		t.Errorf("suspended: %d snapshots, next %v", n, w.schedule().Status.NextScheduleTime)
	}
}

// Retention keeps a snapshot a new cluster is still restoring from.
func TestRetentionKeepsWhatARestoreReads(t *testing.T) {
	restoring := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "copy", Namespace: "ns"},
		Spec: v1alpha2.EtcdClusterSpec{Bootstrap: &v1alpha2.BootstrapSpec{Restore: &v1alpha2.RestoreSpec{Source: v1alpha2.RestoreSource{
			SnapshotRef: &corev1.LocalObjectReference{Name: v1alpha2.ScheduledSnapshotName("hourly", t0.Truncate(time.Minute).Add(time.Minute).Unix()/60)}}}}}}
	w := newWorld(t, func(bs *v1alpha2.EtcdBackupSchedule) { bs.Spec.Retention.KeepLast = ptr.To[int32](1) }, restoring)
	for i := 1; i <= 3; i++ {
		w.now = t0.Add(time.Duration(i) * time.Minute)
		w.reconcile()
		w.finish(w.schedule().Status.LastSnapshot, v1alpha2.SnapshotComplete)
		w.reconcile()
	}
	got := names(w.snapshots())
	if len(got) != 2 || !slices.Contains(got, restoring.Spec.Bootstrap.Restore.Source.SnapshotRef.Name) {
		t.Errorf("snapshots %v: want the newest and the one being restored", got)
	}
}
