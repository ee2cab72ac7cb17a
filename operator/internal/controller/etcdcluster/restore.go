package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdsnapshots,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch

// restoreSourceInvalid: spec.bootstrap.restore cannot be read yet; the seed is not created.
type restoreSourceInvalid struct{ msg string }

func (e restoreSourceInvalid) Error() string { return e.msg }

// seedRestore resolves what a new cluster's seed restores from (nil: an empty cluster). A
// source that cannot be read yet (an EtcdSnapshot not Complete, a missing Secret, key or
// PVC) is a restoreSourceInvalid: the seed waits, and is never created empty instead.
func (r *Reconciler) seedRestore(ctx context.Context, c *v1alpha2.EtcdCluster) (*v1alpha2.MemberRestore, error) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return nil, nil
	}
	src := c.Spec.Bootstrap.Restore.Source
	var snap *v1alpha2.EtcdSnapshot
	if ref := src.SnapshotRef; ref != nil {
		snap = &v1alpha2.EtcdSnapshot{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, snap)
		if apierrors.IsNotFound(err) {
			return nil, restoreSourceInvalid{fmt.Sprintf("EtcdSnapshot %s does not exist", ref.Name)}
		}
		if err != nil {
			return nil, err
		}
		if snap.Status.Phase != v1alpha2.SnapshotComplete {
			return nil, restoreSourceInvalid{fmt.Sprintf("EtcdSnapshot %s is %s, not Complete", ref.Name, phaseOf(snap))}
		}
	}
	restore, err := resources.MemberRestoreOf(src, snap)
	if err != nil {
		return nil, restoreSourceInvalid{err.Error()}
	}
	if err := r.checkRestoreSource(ctx, c.Namespace, restore.Source); err != nil {
		return nil, err
	}
	return restore, nil
}

// checkRestoreSource makes sure what the seed's restore mounts and reads exists, so that a
// typo is a condition that names it, not a Pod stuck creating its container.
func (r *Reconciler) checkRestoreSource(ctx context.Context, ns string, src v1alpha2.RestoreSource) error {
	err := snapshot.Check(ctx, r.Client, r.TLS, ns, src.S3, src.PVC, src.Encryption, snapshot.KeysToRead)
	var unusable *snapshot.Unusable
	if errors.As(err, &unusable) {
		return restoreSourceInvalid{unusable.Message}
	}
	return err
}

// restoreProblem reports a restore source that cannot be read: Degraded, one Event.
func (r *Reconciler) restoreProblem(st *clusterState, e restoreSourceInvalid) {
	c := cond(v1alpha2.ConditionDegraded, true, v1alpha2.ReasonRestoreSourceInvalid,
		"spec.bootstrap.restore: %s; the seed is created once it can be restored", e.msg)
	st.restoreWait = &c
	if st.memo.due(st.cluster, topicRestore, c.Reason+c.Message) {
		r.event(st.cluster, corev1.EventTypeWarning, c.Reason, "Bootstrap", "%s", c.Message)
	}
}

func phaseOf(s *v1alpha2.EtcdSnapshot) string {
	if s.Status.Phase == "" {
		return string(v1alpha2.SnapshotPending)
	}
	return string(s.Status.Phase)
}
