// Package controller is the tenant controller: it gives each served Kamaji TenantControlPlane
// its own EtcdCluster, the cert-manager PKI behind it and a DataStore wired to both, then points
// the TCP at that DataStore. It imports the operator's API only, never its internals.
package controller

import (
	"context"
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
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
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/serve"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// FieldOwner is the server-side apply field manager of everything the controller writes.
const FieldOwner = "etcd-operator-tenants"

// KamajiDefaultDataStore is the default DataStore of Kamaji's chart (defaultDatastoreName), which
// its webhook writes into every TCP created without spec.dataStore.
const KamajiDefaultDataStore = "default"

// Options are the cluster-wide settings (the operator chart's tenantController values).
type Options struct {
	// Template is the EtcdCluster spec (YAML or JSON) every tenant etcd starts from.
	Template []byte
	// Backup is the EtcdBackupSchedule spec (YAML or JSON, no clusterRef) every tenant etcd is
	// backed up by; empty: none, unless a TCP's annotation asks.
	Backup []byte
	// ServeByDefault serves TCPs that neither their annotation nor their namespace's label decide.
	ServeByDefault bool
	// DeletionPolicy is v1alpha2.TenantDeletionDelete (empty) or TenantDeletionRetain.
	DeletionPolicy string
	// KamajiDefaultDataStore is the DataStore Kamaji's webhook writes into every TCP created
	// without one (Kamaji's chart: defaultDatastoreName, "default"): a served TCP on it moves to
	// its own. Empty: every DataStore not made here is foreign.
	KamajiDefaultDataStore string
	Workers                int
}

// Reconciler reconciles TenantControlPlanes; requests are the TCP's namespace/name, also once
// the TCP is gone (what was made for it maps back to it by label).
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Options
}

// +kubebuilder:rbac:groups=kamaji.clastix.io,resources=tenantcontrolplanes,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=kamaji.clastix.io,resources=datastores,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=deletecollection
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch;deletecollection
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdbackupschedules,verbs=get;list;watch;create;patch;delete

// SetupWithManager registers the controller.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := registerMetrics(mgr.GetClient()); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&kamaji.TenantControlPlane{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&v1alpha2.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(tenantOf)).
		Watches(&kamaji.DataStore{}, handler.EnqueueRequestsFromMapFunc(tenantOf)).
		Watches(&v1alpha2.EtcdBackupSchedule{}, handler.EnqueueRequestsFromMapFunc(tenantOf)).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.tenantsIn),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		Named("tenantcontrolplane").
		Complete(r)
}

// tenantOf maps what was made for a TCP back to it.
func tenantOf(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[v1alpha2.LabelAppManagedBy] != v1alpha2.ManagedByTenants {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: l[v1alpha2.LabelTenantNamespace], Name: l[v1alpha2.LabelTenantName]}}}
}

// tenantsIn: a namespace's opt-in label changed; every TCP in it is looked at again.
func (r *Reconciler) tenantsIn(ctx context.Context, o client.Object) []reconcile.Request {
	var list kamaji.TenantControlPlaneList
	if err := r.Client.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, t := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
	}
	return reqs
}

// Reconcile serves a TCP, or releases what was made for one that is gone.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	n := specs.NamesOf(req.Namespace, req.Name)
	tcp := &kamaji.TenantControlPlane{}
	err := r.Client.Get(ctx, req.NamespacedName, tcp)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, r.release(ctx, n)
	case err != nil:
		return reconcile.Result{}, err
	case !tcp.DeletionTimestamp.IsZero():
		// Kamaji's own finalizer cleans the tenant's keys out of this etcd: it stays until the TCP is gone.
		return reconcile.Result{}, nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: req.Namespace}, ns); err != nil {
		return reconcile.Result{}, err
	}
	available, err := r.etcdAvailable(ctx, n)
	if err != nil {
		return reconcile.Result{}, err
	}
	v := serve.Decide(serve.Input{TCPAnnotations: tcp.Annotations, NamespaceLabels: ns.Labels, Default: r.ServeByDefault,
		DataStore: tcp.Spec.DataStore, Ours: n.DataStore, KamajiDefault: r.KamajiDefaultDataStore,
		HasServed: hasServed(tcp), EtcdAvailable: available})
	if !v.Serve {
		return reconcile.Result{}, r.pass(ctx, tcp, n, v)
	}
	return reconcile.Result{}, r.serve(ctx, tcp, n, v)
}

