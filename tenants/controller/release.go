package controller

import (
	"context"
	"strings"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// release handles what was made for a TCP that is gone (or was never bound and is no longer
// served): kept while Kamaji still lists a user of the DataStore; then kept for good under the
// Retain policy, or deleted — the DataStore first (Kamaji stops reaching for the etcd), then
// the EtcdCluster, then the PKI (deletePKI). Once both are gone or going, every pass deletes
// the PKI again: the EtcdCluster's deletion event brings one after its teardown.
func (r *Reconciler) release(ctx context.Context, n specs.Names) error {
	ds, err := ours(ctx, r.Client, &kamaji.DataStore{}, client.ObjectKey{Name: n.DataStore})
	if err != nil {
		return err
	}
	cluster, err := ours(ctx, r.Client, &v1alpha2.EtcdCluster{}, client.ObjectKey{Namespace: n.Namespace, Name: n.Cluster})
	if err != nil {
		return err
	}
	if ds == nil && cluster == nil {
		return r.deletePKI(ctx, n)
	}
	if ds != nil && ds.Status != nil && len(ds.Status.UsedBy) > 0 {
		// Kamaji still serves a control plane from it (its own cleanup of the TCP's keys, or
		// another TCP pointed at it): the status change that ends this wakes the next pass.
		r.Recorder.Eventf(ds, nil, corev1.EventTypeNormal, v1alpha2.ReasonDataStoreInUse, "Release",
			"TenantControlPlane %s/%s is gone; DataStore kept while Kamaji lists it used by %s", n.Namespace, n.TCP, strings.Join(ds.Status.UsedBy, ", "))
		return nil
	}
	if cluster != nil && cluster.Annotations[v1alpha2.AnnotationTenantDeletionPolicy] == v1alpha2.TenantDeletionRetain {
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, v1alpha2.ReasonTenantEtcdRetained, "Release",
			"TenantControlPlane %s is gone; EtcdCluster and DataStore %s retained (deletion policy Retain); a TenantControlPlane of the same name gets them back", n.TCP, n.DataStore)
		return nil
	}
	if ds != nil {
		if err := r.Client.Delete(ctx, ds); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if cluster != nil {
		if err := r.Client.Delete(ctx, cluster); client.IgnoreNotFound(err) != nil {
			return err
		}
		r.Recorder.Eventf(cluster, nil, corev1.EventTypeNormal, v1alpha2.ReasonTenantEtcdDeleted, "Release",
			"TenantControlPlane %s is gone; deleted EtcdCluster %s and DataStore %s", n.TCP, n.Cluster, n.DataStore)
	}
	return r.deletePKI(ctx, n)
}

// deletePKI deletes the tenant's Certificates, then their Secrets. The Certificates are owned by
// the EtcdCluster, but its garbage collection waits for the cluster's teardown, and meanwhile
// cert-manager would issue a deleted Secret again (a new CA key, then orphaned): so they go
// first, explicitly. cert-manager does not own the Secrets it writes, so those go here too.
func (r *Reconciler) deletePKI(ctx context.Context, n specs.Names) error {
	in, labels := client.InNamespace(n.Namespace), client.MatchingLabels(n.Labels())
	if err := r.Client.DeleteAllOf(ctx, &cmapi.Certificate{}, in, labels); err != nil {
		return err
	}
	return r.Client.DeleteAllOf(ctx, &corev1.Secret{}, in, labels)
}

// ours gets the object at key when the tenant controller made it; nil when absent or someone else's.
func ours[T client.Object](ctx context.Context, c client.Reader, obj T, key client.ObjectKey) (T, error) {
	var none T
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return none, nil
	}
	if err != nil {
		return none, err
	}
	if obj.GetLabels()[v1alpha2.LabelAppManagedBy] != v1alpha2.ManagedByTenants || !obj.GetDeletionTimestamp().IsZero() {
		return none, nil
	}
	return obj, nil
}
