// Package etcdbackupschedule reconciles EtcdBackupSchedules: at each scheduled time it creates
// one EtcdSnapshot from the template (named after the time, so a run is never taken twice), and
// it deletes the snapshots retention no longer keeps (their artifacts go with them when their
// deletionPolicy is Delete). Package backup decides when and which.
package etcdbackupschedule

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backup"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdbackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdbackupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch

// clusterRecheck is how often a schedule whose cluster does not exist looks again.
const clusterRecheck = time.Minute

// Reconciler reconciles EtcdBackupSchedules.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock (tests set it); nil is time.Now.
	Now func() time.Time
}

// SetupWithManager registers the controller; a schedule's snapshots (by label) wake it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdBackupSchedule{}).
		Watches(&v1alpha2.EtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(scheduleOfSnapshot)).
		Named("etcdbackupschedule").
		Complete(r)
}

func scheduleOfSnapshot(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[v1alpha2.LabelBackupSchedule]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile applies retention, starts the run that is due, and says when the next one is.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	bs := &v1alpha2.EtcdBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, bs); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !bs.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // its snapshots stay: a deleted schedule is no reason to lose backups
	}
	now := r.now()
	status := bs.Status.DeepCopy()
	status.ObservedGeneration = bs.Generation
	res, err := r.pass(ctx, bs, status, now)
	if werr := r.writeStatus(ctx, bs, status); err == nil {
		err = werr
	}
	return res, err
}

// pass is one reconcile over a status being computed.
func (r *Reconciler) pass(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule, status *v1alpha2.EtcdBackupScheduleStatus, now time.Time) (reconcile.Result, error) {
	sched, err := backup.Parse(bs.Spec.Schedule, bs.Spec.TimeZone)
	if err != nil {
		status.NextScheduleTime = nil
		r.setReady(bs, status, false, v1alpha2.ReasonInvalidSchedule, err.Error())
		return reconcile.Result{}, nil // a spec change wakes the schedule
	}
	snaps, err := r.snapshots(ctx, bs)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.applyRetention(ctx, bs, snaps, now); err != nil {
		return reconcile.Result{}, err
	}
	summarize(status, snaps)
	if bs.Spec.Suspend {
		status.NextScheduleTime = nil
		r.setReady(bs, status, false, v1alpha2.ReasonSuspended, "spec.suspend is set; no new snapshots are taken")
		return reconcile.Result{}, nil
	}
	c := &v1alpha2.EtcdCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: bs.Namespace, Name: bs.Spec.ClusterRef.Name}, c); apierrors.IsNotFound(err) {
		r.setReady(bs, status, false, v1alpha2.ReasonClusterNotFound, fmt.Sprintf("EtcdCluster %s does not exist", bs.Spec.ClusterRef.Name))
		return reconcile.Result{RequeueAfter: clusterRecheck}, nil
	} else if err != nil {
		return reconcile.Result{}, err
	}
	run := sched.Next(timeOf(status.LastScheduleTime), bs.CreationTimestamp.Time, now, deadline(bs))
	if !run.Due.IsZero() {
		if err := r.startRun(ctx, bs, status, snaps, run.Due); err != nil {
			return reconcile.Result{}, err
		}
	}
	if !run.Latest.IsZero() {
		status.LastScheduleTime = &metav1.Time{Time: run.Latest} // handled: not counted again
	}
	status.MissedRuns += run.Missed
	status.NextScheduleTime = &metav1.Time{Time: run.Next}
	r.setReady(bs, status, true, v1alpha2.ReasonScheduled, fmt.Sprintf("next snapshot at %s", run.Next.UTC().Format(time.RFC3339)))
	// A second past the time, so the pass finds the run due.
	return reconcile.Result{RequeueAfter: run.Next.Sub(now) + time.Second}, nil
}

