// Package etcdrestore reconciles EtcdRestores, the in-place rollback of a running cluster: a
// task that admits (the cluster and a Complete source exist, no other rollback runs), takes a
// safety snapshot, then takes the cluster over (annotation v1alpha2.AnnotationRestoring: the
// cluster controller stands still and member finalizers leave etcd alone), replaces every
// member by a seed restored from the snapshot (revisions bumped, so watchers resync), and hands
// the cluster back to its controller, which grows it to its size again. The cluster keeps its
// name, Services, certificates and Secrets, so clients reconnect to the same endpoints.
package etcdrestore

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdrestores,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdrestores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// waitRecheck is how often a rollback waiting on something no watch reports looks again.
const waitRecheck = 5 * time.Second

// Reconciler reconciles EtcdRestores.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// TLS reads the Secrets a source needs (only to check they exist).
	TLS *tlsmaterial.Source
	// AgentImage is the operator's own image, which checks the source before the rollback.
	AgentImage string
}

// SetupWithManager registers the controller; the safety snapshot, the cluster and its members
// wake the rollback that waits on them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.TLS == nil {
		r.TLS = tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdRestore{}).
		Owns(&corev1.Pod{}).
		Watches(&v1alpha2.EtcdSnapshot{}, handler.EnqueueRequestsFromMapFunc(r.restoresOfNamespace)).
		Watches(&v1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.restoresOfNamespace)).
		Watches(&v1alpha2.EtcdMember{}, handler.EnqueueRequestsFromMapFunc(r.restoresOfNamespace)).
		Named("etcdrestore").
		Complete(r)
}

// restoresOfNamespace wakes the rollbacks in flight of an object's namespace (there are few).
func (r *Reconciler) restoresOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha2.EtcdRestoreList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, er := range list.Items {
		if !final(&er) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: er.Namespace, Name: er.Name}})
		}
	}
	return out
}

// Reconcile takes the rollback one step.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	er := &v1alpha2.EtcdRestore{}
	if err := r.Client.Get(ctx, req.NamespacedName, er); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !er.DeletionTimestamp.IsZero() {
		return r.finishBeforeGoing(ctx, er)
	}
	if final(er) {
		return reconcile.Result{}, r.dropFinalizer(ctx, er)
	}
	switch er.Status.Phase {
	case "":
		return reconcile.Result{}, r.setPhase(ctx, er, v1alpha2.RestorePending, v1alpha2.ReasonSnapshotPending, "waiting to be admitted")
	case v1alpha2.RestorePending:
		return r.admit(ctx, er)
	case v1alpha2.RestoreSafetySnapshot:
		return r.awaitSafety(ctx, er)
	}
	return r.restore(ctx, er)
}

// finishBeforeGoing: a rollback deleted while it holds its cluster goes on until the seed
// exists and the cluster is handed back; only then does it let go.
func (r *Reconciler) finishBeforeGoing(ctx context.Context, er *v1alpha2.EtcdRestore) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(er, v1alpha2.RollbackHandBackFinalizer) {
		return reconcile.Result{}, nil
	}
	c, err := r.cluster(ctx, er)
	if err != nil {
		return reconcile.Result{}, err
	}
	if c == nil || !c.DeletionTimestamp.IsZero() || c.Annotations[v1alpha2.AnnotationRestoring] != er.Name {
		return reconcile.Result{}, r.dropFinalizer(ctx, er)
	}
	return r.restore(ctx, er)
}

func (r *Reconciler) dropFinalizer(ctx context.Context, er *v1alpha2.EtcdRestore) error {
	if !controllerutil.ContainsFinalizer(er, v1alpha2.RollbackHandBackFinalizer) {
		return nil
	}
	patch := client.MergeFrom(er.DeepCopy())
	controllerutil.RemoveFinalizer(er, v1alpha2.RollbackHandBackFinalizer)
	return client.IgnoreNotFound(r.Client.Patch(ctx, er, patch))
}

func final(er *v1alpha2.EtcdRestore) bool {
	return er.Status.Phase == v1alpha2.RestoreComplete || er.Status.Phase == v1alpha2.RestoreFailed
}

func (r *Reconciler) setPhase(ctx context.Context, er *v1alpha2.EtcdRestore, phase v1alpha2.RestorePhase, reason, msg string) error {
	patch := client.MergeFrom(er.DeepCopy())
	if er.Status.Phase != phase && (phase == v1alpha2.RestoreComplete || phase == v1alpha2.RestoreFailed) {
		now := metav1.Now()
		er.Status.CompletionTime = &now
	}
	if er.Status.StartTime == nil && phase != v1alpha2.RestorePending {
		now := metav1.Now()
		er.Status.StartTime = &now
	}
	er.Status.Phase = phase
	status := metav1.ConditionFalse
	if phase == v1alpha2.RestoreComplete {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&er.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: er.Generation})
	return r.Client.Status().Patch(ctx, er, patch)
}

func (r *Reconciler) fail(ctx context.Context, er *v1alpha2.EtcdRestore, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	r.event(er, corev1.EventTypeWarning, reason, "Restore", "rollback failed: %s", msg)
	return r.setPhase(ctx, er, v1alpha2.RestoreFailed, reason, msg)
}

func (r *Reconciler) event(obj client.Object, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
	}
}
