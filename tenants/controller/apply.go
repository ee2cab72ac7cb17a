package controller

import (
	"context"
	"fmt"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/serve"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// foreignObject: an object of the name the controller would make exists, and it did not make it.
type foreignObject struct{ kind, name string }

func (e foreignObject) Error() string {
	return fmt.Sprintf("%s %s exists and was not created by the tenant controller; it is left alone", e.kind, e.name)
}

// applyCluster server-side applies the tenant's EtcdCluster and returns it as stored.
func (r *Reconciler) applyCluster(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names, spec specs.ClusterSpec) (*v1alpha2.EtcdCluster, bool, error) {
	existing := &v1alpha2.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: n.Cluster}, existing)
	if client.IgnoreNotFound(err) != nil {
		return nil, false, err
	}
	created := apierrors.IsNotFound(err)
	if !created && existing.Labels[v1alpha2.LabelAppManagedBy] != v1alpha2.ManagedByTenants {
		return nil, false, foreignObject{"EtcdCluster", n.Namespace + "/" + n.Cluster}
	}
	u, err := specs.EtcdCluster(n, spec, r.policy(tcp))
	if err != nil {
		return nil, false, err
	}
	if err := r.apply(ctx, u); err != nil {
		return nil, false, err
	}
	c := &v1alpha2.EtcdCluster{}
	return c, created, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c)
}

// applyPKI applies the tenant's CA chain, owned by the EtcdCluster: it goes with the cluster.
// An existing CA keeps its key type (specs.CAKey).
func (r *Reconciler) applyPKI(ctx context.Context, n specs.Names, owner *v1alpha2.EtcdCluster) error {
	ref := metav1.OwnerReference{APIVersion: v1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: owner.Name, UID: owner.UID}
	ca, err := ours(ctx, r.Client, &cmapi.Certificate{}, client.ObjectKey{Namespace: n.Namespace, Name: n.CA()})
	if err != nil {
		return err
	}
	for _, o := range specs.PKI(n, specs.CAKey(ca)) {
		u, err := unstructuredOf(o)
		if err != nil {
			return err
		}
		u.SetOwnerReferences([]metav1.OwnerReference{ref})
		if err := r.apply(ctx, u); err != nil {
			return err
		}
	}
	return nil
}

// applyBackup applies the tenant's EtcdBackupSchedule, owned by the EtcdCluster (it goes, or
// stays, with the cluster), or deletes the one made before when backups are off for the TCP.
func (r *Reconciler) applyBackup(ctx context.Context, n specs.Names, owner *v1alpha2.EtcdCluster, spec *specs.ClusterBackup) error {
	key := client.ObjectKey{Namespace: n.Namespace, Name: n.BackupSchedule()}
	existing := &v1alpha2.EtcdBackupSchedule{}
	err := r.Client.Get(ctx, key, existing)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	found, ours := err == nil, existing.Labels[v1alpha2.LabelAppManagedBy] == v1alpha2.ManagedByTenants
	switch {
	case spec == nil && found && ours:
		return client.IgnoreNotFound(r.Client.Delete(ctx, existing))
	case spec == nil: // no backups asked for: someone else's schedule of that name is none of ours
		return nil
	case found && !ours:
		return foreignObject{"EtcdBackupSchedule", n.Namespace + "/" + n.BackupSchedule()}
	}
	u := specs.BackupSchedule(n, spec)
	u.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: v1alpha2.GroupVersion.String(), Kind: "EtcdCluster", Name: owner.Name, UID: owner.UID}})
	return r.apply(ctx, u)
}

// applyDataStore applies the tenant's DataStore; one of the name not made here is refused.
func (r *Reconciler) applyDataStore(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names) error {
	existing := &kamaji.DataStore{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: n.DataStore}, existing)
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	existed := err == nil
	if existed && existing.Labels[v1alpha2.LabelAppManagedBy] != v1alpha2.ManagedByTenants {
		return foreignObject{"DataStore", n.DataStore}
	}
	u, err := unstructuredOf(specs.DataStore(n))
	if err != nil {
		return err
	}
	if err := r.apply(ctx, u); err != nil {
		return err
	}
	if !existed {
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, v1alpha2.ReasonDataStoreCreated, "Serve", "created DataStore %s", n.DataStore)
	}
	return nil
}

