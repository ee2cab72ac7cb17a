// Package etcddefrag reconciles EtcdDefrags: one defragmentation run of a cluster, a task that
// admits (the cluster exists, no older run of it is unfinished, the cluster is healthy), plans
// (each member's sizes against the rule: defragment or skip, followers first, the leader last),
// runs one member per pass (leadership moved off the leader first, a timeout per member, the
// cluster's health checked again between members), disarms a NOSPACE alarm once the space is
// back, and deletes a finished run after its TTL. The run is a record: it never runs twice.
package etcddefrag

import (
	"cmp"
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcddefrags/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch

// waitRecheck is how often a run waiting on etcd's own view (which no watch reports) looks again.
const waitRecheck = 5 * time.Second

// nextStep is the pause before the next step of a run: the next member, or the same one once
// leadership has moved off it.
const nextStep = 250 * time.Millisecond

// DefaultMemberTimeout bounds one member's defragmentation without spec.memberTimeoutSeconds.
const DefaultMemberTimeout = 300 * time.Second

// Reconciler reconciles EtcdDefrags.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Etcd     *etcdaccess.Access
	// Now is the clock (tests set it); nil is time.Now.
	Now func() time.Time
}

// SetupWithManager registers the controller; a cluster's and its members' changes wake the
// runs of its namespace that wait on its health.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdDefrag{}).
		Watches(&v1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.runsOfNamespace)).
		Watches(&v1alpha2.EtcdMember{}, handler.EnqueueRequestsFromMapFunc(r.runsOfNamespace)).
		Named("etcddefrag").
		Complete(r)
}

// runsOfNamespace wakes the unfinished runs of an object's namespace (there are few).
func (r *Reconciler) runsOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha2.EtcdDefragList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, d := range list.Items {
		if !finished(&d) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: d.Namespace, Name: d.Name}})
		}
	}
	return out
}

// Reconcile takes the run one step: expire, admit, plan, or defragment the next member.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	d := &v1alpha2.EtcdDefrag{}
	if err := r.Client.Get(ctx, req.NamespacedName, d); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !d.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if finished(d) {
		return r.expire(ctx, d)
	}
	run, wait, err := r.admit(ctx, d)
	if err != nil || wait.reason != "" {
		return r.waiting(ctx, d, wait, err)
	}
	if d.Status.Phase != v1alpha2.DefragRunning {
		return reconcile.Result{RequeueAfter: nextStep}, r.plan(ctx, d, run)
	}
	return r.step(ctx, d, run)
}

func finished(d *v1alpha2.EtcdDefrag) bool {
	return d.Status.Phase == v1alpha2.DefragComplete || d.Status.Phase == v1alpha2.DefragFailed
}

// expire deletes a finished run once spec.ttlSecondsAfterFinished has passed.
func (r *Reconciler) expire(ctx context.Context, d *v1alpha2.EtcdDefrag) (reconcile.Result, error) {
	if d.Spec.TTLSecondsAfterFinished == nil || d.Status.CompletedAt == nil {
		return reconcile.Result{}, nil
	}
	left := d.Status.CompletedAt.Add(time.Duration(*d.Spec.TTLSecondsAfterFinished) * time.Second).Sub(r.now())
	if left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Delete(ctx, d))
}

// waiting records why the run does not go on (reason: why), and looks again later.
func (r *Reconciler) waiting(ctx context.Context, d *v1alpha2.EtcdDefrag, why waitReason, err error) (reconcile.Result, error) {
	if err != nil {
		return reconcile.Result{}, err
	}
	if d.Status.Phase == "" {
		d.Status.Phase = v1alpha2.DefragPending
	}
	r.setReady(d, metav1.ConditionFalse, why.reason, why.message)
	return reconcile.Result{RequeueAfter: waitRecheck}, client.IgnoreNotFound(r.Client.Status().Update(ctx, d))
}

func (r *Reconciler) setReady(d *v1alpha2.EtcdDefrag, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&d.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: d.Generation})
}

func (r *Reconciler) event(obj client.Object, eventType, reason, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "Defragment", format, args...)
	}
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// memberTimeout is spec.memberTimeoutSeconds, or the default.
func memberTimeout(d *v1alpha2.EtcdDefrag) time.Duration {
	if s := d.Spec.MemberTimeoutSeconds; s != nil {
		return time.Duration(*s) * time.Second
	}
	return DefaultMemberTimeout
}

// waitReason is a condition reason and message; the zero value means "go on".
// waitReason is why a run cannot go on yet (a condition reason and its message).
type waitReason struct{ reason, message string }

// olderFirst orders runs by age, then name: the order in which a cluster's runs go.
func olderFirst(a, b v1alpha2.EtcdDefrag) int {
	return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
}
