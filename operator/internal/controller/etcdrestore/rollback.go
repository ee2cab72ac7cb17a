package etcdrestore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// restore rolls the cluster back, one resumable step per pass: take the cluster over, remove
// its members, start a fresh incarnation from a restored seed, hand the cluster back, and wait
// for it to be Available again.
func (r *Reconciler) restore(ctx context.Context, er *v1alpha2.EtcdRestore) (reconcile.Result, error) {
	c, err := r.cluster(ctx, er)
	if err != nil || c == nil {
		if err == nil {
			err = r.fail(ctx, er, v1alpha2.ReasonClusterNotFound, "EtcdCluster %s is gone", er.Spec.ClusterRef.Name)
		}
		return reconcile.Result{}, err
	}
	members, err := topology.ListMembers(ctx, r.Client, c.Namespace, c.Name, c.UID)
	if err != nil {
		return reconcile.Result{}, err
	}
	if seed := seedOf(er, members); seed != nil {
		return r.handBack(ctx, er, c, seed)
	}
	switch holder := c.Annotations[v1alpha2.AnnotationRestoring]; holder {
	case er.Name:
	case "":
		return reconcile.Result{}, r.takeOver(ctx, er, c)
	default:
		return reconcile.Result{RequeueAfter: waitRecheck}, nil // another rollback holds it (admission let both in)
	}
	if left, err := r.removeMembers(ctx, members); err != nil || left > 0 {
		return reconcile.Result{}, err // the members' watch wakes us as they go
	}
	mr, _, wait, err := r.resolve(ctx, er)
	if err != nil || wait != "" {
		if wait != "" {
			r.setCondition(er, v1alpha2.ReasonSourceNotReady, wait)
		}
		return reconcile.Result{RequeueAfter: waitRecheck}, err
	}
	return reconcile.Result{}, r.startIncarnation(ctx, er, c, mr)
}

// takeOver stops the cluster controller for this cluster and tells its users so.
func (r *Reconciler) takeOver(ctx context.Context, er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster) error {
	if !controllerutil.ContainsFinalizer(er, v1alpha2.RollbackHandBackFinalizer) {
		erPatch := client.MergeFrom(er.DeepCopy())
		controllerutil.AddFinalizer(er, v1alpha2.RollbackHandBackFinalizer)
		if err := r.Client.Patch(ctx, er, erPatch); err != nil {
			return err
		}
	}
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[v1alpha2.AnnotationRestoring] = er.Name
	if err := r.Client.Patch(ctx, c, patch); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.TakenOver)
	r.event(c, corev1.EventTypeWarning, v1alpha2.ReasonRestoring, "Restore",
		"rolling back to %s (EtcdRestore %s): every member is replaced by one restored from it; clients reconnect to the same endpoints",
		sourceName(er), er.Name)
	return nil
}

// removeMembers deletes the cluster's members; their finalizers leave etcd alone while the
// cluster is being restored, and their PVCs go with them. It returns how many are left.
func (r *Reconciler) removeMembers(ctx context.Context, members []v1alpha2.EtcdMember) (int, error) {
	deleted := false
	for i := range members {
		m := &members[i]
		if m.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, m); client.IgnoreNotFound(err) != nil {
				return 0, err
			}
			deleted = true
		}
	}
	if deleted {
		crashpoint.Hit(crashpoint.MembersDeleted)
	}
	return len(members), nil
}

// startIncarnation resets what the status says about the old etcd cluster and creates the
// seed that restores the snapshot. The new incarnation gets its own cluster token; auth is
// observed again (the snapshot may have been taken with or without it).
func (r *Reconciler) startIncarnation(ctx context.Context, er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster, mr *v1alpha2.MemberRestore) error {
	token := fmt.Sprintf("%s-%s-%s-%s", c.Namespace, c.Name, c.UID, shortUID(er))
	if c.Status.ClusterToken != token {
		patch := client.MergeFrom(c.DeepCopy())
		ResetStatus(&c.Status, token, fmt.Sprintf("rolling back to %s (EtcdRestore %s)", sourceName(er), er.Name), c.Generation)
		if err := r.Client.Status().Patch(ctx, c, patch); err != nil {
			return err
		}
	}
	seed := resources.NewMember(c, token, true, mr, resources.TemplateInputs{ClientTLSServing: c.Status.ClientTLSServing})
	seed.Labels[v1alpha2.LabelRestore] = er.Name
	if err := r.Client.Create(ctx, seed); err != nil {
		return err
	}
	crashpoint.Hit(crashpoint.RestoreSeedCreated)
	r.event(er, corev1.EventTypeNormal, v1alpha2.ReasonRestoring, "Restore", "created seed %s restoring %s", seed.Name, sourceName(er))
	return nil
}

// ResetStatus forgets the old etcd cluster: no ID, no members, auth not latched; the
// conditions say a rollback is in progress. Pure.
func ResetStatus(s *v1alpha2.EtcdClusterStatus, token, why string, gen int64) {
	s.ClusterID, s.ClusterToken, s.AuthEnabled = "", token, false
	s.Members, s.LeaderID, s.Rollout, s.ProgressDeadline = nil, "", nil, nil
	s.ReadyMembers, s.BrokenMembers = 0, 0
	for _, c := range []struct {
		t  string
		ok metav1.ConditionStatus
	}{{v1alpha2.ConditionAvailable, metav1.ConditionFalse}, {v1alpha2.ConditionProgressing, metav1.ConditionTrue},
		{v1alpha2.ConditionDegraded, metav1.ConditionFalse}} {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: c.t, Status: c.ok, Reason: v1alpha2.ReasonRestoring,
			Message: why, ObservedGeneration: gen})
	}
}