// startRun creates the run's snapshot, unless one is in flight and the policy forbids a second.
func (r *Reconciler) startRun(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule, status *v1alpha2.EtcdBackupScheduleStatus,
	snaps []v1alpha2.EtcdSnapshot, due time.Time) error {
	status.LastScheduleTime = &metav1.Time{Time: due}
	if active := inFlight(snaps); active != nil {
		if bs.Spec.ConcurrencyPolicy != v1alpha2.ConcurrencyReplace {
			status.MissedRuns++
			r.event(bs, corev1.EventTypeWarning, "RunSkipped", "Schedule",
				"run of %s skipped: snapshot %s is still in flight (concurrencyPolicy Forbid)", due.UTC().Format(time.RFC3339), active.Name)
			return nil
		}
		if err := r.supersede(ctx, active); err != nil {
			return err
		}
	}
	s := resources.ScheduledSnapshot(bs, due)
	if err := r.Client.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	status.LastSnapshot = s.Name
	r.event(bs, corev1.EventTypeNormal, "SnapshotCreated", "Schedule", "created EtcdSnapshot %s for the run of %s",
		s.Name, due.UTC().Format(time.RFC3339))
	return nil
}

func (r *Reconciler) supersede(ctx context.Context, s *v1alpha2.EtcdSnapshot) error {
	patch := client.MergeFrom(s.DeepCopy())
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[v1alpha2.AnnotationSuperseded] = "true"
	return client.IgnoreNotFound(r.Client.Patch(ctx, s, patch))
}

func (r *Reconciler) snapshots(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule) ([]v1alpha2.EtcdSnapshot, error) {
	var list v1alpha2.EtcdSnapshotList
	err := r.Client.List(ctx, &list, client.InNamespace(bs.Namespace), client.MatchingLabels{v1alpha2.LabelBackupSchedule: bs.Name})
	return list.Items, err
}

func inFlight(snaps []v1alpha2.EtcdSnapshot) *v1alpha2.EtcdSnapshot {
	for i := range snaps {
		s := &snaps[i]
		if p := s.Status.Phase; s.DeletionTimestamp.IsZero() && p != v1alpha2.SnapshotComplete && p != v1alpha2.SnapshotFailed {
			return s
		}
	}
	return nil
}

// summarize is the status the schedule's snapshots give: the newest success and the one in flight.
func summarize(status *v1alpha2.EtcdBackupScheduleStatus, snaps []v1alpha2.EtcdSnapshot) {
	status.Active = ""
	if a := inFlight(snaps); a != nil {
		status.Active = a.Name
	}
	for i := range snaps {
		s := &snaps[i]
		if s.Status.Phase == v1alpha2.SnapshotComplete && s.Status.CompletionTime != nil &&
			(status.LastSuccessfulTime == nil || s.Status.CompletionTime.After(status.LastSuccessfulTime.Time)) {
			status.LastSuccessfulTime = s.Status.CompletionTime.DeepCopy()
		}
	}
}

func (r *Reconciler) setReady(bs *v1alpha2.EtcdBackupSchedule, status *v1alpha2.EtcdBackupScheduleStatus, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	prev := meta.FindStatusCondition(status.Conditions, v1alpha2.ConditionReady)
	if !ok && (prev == nil || prev.Reason != reason) && reason != v1alpha2.ReasonSuspended {
		r.event(bs, corev1.EventTypeWarning, reason, "Schedule", "%s", msg)
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: s, Reason: reason,
		Message: msg, ObservedGeneration: bs.Generation})
}

func (r *Reconciler) writeStatus(ctx context.Context, bs *v1alpha2.EtcdBackupSchedule, status *v1alpha2.EtcdBackupScheduleStatus) error {
	if equality.Semantic.DeepEqual(&bs.Status, status) {
		return nil
	}
	patch := client.MergeFrom(bs.DeepCopy())
	bs.Status = *status
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, bs, patch))
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Reconciler) event(obj client.Object, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
	}
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func deadline(bs *v1alpha2.EtcdBackupSchedule) time.Duration {
	if d := bs.Spec.StartingDeadlineSeconds; d != nil {
		return time.Duration(*d) * time.Second
	}
	return 0
}
