// Package etcdcluster reconciles EtcdClusters: Services, PodDisruptionBudget, bootstrap and
// discovery, one membership change at a time (decided by package membership), and status.
package etcdcluster

import (
	"context"
	"sync"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/backoff"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/metrics"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Reconciler reconciles EtcdClusters.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Etcd dials the cluster's etcd; share one with the other controllers (one client pool).
	Etcd *etcdaccess.Access
	// NodeGracePeriod is how long a tmpfs member's node may be NotReady before the member is
	// replaced. Zero means DefaultNodeGracePeriod.
	NodeGracePeriod time.Duration
	// PVCNodeGracePeriod is how long a PVC member's node may be NotReady before the member is
	// replaced (or, on a node marked out of service, moved with its volume). Zero means
	// DefaultPVCNodeGracePeriod.
	PVCNodeGracePeriod      time.Duration
	MaxConcurrentReconciles int
	// ClusterDomain is the cluster's DNS domain, for certificate names; empty is cluster.local.
	ClusterDomain string
	// TLS reads TLS Secrets; share one with the member controller (see tlsmaterial.Source).
	// Nil creates one from the manager.
	TLS *tlsmaterial.Source
	// Observations receives what each pass saw of etcd, for the metrics (nil: none).
	Observations *metrics.Observations
	// RolloutHold, when set and saying why, holds every rolling restart (membership changes and
	// repairs go on): the manager's upgrade survey must first say what this build restarts.
	RolloutHold func() string

	once    sync.Once
	backoff *backoff.Tracker
	// apiReader reads around the cache, to confirm what the cache says is gone.
	apiReader client.Reader
	// memos holds a *clusterMemo per cluster (types.NamespacedName).
	memos sync.Map
}

// DefaultNodeGracePeriod is shorter than the 5-minute default eviction of Pods from a NotReady
// node: a tmpfs member's data cannot outlive its node, so waiting longer only prolongs the gap.
const DefaultNodeGracePeriod = 90 * time.Second

// DefaultPVCNodeGracePeriod matches Kubernetes' default toleration of an unreachable node (300 s
// before its Pods are evicted): a node that stays away longer is treated as gone, and a member
// with a PVC is replaced (a resync from the leader) rather than waited for.
const DefaultPVCNodeGracePeriod = 5 * time.Minute

// holderRecheck is how often a cluster held by an EtcdRestore checks that its holder still exists.
const holderRecheck = 30 * time.Second

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdmembers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. Only spec changes of the cluster trigger it (its
// own status writes do not); any change of an owned member, Service or PDB does.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.apiReader = mgr.GetAPIReader()
	if r.NodeGracePeriod == 0 {
		r.NodeGracePeriod = DefaultNodeGracePeriod
	}
	if r.PVCNodeGracePeriod == 0 {
		r.PVCNodeGracePeriod = DefaultPVCNodeGracePeriod
	}
	if r.TLS == nil {
		r.TLS = tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	}
	b := ctrl.NewControllerManagedBy(mgr)
	// Certificates are watched only when cert-manager's CRD is there at start: a watch on a
	// missing kind would stop the manager. Without it, Certificates are still created once
	// the CRD appears (the pass retries), and their Secrets' watch below drives the rest.
	if certificatesInstalled(mgr) {
		b = b.Owns(&cmapi.Certificate{})
	}
	return b.
		For(&v1alpha2.EtcdCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&v1alpha2.EtcdMember{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&corev1.ConfigMap{}).
		// Member Pods belong to EtcdMembers, but their container states (a crash loop, a
		// terminal phase) feed this controller's decisions directly.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod)).
		// TLS Secrets carry the cluster label (cert-manager's secretTemplate), as do the owned
		// operator-auth Secret and the root credentials Secret (labelled by watchSecret); the
		// cache holds only labelled Secrets (tlsmaterial.CacheByObject).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(clusterOfPod)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Named("etcdcluster").
		Complete(r)
}

// certificatesInstalled reports whether the API server serves cert-manager's Certificates.
func certificatesInstalled(mgr ctrl.Manager) bool {
	_, err := mgr.GetRESTMapper().RESTMapping(cmapi.SchemeGroupVersion.WithKind(cmapi.CertificateKind).GroupKind(), cmapi.SchemeGroupVersion.Version)
	return err == nil
}

// clusterOfPod maps a member Pod (or a labelled Secret) to its EtcdCluster through the cluster label.
func clusterOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[v1alpha2.LabelCluster]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile runs the cluster's steps in order. Each step reads and extends the state; a step
// that fails stops the pass (status is still written so the failure is visible).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &v1alpha2.EtcdCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		r.Etcd.Forget(req.Namespace, req.Name)
		r.forgetMetrics(req.NamespacedName)
		r.forget(req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		r.Etcd.Forget(c.Namespace, c.Name)
		r.forgetMetrics(req.NamespacedName)
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil // owner references cascade; member finalizers skip etcd
	}
	if c.Adopting() {
		return reconcile.Result{}, nil // etcd-migrate hands the cluster over by removing the annotation
	}
	if holder := c.Annotations[v1alpha2.AnnotationRestoring]; holder != "" {
		if standing, err := r.standAside(ctx, c, holder); err != nil || standing {
			// Nothing wakes a cluster whose holder was deleted: look again now and then.
			return reconcile.Result{RequeueAfter: holderRecheck}, err
		}
	}
	memo := r.memo(c)
	if cacheBehind(c.ResourceVersion, memo.wrote, memo.wroteAt, time.Now()) {
		// A pass on an older status would decide on it and write it back over ours.
		return reconcile.Result{RequeueAfter: staleRequeue}, nil
	}
	if behind, err := r.membersBehind(ctx, c, memo); err != nil || behind {
		return reconcile.Result{RequeueAfter: staleRequeue}, err
	}
	st := &clusterState{cluster: c, status: c.Status.DeepCopy(), memo: memo}
	for _, step := range []func(context.Context, *clusterState) error{
		r.latchToken, r.ensureServices, r.ensureCertificates, r.loadMembers, r.syncTrust, r.latchClientTLS, r.latchPeerAutoTLS, r.syncTemplates, r.observeEtcd, r.discover,
		r.ensureAuth, r.syncMemberStatus, r.ensurePDB, r.decide, r.act, r.rollOut,
	} {
		if err := step(ctx, st); err != nil {
			st.err = err
			break
		}
	}
	return r.finish(ctx, st)
}