// hasServed: Kamaji sets status.kubernetesResources.version.version once the TCP's control
// plane Deployment was ready, and keeps it; from then on the tenant's keys live on its DataStore.
func hasServed(tcp *kamaji.TenantControlPlane) bool {
	s := tcp.Status
	return s != nil && s.KubernetesResources != nil && s.KubernetesResources.Version != nil && s.KubernetesResources.Version.Version != ""
}

// etcdAvailable: the tenant's own EtcdCluster exists, was made here, and is Available.
func (r *Reconciler) etcdAvailable(ctx context.Context, n specs.Names) (bool, error) {
	c, err := ours(ctx, r.Client, &v1alpha2.EtcdCluster{}, client.ObjectKey{Namespace: n.Namespace, Name: n.Cluster})
	if err != nil || c == nil {
		return false, err
	}
	return meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha2.ConditionAvailable), nil
}

// pass: the TCP is not served. A foreign DataStore or a bad opt-in is said once per change;
// anything made for it before it was bound (it opted out meanwhile) goes.
func (r *Reconciler) pass(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names, v serve.Verdict) error {
	switch v.Reason {
	case serve.Foreign:
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, v1alpha2.ReasonForeignDataStore, "Skip", "%s; left alone", v.Message)
		return nil
	case serve.InvalidOptIn:
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeWarning, serve.InvalidOptIn, "Skip", "%s", v.Message)
	}
	return r.release(ctx, n)
}

// serve makes (or keeps up to date) the TCP's etcd, PKI and DataStore, then binds the TCP when
// the verdict says so.
func (r *Reconciler) serve(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names, v serve.Verdict) error {
	if err := n.Check(); err != nil {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantNameTooLong, err.Error())
	}
	spec, err := specs.Spec(r.Template, tcp.Annotations[v1alpha2.AnnotationTenantEtcdSpec])
	if err != nil {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantTemplateInvalid, err.Error())
	}
	backup, err := specs.BackupSpec(r.Backup, tcp.Annotations[v1alpha2.AnnotationTenantEtcdBackup])
	if err != nil {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantTemplateInvalid, err.Error())
	}
	cluster, created, err := r.applyCluster(ctx, tcp, n, spec)
	if userError(err) {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantApplyFailed, err.Error())
	}
	if err != nil {
		return err
	}
	if created {
		r.Recorder.Eventf(tcp, cluster, corev1.EventTypeNormal, v1alpha2.ReasonTenantEtcdCreated, "Serve", "created EtcdCluster %s", n.Cluster)
	}
	if err := r.applyPKI(ctx, n, cluster); err != nil {
		return err
	}
	if err := r.applyBackup(ctx, n, cluster, backup); userError(err) {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantApplyFailed, err.Error())
	} else if err != nil {
		return err
	}
	if err := r.applyDataStore(ctx, tcp, n); userError(err) {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonTenantApplyFailed, err.Error())
	} else if err != nil {
		return err
	}
	reason, msg := clusterState(cluster)
	if !v.Bind {
		return r.setState(ctx, tcp, n, v1alpha2.ReasonDataStoreSwitchPending, switchPending(tcp, n, msg))
	}
	if err := r.bind(ctx, tcp, n, v.Move); err != nil {
		return err
	}
	return r.setState(ctx, tcp, n, reason, msg)
}

// policy is the TCP's deletion policy, else the controller's.
func (r *Reconciler) policy(tcp *kamaji.TenantControlPlane) string {
	if p := tcp.Annotations[v1alpha2.AnnotationTenantDeletionPolicy]; p == v1alpha2.TenantDeletionRetain || p == v1alpha2.TenantDeletionDelete {
		return p
	}
	if r.DeletionPolicy == v1alpha2.TenantDeletionRetain {
		return v1alpha2.TenantDeletionRetain
	}
	return v1alpha2.TenantDeletionDelete
}

// userError: the API's own validation (CEL included) refused what was built from the user's
// template, or a name is taken by someone else's object. Retrying changes nothing; the user
// has to act, and an edit of the TCP or its namespace brings the next pass.
func userError(err error) bool {
	var foreign foreignObject
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || errors.As(err, &foreign)
}

// errorLine keeps a message on one line for an annotation.
func errorLine(s string) string { return strings.Join(strings.Fields(s), " ") }
