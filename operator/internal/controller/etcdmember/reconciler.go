// Package etcdmember reconciles one EtcdMember: its finalizer (MemberRemove on scale-down), its
// PVC, its Pod (recreated when deleted or terminal) and its status.
package etcdmember

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backoff"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// Reconciler reconciles EtcdMembers.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Etcd dials the cluster's etcd; share one with the other controllers (one client pool).
	Etcd *etcdaccess.Access
	// ImageRepository is the operator-wide etcd image repository.
	ImageRepository string
	// AgentImage is the operator's own image (--agent-image): a seed restored from a snapshot
	// runs its binary in an init container.
	AgentImage string
	// MaxConcurrentReconciles is the number of workers.
	MaxConcurrentReconciles int
	// ClusterDomain is the cluster's DNS domain, for the names certificates must cover; empty
	// is cluster.local.
	ClusterDomain string
	// TLS reads TLS Secrets; share one with the cluster controller (see tlsmaterial.Source).
	// Nil creates one from the manager.
	TLS *tlsmaterial.Source

	once    sync.Once
	backoff *backoff.Tracker
	// apiReader reads around the cache, to confirm what the cache says is gone.
	apiReader client.Reader
	// warned holds, per member UID, the certificate problem last reported by an Event: the
	// member's own condition can lag in the cache behind the pass that wrote it.
	warned sync.Map
}

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes;persistentvolumes,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller: EtcdMembers, and the Pods and PVCs they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	if r.TLS == nil {
		r.TLS = tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha2.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		// A member waiting for its certificate starts as soon as cert-manager writes it. The
		// cache holds only Secrets with the cluster label (tlsmaterial.CacheByObject);
		// BYO Secrets without it are re-checked with back-off.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.membersOfSecret)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Named("etcdmember").
		Complete(r)
}

// Reconcile runs the member's steps in order; each returns done=true when the rest must wait.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1alpha2.EtcdMember{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, m)
	}
	if m.Annotations[v1alpha2.AnnotationAdopting] != "" {
		return reconcile.Result{}, nil // etcd-migrate hands the member over by removing the annotation
	}
	if added, err := r.ensureFinalizer(ctx, m); err != nil || added {
		return reconcile.Result{}, err
	}
	cluster, err := r.parentCluster(ctx, m)
	if err != nil || cluster == nil {
		return reconcile.Result{}, err // gone: garbage collection removes the member
	}
	if cluster.Adopting() {
		return reconcile.Result{}, nil
	}
	st := &memberState{member: m, cluster: cluster}
	for _, step := range []func(context.Context, *memberState) (bool, error){
		r.loadPod, r.buildDesiredPod, r.park, r.ensurePVC, r.checkTLS, r.checkRestore, r.waitForRegistration, r.replaceDeadPod,
		r.restartOutdatedPod, r.restartToForceNewCluster, r.ensurePod, r.syncPodMetadata,
	} {
		done, err := step(ctx, st)
		if err != nil {
			return reconcile.Result{}, err
		}
		if done {
			break
		}
	}
	res, err := r.updateStatus(ctx, st)
	switch {
	case err == nil && st.recheck:
		res.RequeueAfter = r.retries().Next(string(m.UID))
	case err == nil:
		r.retries().Reset(string(m.UID))
	}
	return res, err
}

// membersOfSecret maps a labelled Secret to the members of its cluster.
func (r *Reconciler) membersOfSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	cluster, ok := obj.GetLabels()[v1alpha2.LabelCluster]
	if !ok {
		return nil
	}
	var list v1alpha2.EtcdMemberList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{v1alpha2.LabelCluster: cluster}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// memberState is what one reconcile learned, threaded through the steps. Each field says which
// step sets it; a step reads only fields of the steps before it in Reconcile's list.
type memberState struct {
	// Set before the steps.
	member  *v1alpha2.EtcdMember
	cluster *v1alpha2.EtcdCluster
	// loadPod: the member's Pod (nil when there is none), and whether a tmpfs member's data
	// went with an earlier Pod.
	pod      *corev1.Pod
	dataLost bool
	// node is the Pod's node (nil when unscheduled or gone).
	node *corev1.Node
	// buildDesiredPod: the Pod the spec asks for, stamped with its revision; carryForward says
	// the live Pod's recorded revision is the legacy one of this same spec (see
	// resources.LegacyPodRevision): it is current, and syncPodMetadata restamps it.
	desired      *corev1.Pod
	revision     string
	carryForward bool
	// Any step that stops the pass: why the member waits, and the Ready condition's reason
	// when more specific than PodNotReady.
	waiting       string
	waitingReason string
	// ensurePVC: the UID of the member's claim (recorded in status), and how far it is from
	// spec.storage.size (the VolumeResized condition; empty without a claim).
	pvcUID string
	volume metav1.Condition
	// checkTLS: the pass waits on something no watch reports (a BYO Secret); look again later.
	recheck bool
}

func (r *Reconciler) ensureFinalizer(ctx context.Context, m *v1alpha2.EtcdMember) (bool, error) {
	if controllerutil.ContainsFinalizer(m, v1alpha2.MemberCleanupFinalizer) {
		return false, nil
	}
	patch := client.MergeFrom(m.DeepCopy())
	controllerutil.AddFinalizer(m, v1alpha2.MemberCleanupFinalizer)
	return true, r.Client.Patch(ctx, m, patch)
}

// parentCluster returns the member's cluster, or nil when it is gone or being deleted.
func (r *Reconciler) parentCluster(ctx context.Context, m *v1alpha2.EtcdMember) (*v1alpha2.EtcdCluster, error) {
	c := &v1alpha2.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, c)
	if apierrors.IsNotFound(err) || (err == nil && !c.DeletionTimestamp.IsZero()) {
		return nil, nil
	}
	return c, err
}

func (r *Reconciler) event(obj *v1alpha2.EtcdMember, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
	}
}

// retries is the reconciler's back-off tracker, created on first use.
func (r *Reconciler) retries() *backoff.Tracker {
	r.once.Do(func() { r.backoff = backoff.New(500*time.Millisecond, 30*time.Second) })
	return r.backoff
}