// handBack returns the cluster to its controller once the seed exists, then waits for it.
func (r *Reconciler) handBack(ctx context.Context, er *v1alpha2.EtcdRestore, c *v1alpha2.EtcdCluster, seed *v1alpha2.EtcdMember) (reconcile.Result, error) {
	if c.Annotations[v1alpha2.AnnotationRestoring] == er.Name {
		patch := client.MergeFrom(c.DeepCopy())
		delete(c.Annotations, v1alpha2.AnnotationRestoring)
		if err := r.Client.Patch(ctx, c, patch); err != nil {
			return reconcile.Result{}, err
		}
		crashpoint.Hit(crashpoint.HandedBack)
		return reconcile.Result{}, nil
	}
	reason, failed := seedFailure(seed)
	if _, refused := seed.Annotations[v1alpha2.AnnotationRestoreRefused]; refused && failed != "" {
		return reconcile.Result{}, r.fail(ctx, er, reason,
			"the new seed %s cannot restore %s (%s); the cluster holds no data now: %s", seed.Name, sourceName(er), failed, wayBack(er))
	}
	if failed != "" {
		r.setCondition(er, reason, failed)
		return reconcile.Result{RequeueAfter: waitRecheck}, client.IgnoreNotFound(r.Client.Status().Update(ctx, er))
	}
	if c.Status.ClusterID == "" || !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha2.ConditionAvailable) {
		return reconcile.Result{RequeueAfter: waitRecheck}, nil
	}
	revision, err := r.restoredRevision(ctx, seed)
	if err != nil {
		return reconcile.Result{}, err
	}
	patch := client.MergeFrom(er.DeepCopy())
	er.Status.Revision, er.Status.ClusterID = revision, c.Status.ClusterID
	if err := r.Client.Status().Patch(ctx, er, patch); err != nil {
		return reconcile.Result{}, err
	}
	msg := fmt.Sprintf("rolled back to %s: data at revision %d, served from revision %d on (etcd cluster %s)",
		sourceName(er), revision, revision+v1alpha2.RollbackRevisionBump, c.Status.ClusterID)
	r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonRolledBack, "Restore", "%s", msg)
	r.event(er, corev1.EventTypeNormal, v1alpha2.ReasonRolledBack, "Restore", "%s", msg)
	return reconcile.Result{}, r.setPhase(ctx, er, v1alpha2.RestoreComplete, v1alpha2.ReasonRolledBack, msg)
}

// restoredRevision is the revision the seed's restore agent reported (0 when unknown).
func (r *Reconciler) restoredRevision(ctx context.Context, seed *v1alpha2.EtcdMember) (int64, error) {
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: seed.Namespace, Name: seed.Name}, pod)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if t := cs.State.Terminated; cs.Name == v1alpha2.RestoreContainer && t != nil {
			var res snapshot.RestoreResult
			if json.Unmarshal([]byte(strings.TrimSpace(t.Message)), &res) == nil {
				return res.Revision, nil
			}
		}
	}
	return 0, nil
}

func seedOf(er *v1alpha2.EtcdRestore, members []v1alpha2.EtcdMember) *v1alpha2.EtcdMember {
	for i := range members {
		if members[i].Labels[v1alpha2.LabelRestore] == er.Name && members[i].DeletionTimestamp.IsZero() {
			return &members[i]
		}
	}
	return nil
}

// seedFailure is the seed's restore failure its member controller reports, if any: its
// reason and message.
func seedFailure(seed *v1alpha2.EtcdMember) (string, string) {
	if c := meta.FindStatusCondition(seed.Status.Conditions, v1alpha2.ConditionReady); c != nil && slices.Contains(v1alpha2.RestoreFailureReasons, c.Reason) {
		return c.Reason, c.Message
	}
	return "", ""
}

func (r *Reconciler) setCondition(er *v1alpha2.EtcdRestore, reason, msg string) {
	meta.SetStatusCondition(&er.Status.Conditions, metav1.Condition{Type: v1alpha2.ConditionReady, Status: metav1.ConditionFalse,
		Reason: reason, Message: msg, ObservedGeneration: er.Generation})
}

func sourceName(er *v1alpha2.EtcdRestore) string {
	switch s := er.Spec.Source; {
	case s.SnapshotRef != nil:
		return "EtcdSnapshot " + s.SnapshotRef.Name
	case s.S3 != nil:
		return fmt.Sprintf("s3://%s/%s", s.S3.Bucket, s.S3.Key)
	case s.PVC != nil:
		return fmt.Sprintf("pvc://%s/%s", s.PVC.ClaimName, s.PVC.SubPath)
	}
	return "the snapshot"
}

func shortUID(er *v1alpha2.EtcdRestore) string {
	u := strings.ReplaceAll(string(er.UID), "-", "")
	if len(u) > 8 {
		u = u[:8]
	}
	return u
}

// wayBack says how to get the data of before the rollback back.
func wayBack(er *v1alpha2.EtcdRestore) string {
	if er.Status.SafetySnapshot == "" {
		return "restore another snapshot into the cluster with a new EtcdCluster (spec.bootstrap.restore)"
	}
	return fmt.Sprintf("safety snapshot %s holds the data of before the rollback: restore it with spec.bootstrap.restore.source.snapshotRef into a new EtcdCluster", er.Status.SafetySnapshot)
}
