package etcdrestore

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// admit checks a Pending rollback: the cluster, its turn, the source (resolved, then read
// through and checked), and starts its safety snapshot. Nothing of the cluster is touched
// before the source is verified and the safety snapshot is Complete.
func (r *Reconciler) admit(ctx context.Context, er *v1alpha2.EtcdRestore) (reconcile.Result, error) {
	c, err := r.cluster(ctx, er)
	if err != nil || c == nil {
		if err == nil {
			err = r.fail(ctx, er, v1alpha2.ReasonClusterNotFound, "EtcdCluster %s does not exist", er.Spec.ClusterRef.Name)
		}
		return reconcile.Result{}, err
	}
	if other, err := r.otherInFlight(ctx, er); err != nil || other != "" {
		if err == nil {
			err = r.setPhase(ctx, er, v1alpha2.RestorePending, v1alpha2.ReasonRestoreBusy, fmt.Sprintf("waiting for EtcdRestore %s to finish", other))
		}
		return reconcile.Result{RequeueAfter: waitRecheck}, err
	}
	mr, snap, wait, err := r.resolve(ctx, er)
	if err != nil {
		return reconcile.Result{}, err
	}
	if wait != "" {
		return reconcile.Result{RequeueAfter: waitRecheck}, r.setPhase(ctx, er, v1alpha2.RestorePending, v1alpha2.ReasonSourceNotReady, wait)
	}
	if newer := newerThanCluster(snap, c); newer != "" {
		return reconcile.Result{}, r.fail(ctx, er, v1alpha2.ReasonSnapshotNewerThanTarget, "%s; the cluster was not touched", newer)
	}
	if ok, err := r.sourceVerified(ctx, er, c, mr); err != nil || !ok {
		return reconcile.Result{}, err
	}
	if _, skip := er.Annotations[v1alpha2.AnnotationQuorumLoss]; skip {
		return reconcile.Result{}, r.setPhase(ctx, er, v1alpha2.RestoreRestoring, v1alpha2.ReasonRestoring,
			"the cluster lost quorum for good: no safety snapshot can be taken")
	}
	safety, err := r.safetySnapshot(ctx, er)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.Client.Create(ctx, safety); client.IgnoreAlreadyExists(err) != nil {
		return reconcile.Result{}, err
	}
	crashpoint.Hit(crashpoint.SafetySnapshotCreated)
	patch := client.MergeFrom(er.DeepCopy())
	er.Status.SafetySnapshot = safety.Name
	if err := r.Client.Status().Patch(ctx, er, patch); err != nil {
		return reconcile.Result{}, err
	}
	r.event(er, "Normal", v1alpha2.ReasonSafetySnapshot, "Restore", "taking safety snapshot %s before rolling %s back", safety.Name, c.Name)
	return reconcile.Result{}, r.setPhase(ctx, er, v1alpha2.RestoreSafetySnapshot, v1alpha2.ReasonSafetySnapshot,
		fmt.Sprintf("taking safety snapshot %s", safety.Name))
}

// awaitSafety waits for the safety snapshot; without it nothing is rolled back.
func (r *Reconciler) awaitSafety(ctx context.Context, er *v1alpha2.EtcdRestore) (reconcile.Result, error) {
	s := &v1alpha2.EtcdSnapshot{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: er.Status.SafetySnapshot}, s)
	switch {
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, r.fail(ctx, er, v1alpha2.ReasonSafetyFailed, "safety snapshot %s is gone; the cluster was not touched", er.Status.SafetySnapshot)
	case err != nil:
		return reconcile.Result{}, err
	case s.Status.Phase == v1alpha2.SnapshotFailed:
		return reconcile.Result{}, r.fail(ctx, er, v1alpha2.ReasonSafetyFailed, "safety snapshot %s failed (%s); the cluster was not touched",
			s.Name, readyMessage(s.Status.Conditions))
	case s.Status.Phase != v1alpha2.SnapshotComplete:
		return reconcile.Result{}, nil // the snapshot's watch wakes us
	}
	return reconcile.Result{}, r.setPhase(ctx, er, v1alpha2.RestoreRestoring, v1alpha2.ReasonRestoring,
		fmt.Sprintf("safety snapshot %s is Complete (revision %d); rolling back", s.Name, s.Status.Revision))
}