// clusterState is what one pass learned and decided. Each field says which step sets it; a step
// reads only fields of the steps before it in Reconcile's list, which is what fixes their order.
type clusterState struct {
	// Set before the steps: the cluster as cached, and what the reconciler remembers of it.
	cluster *v1alpha2.EtcdCluster
	memo    *clusterMemo
	// status is the status being computed, starting as a copy of the stored one. Steps latch
	// into it (latchToken: clusterToken; latchClientTLS: clientTLSServing; latchPeerAutoTLS:
	// peerAutoTLS; discover: clusterID; observeEtcd and ensureAuth: authEnabled); finish
	// computes the rest and writes it.
	status *v1alpha2.EtcdClusterStatus
	// ensureCertificates: spec.tls asks for Certificates but cert-manager's CRD is absent.
	certManagerMissing bool
	// loadMembers: the cluster's EtcdMembers (oldest first) and their Pods by member name.
	members []v1alpha2.EtcdMember
	pods    map[string]*corev1.Pod
	// syncTrust: the trust bundle ConfigMap members mount; empty without TLS Secrets, or while a
	// source Secret is not issued yet.
	trustBundle string
	// latchClientTLS: every member serves TLS beside plaintext, but the operator cannot dial TLS
	// yet (why); the rolling update waits on it.
	clientTLSWait string
	// observeEtcd (ensureAuth re-dials once auth is enabled): what etcd said this pass.
	etcd etcdView
	// observeEtcd and ensureAuth: what the pass learned about etcd authentication.
	auth authState
	// decide: the observation in membership's terms, and the one membership action; decided
	// says decide ran (a pass stopped before it observed nothing computeStatus may report).
	obs     membership.Observed
	action  membership.Action
	decided bool
	// rollOut: the rolling-update step, decided only when membership has nothing to do.
	rollout rollout.Action
	// act (bootstrap): spec.bootstrap.restore cannot be read yet (Degraded); no seed is made.
	restoreWait *metav1.Condition
	// act, rollOut: a membership change or a rolling-update step was made this pass.
	acted bool
	// The error that stopped the pass (finish reports it).
	err error
}

func (r *Reconciler) event(obj client.Object, eventType, reason, action, format string, args ...any) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, action, format, args...)
	}
}

func key(c *v1alpha2.EtcdCluster) string { return topology.Key(c.Namespace, c.Name) }

// retries is the reconciler's back-off tracker, created on first use.
func (r *Reconciler) retries() *backoff.Tracker {
	r.once.Do(func() { r.backoff = backoff.New(250*time.Millisecond, 30*time.Second) })
	return r.backoff
}
