package etcdcluster

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdrestores,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdclusters,verbs=update;patch

// standAside: an EtcdRestore holds the cluster (v1alpha2.AnnotationRestoring) while it replaces
// its members, and the cluster controller changes nothing meanwhile. A holder that is gone or
// finished without handing the cluster back is released, so a cluster is never stuck.
func (r *Reconciler) standAside(ctx context.Context, c *v1alpha2.EtcdCluster, holder string) (bool, error) {
	er := &v1alpha2.EtcdRestore{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: holder}, er)
	if err != nil && !apierrors.IsNotFound(err) {
		return true, err
	}
	if err == nil && er.Status.Phase != v1alpha2.RestoreComplete && er.Status.Phase != v1alpha2.RestoreFailed {
		return true, nil
	}
	patch := client.MergeFrom(c.DeepCopy())
	delete(c.Annotations, v1alpha2.AnnotationRestoring)
	if err := r.Client.Patch(ctx, c, patch); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	r.event(c, corev1.EventTypeWarning, "RestoreReleased", "Restore",
		"EtcdRestore %s is gone or over but still held the cluster; the operator manages it again", holder)
	return true, nil // the annotation's change wakes a new pass
}
