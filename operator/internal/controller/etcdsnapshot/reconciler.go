// Package etcdsnapshot reconciles EtcdSnapshots: it checks the cluster and the destination,
// starts one agent Pod that streams the snapshot from a follower to S3 or a PVC and verifies
// it, records the agent's result, and deletes the artifact with the object when its
// deletionPolicy says so. Complete and Failed are final: a snapshot is taken at most once.
package etcdsnapshot

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Deadline bounds a snapshot from its agent's start: past it the agent is stopped and the
// snapshot Failed.
const Deadline = 30 * time.Minute

// notReadyLimit is how long a snapshot waits for its cluster to be Available before it fails.
const notReadyLimit = 10 * time.Minute

// Reconciler reconciles EtcdSnapshots.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// AgentImage is the operator's own image (--agent-image), which the agent Pods run.
	AgentImage string
	// TLS reads Secrets (the S3 credentials are checked, never read into the operator beyond
	// that, and never logged); share the manager's.
	TLS *tlsmaterial.Source
	// apiReader confirms around the cache that an agent Pod is gone.
	apiReader client.Reader
}

// SetupWithManager registers the controller: snapshots and the agent Pods they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	if r.TLS == nil {
		r.TLS = tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdSnapshot{}).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Named("etcdsnapshot").
		Complete(r)
}

// Reconcile moves a snapshot one phase on.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &v1alpha2.EtcdSnapshot{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return r.cleanUp(ctx, s)
	}
	if s.Spec.DeletionPolicy == v1alpha2.SnapshotDelete && !controllerutil.ContainsFinalizer(s, v1alpha2.SnapshotArtifactFinalizer) {
		patch := client.MergeFrom(s.DeepCopy())
		controllerutil.AddFinalizer(s, v1alpha2.SnapshotArtifactFinalizer)
		return reconcile.Result{}, r.Client.Patch(ctx, s, patch)
	}
	switch s.Status.Phase {
	case v1alpha2.SnapshotComplete, v1alpha2.SnapshotFailed:
		return reconcile.Result{}, nil
	case v1alpha2.SnapshotStarted:
		return r.watchAgent(ctx, s)
	}
	return r.start(ctx, s)
}

func (r *Reconciler) event(obj client.Object, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
	}
}
