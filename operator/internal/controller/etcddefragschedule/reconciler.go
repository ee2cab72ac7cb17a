// Package etcddefragschedule reconciles EtcdDefragSchedules: at each scheduled time it creates
// one EtcdDefrag with the schedule's rule (named after the time, so a run is never created
// twice; skipped while the previous run is unfinished), and it deletes finished runs past the
// history limits. Package backup's cron arithmetic decides when; package etcddefrag runs them.
package etcddefragschedule

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backup"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefragschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefragschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch

// clusterRecheck is how often a schedule whose cluster does not exist looks again.
const clusterRecheck = time.Minute

// Reconciler reconciles EtcdDefragSchedules.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock (tests set it); nil is time.Now.
	Now func() time.Time
}

// SetupWithManager registers the controller; its runs (owned) wake it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdDefragSchedule{}).
		Owns(&v1alpha2.EtcdDefrag{}).
		Named("etcddefragschedule").
		Complete(r)
}

// Reconcile trims the history, starts the run that is due, and says when the next one is.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ds := &v1alpha2.EtcdDefragSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ds.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	status := ds.Status.DeepCopy()
	status.ObservedGeneration = ds.Generation
	res, err := r.pass(ctx, ds, status, r.now())
	if werr := r.writeStatus(ctx, ds, status); err == nil {
		err = werr
	}
	return res, err
}