// bind points the TCP at its DataStore (a merge patch of that one field: the TCP's other
// fields are Kamaji's and are not in the typed object). move is the verdict's: moving a TCP
// that has served makes Kamaji migrate its keys, which the Event says.
func (r *Reconciler) bind(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names, move string) error {
	from := tcp.Spec.DataStore
	if from == n.DataStore {
		return nil
	}
	patch := client.MergeFrom(tcp.DeepCopy())
	tcp.Spec.DataStore = n.DataStore
	if err := r.Client.Patch(ctx, tcp, patch); err != nil {
		return err
	}
	if move == serve.MoveMigrate {
		msg := fmt.Sprintf("spec.dataStore moved from %s to %s, as EtcdCluster %s is Available: Kamaji now migrates the tenant's keys "+
			"with its datastore migration job, and the control plane is paused (status Migrating) until the copy completes", dataStoreOrDefault(from), n.DataStore, n.Cluster)
		logf.FromContext(ctx).Info("moved a serving TenantControlPlane to its own etcd; Kamaji migrates its keys", "from", dataStoreOrDefault(from), "to", n.DataStore)
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, v1alpha2.ReasonDataStoreMigration, "Serve", "%s", msg)
		return nil
	}
	msg := fmt.Sprintf("spec.dataStore set to %s (etcd %s)", n.DataStore, n.Cluster)
	if from != "" {
		msg += fmt.Sprintf(" in place of %s: no control plane of this TCP had been ready yet", from)
	}
	r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, v1alpha2.ReasonDataStoreSet, "Serve", "%s", msg)
	return nil
}

// switchPending says why a served TCP stays on the DataStore it runs on for now.
func switchPending(tcp *kamaji.TenantControlPlane, n specs.Names, clusterMsg string) string {
	return fmt.Sprintf("the control plane has served from %s; spec.dataStore moves to %s once its etcd is Available, then Kamaji migrates "+
		"the tenant's keys (%s)", dataStoreOrDefault(tcp.Spec.DataStore), n.DataStore, clusterMsg)
}

// dataStoreOrDefault names a TCP's spec.dataStore; empty is the Kamaji manager's default.
func dataStoreOrDefault(name string) string {
	if name == "" {
		return "Kamaji's default DataStore"
	}
	return "DataStore " + name
}

// clusterState is the EtcdCluster's readiness as the TCP's state annotation says it.
func clusterState(c *v1alpha2.EtcdCluster) (string, string) {
	a := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionAvailable)
	switch {
	case a == nil:
		return v1alpha2.ReasonTenantEtcdNotReady, "EtcdCluster " + c.Name + " has no Available condition yet"
	case a.Status == metav1.ConditionTrue:
		return v1alpha2.TenantStateReady, ""
	default:
		return v1alpha2.ReasonTenantEtcdNotReady, fmt.Sprintf("EtcdCluster %s is not Available: %s: %s", c.Name, a.Reason, a.Message)
	}
}

// setState records on the TCP which etcd serves it and whether it is ready, with an Event
// when that changes. Only the two annotations are patched.
func (r *Reconciler) setState(ctx context.Context, tcp *kamaji.TenantControlPlane, n specs.Names, reason, msg string) error {
	state := reason
	if msg != "" {
		state += ": " + errorLine(msg)
	}
	if tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] == state && tcp.Annotations[v1alpha2.AnnotationTenantEtcdCluster] == n.Cluster {
		return nil
	}
	patch := client.MergeFrom(tcp.DeepCopy())
	if tcp.Annotations == nil {
		tcp.Annotations = map[string]string{}
	}
	tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] = state
	tcp.Annotations[v1alpha2.AnnotationTenantEtcdCluster] = n.Cluster
	if err := r.Client.Patch(ctx, tcp, patch); err != nil {
		return err
	}
	switch reason {
	case v1alpha2.TenantStateReady:
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, v1alpha2.ReasonTenantEtcdReady, "Serve", "EtcdCluster %s is Available", n.Cluster)
	case v1alpha2.ReasonTenantEtcdNotReady, v1alpha2.ReasonDataStoreSwitchPending: // routine waits
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeNormal, reason, "Serve", "%s", msg)
	default:
		r.Recorder.Eventf(tcp, nil, corev1.EventTypeWarning, reason, "Serve", "%s", msg)
	}
	return nil
}

// apply server-side applies u as the controller's field manager; u becomes the stored object.
func (r *Reconciler) apply(ctx context.Context, u *unstructured.Unstructured) error {
	return r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// unstructuredOf converts a built object for apply, without the fields a built object cannot
// mean (status, a zero creationTimestamp).
func unstructuredOf(o any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	delete(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