// resolve is the member restore the source stands for, with the EtcdSnapshot it names (nil for
// a raw location), or why it cannot be read yet.
func (r *Reconciler) resolve(ctx context.Context, er *v1alpha2.EtcdRestore) (*v1alpha2.MemberRestore, *v1alpha2.EtcdSnapshot, string, error) {
	var snap *v1alpha2.EtcdSnapshot
	if ref := er.Spec.Source.SnapshotRef; ref != nil {
		snap = &v1alpha2.EtcdSnapshot{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: ref.Name}, snap)
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Sprintf("EtcdSnapshot %s does not exist", ref.Name), nil
		}
		if err != nil {
			return nil, nil, "", err
		}
	}
	mr, err := resources.MemberRestoreOf(er.Spec.Source, snap)
	if err != nil {
		return nil, nil, err.Error(), nil
	}
	if why, err := checkSource(ctx, r.Client, r.TLS, er.Namespace, mr.Source); err != nil || why != "" {
		return nil, nil, why, err
	}
	mr.BumpRevision = v1alpha2.RollbackRevisionBump
	return mr, snap, "", nil
}

// safetySnapshot is the snapshot taken before the rollback: to spec.safetySnapshot, or beside
// the source snapshot. It has no owner: deleting the EtcdRestore keeps it.
func (r *Reconciler) safetySnapshot(ctx context.Context, er *v1alpha2.EtcdRestore) (*v1alpha2.EtcdSnapshot, error) {
	var dest v1alpha2.SnapshotLocation
	if er.Spec.SafetySnapshot != nil {
		dest = er.Spec.SafetySnapshot.Destination
	} else {
		src := &v1alpha2.EtcdSnapshot{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: er.Spec.Source.SnapshotRef.Name}, src); err != nil {
			return nil, err
		}
		dest = src.Spec.Destination
	}
	return resources.SafetySnapshot(er, dest), nil
}

// otherInFlight names another rollback of the same cluster that goes first: one that has begun
// and not finished, or an unfinished one created earlier. Rollbacks of one cluster run one at a
// time, in the order they were asked for.
func (r *Reconciler) otherInFlight(ctx context.Context, er *v1alpha2.EtcdRestore) (string, error) {
	var list v1alpha2.EtcdRestoreList
	if err := r.Client.List(ctx, &list, client.InNamespace(er.Namespace)); err != nil {
		return "", err
	}
	for i := range list.Items {
		if o := &list.Items[i]; goesFirst(o, er) {
			return o.Name, nil
		}
	}
	return "", nil
}

// goesFirst: o, another rollback of er's cluster, must finish before er begins. Pure.
func goesFirst(o, er *v1alpha2.EtcdRestore) bool {
	if o.Name == er.Name || o.Spec.ClusterRef.Name != er.Spec.ClusterRef.Name || final(o) || !o.DeletionTimestamp.IsZero() {
		return false
	}
	if o.Status.Phase != "" && o.Status.Phase != v1alpha2.RestorePending {
		return true // it has begun
	}
	if !o.CreationTimestamp.Equal(&er.CreationTimestamp) {
		return o.CreationTimestamp.Before(&er.CreationTimestamp)
	}
	return o.Name < er.Name
}

func (r *Reconciler) cluster(ctx context.Context, er *v1alpha2.EtcdRestore) (*v1alpha2.EtcdCluster, error) {
	c := &v1alpha2.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: er.Namespace, Name: er.Spec.ClusterRef.Name}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return c, err
}

func readyMessage(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == v1alpha2.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return "no reason given"
}

// checkSource says why a resolved source cannot be read ("" when it may be).
func checkSource(ctx context.Context, c client.Reader, secrets snapshot.SecretReader, ns string, src v1alpha2.RestoreSource) (string, error) {
	err := snapshot.Check(ctx, c, secrets, ns, src.S3, src.PVC, src.Encryption, snapshot.KeysToRead)
	var unusable *snapshot.Unusable
	if errors.As(err, &unusable) {
		return unusable.Message, nil
	}
	return "", err
}

// newerThanCluster says why snapshot s cannot be restored into c's etcd: it was taken from an
// etcd of a later minor, whose data etcd does not downgrade ("" when it may be, or unknown: a
// raw source is checked by the seed's restore). Pure.
func newerThanCluster(s *v1alpha2.EtcdSnapshot, c *v1alpha2.EtcdCluster) string {
	if s == nil || s.Status.EtcdVersion == "" {
		return ""
	}
	from, err1 := version.ParseGeneric(s.Status.EtcdVersion)
	to, err2 := version.ParseGeneric(c.Spec.Version)
	if err1 != nil || err2 != nil || from.Major() != to.Major() || from.Minor() <= to.Minor() {
		return ""
	}
	return fmt.Sprintf("EtcdSnapshot %s was taken from etcd %s, newer than the cluster's etcd %s: etcd does not downgrade data",
		s.Name, s.Status.EtcdVersion, c.Spec.Version)
}