func (r *Reconciler) pass(ctx context.Context, ds *v1alpha2.EtcdDefragSchedule, status *v1alpha2.EtcdDefragScheduleStatus, now time.Time) (reconcile.Result, error) {
	sched, err := backup.Parse(ds.Spec.Schedule, ds.Spec.TimeZone)
	if err != nil {
		status.NextScheduleTime = nil
		r.setReady(ds, status, false, v1alpha2.ReasonInvalidSchedule, err.Error())
		return reconcile.Result{}, nil // a spec change wakes the schedule
	}
	runs, err := r.runs(ctx, ds)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.trimHistory(ctx, ds, runs); err != nil {
		return reconcile.Result{}, err
	}
	summarize(status, runs)
	if ds.Spec.Suspend {
		status.NextScheduleTime = nil
		r.setReady(ds, status, false, v1alpha2.ReasonSuspended, "spec.suspend is set; no new runs are created")
		return reconcile.Result{}, nil
	}
	c := &v1alpha2.EtcdCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: ds.Namespace, Name: ds.Spec.ClusterRef.Name}, c); apierrors.IsNotFound(err) {
		r.setReady(ds, status, false, v1alpha2.ReasonClusterNotFound, fmt.Sprintf("EtcdCluster %s does not exist", ds.Spec.ClusterRef.Name))
		return reconcile.Result{RequeueAfter: clusterRecheck}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	run := sched.Next(timeOf(status.LastScheduleTime), ds.CreationTimestamp.Time, now, deadline(ds))
	if !run.Due.IsZero() {
		if err := r.startRun(ctx, ds, status, run.Due); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !run.Latest.IsZero() {
		status.LastScheduleTime = &metav1.Time{Time: run.Latest}
	}
	status.MissedRuns += run.Missed
	status.NextScheduleTime = &metav1.Time{Time: run.Next}
	r.setReady(ds, status, true, v1alpha2.ReasonScheduled, fmt.Sprintf("next run at %s", run.Next.UTC().Format(time.RFC3339)))
	return reconcile.Result{RequeueAfter: run.Next.Sub(now) + time.Second}, nil
}

// startRun creates the run's EtcdDefrag, unless the previous run is still unfinished.
func (r *Reconciler) startRun(ctx context.Context, ds *v1alpha2.EtcdDefragSchedule, status *v1alpha2.EtcdDefragScheduleStatus, due time.Time) error {
	status.LastScheduleTime = &metav1.Time{Time: due}
	if status.Active != "" {
		status.MissedRuns++
		r.event(ds, corev1.EventTypeWarning, "RunSkipped", "run of %s skipped: %s is still unfinished", due.UTC().Format(time.RFC3339), status.Active)
		return nil
	}
	d := resources.ScheduledDefrag(ds, due)
	if err := r.Client.Create(ctx, d); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	status.LastRun, status.Active = d.Name, d.Name
	r.event(ds, corev1.EventTypeNormal, "DefragCreated", "created EtcdDefrag %s for the run of %s", d.Name, due.UTC().Format(time.RFC3339))
	return nil
}

func (r *Reconciler) runs(ctx context.Context, ds *v1alpha2.EtcdDefragSchedule) ([]v1alpha2.EtcdDefrag, error) {
	var list v1alpha2.EtcdDefragList
	err := r.Client.List(ctx, &list, client.InNamespace(ds.Namespace), client.MatchingLabels{v1alpha2.LabelDefragSchedule: ds.Name})
	return list.Items, err
}

// trimHistory deletes the oldest finished runs past the history limits.
func (r *Reconciler) trimHistory(ctx context.Context, ds *v1alpha2.EtcdDefragSchedule, runs []v1alpha2.EtcdDefrag) error {
	for _, phase := range []v1alpha2.DefragPhase{v1alpha2.DefragComplete, v1alpha2.DefragFailed} {
		for _, d := range expired(runs, phase, limit(ds, phase)) {
			if err := r.Client.Delete(ctx, &d); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// expired are the runs in phase beyond the newest keep, oldest first.
func expired(runs []v1alpha2.EtcdDefrag, phase v1alpha2.DefragPhase, keep int) []v1alpha2.EtcdDefrag {
	var in []v1alpha2.EtcdDefrag
	for _, d := range runs {
		if d.Status.Phase == phase && d.DeletionTimestamp.IsZero() {
			in = append(in, d)
		}
	}
	// Newest first; a run's name carries its minute, which breaks ties within a second.
	slices.SortFunc(in, func(a, b v1alpha2.EtcdDefrag) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name))
	})
	if len(in) <= keep {
		return nil
	}
	return in[keep:]
}

func limit(ds *v1alpha2.EtcdDefragSchedule, phase v1alpha2.DefragPhase) int {
	l, def := ds.Spec.SuccessfulRunsHistoryLimit, 3
	if phase == v1alpha2.DefragFailed {
		l, def = ds.Spec.FailedRunsHistoryLimit, 1
	}
	if l == nil {
		return def
	}
	return int(*l)
}

// summarize is the status the schedule's runs give: the newest success and the run in flight.
func summarize(status *v1alpha2.EtcdDefragScheduleStatus, runs []v1alpha2.EtcdDefrag) {
	status.Active = ""
	for i := range runs {
		d := &runs[i]
		switch p := d.Status.Phase; {
		case p != v1alpha2.DefragComplete && p != v1alpha2.DefragFailed && d.DeletionTimestamp.IsZero():
			status.Active = d.Name
		case p == v1alpha2.DefragComplete && d.Status.CompletedAt != nil &&
			(status.LastSuccessfulTime == nil || d.Status.CompletedAt.After(status.LastSuccessfulTime.Time)):
			status.LastSuccessfulTime = d.Status.CompletedAt.DeepCopy()
		}
	}
}

func (r *Reconciler) setReady(ds *v1alpha2.EtcdDefragSchedule, status *v1alpha2.EtcdDefragScheduleStatus, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	prev := meta.FindStatusCondition(status.Conditions, v1alpha2.ConditionReady)
	if !ok && (prev == nil || prev.Reason != reason) && reason != v1alpha2.ReasonSuspended {
		r.event(ds, corev1.EventTypeWarning, reason, "%s", msg)
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: s, Reason: reason,
		Message: msg, ObservedGeneration: ds.Generation})
}

func (r *Reconciler) writeStatus(ctx context.Context, ds *v1alpha2.EtcdDefragSchedule, status *v1alpha2.EtcdDefragScheduleStatus) error {
	if equality.Semantic.DeepEqual(&ds.Status, status) {
		return nil
	}
	patch := client.MergeFrom(ds.DeepCopy())
	ds.Status = *status
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, ds, patch))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) event(obj client.Object, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "Schedule", format, args...)
	}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func deadline(ds *v1alpha2.EtcdDefragSchedule) time.Duration {
	if d := ds.Spec.StartingDeadlineSeconds; d != nil {
		return time.Duration(*d) * time.Second
	}
	return 0
}
