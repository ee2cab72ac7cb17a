package etcdmember

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// finalize removes a deleted member from etcd, then lets it go. When the whole cluster is being
// deleted, etcd is left alone: every member goes, and waiting for quorum would deadlock.
func (r *Reconciler) finalize(ctx context.Context, m *v1alpha2.EtcdMember) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(m, v1alpha2.MemberCleanupFinalizer) {
		return reconcile.Result{}, nil
	}
	cluster, err := r.parentCluster(ctx, m)
	if err != nil {
		return reconcile.Result{}, err
	}
	// A cluster being rolled back is replaced whole, and one being adopted is not the
	// operator's yet: etcd is left as it is.
	if cluster != nil && cluster.Annotations[v1alpha2.AnnotationRestoring] == "" && !cluster.Adopting() {
		done, err := r.removeFromEtcd(ctx, m, cluster)
		if err != nil && etcd.IsRetryable(err) {
			d := r.retries().Next(string(m.UID))
			// Routine during a scale-down (etcd refuses reconfiguration for seconds after a
			// peer connects): debug, not info.
			log.FromContext(ctx).V(1).Info("etcd refused the removal for now; retrying", "after", d, "reason", err.Error())
			return reconcile.Result{RequeueAfter: d}, nil
		}
		if err != nil || !done {
			r.event(m, corev1.EventTypeWarning, "MemberRemoveFailed", "RemoveMember", "removing member from etcd: %v", err)
			return reconcile.Result{}, err
		}
	}
	r.retries().Reset(string(m.UID))
	r.warned.Delete(m.UID)
	patch := client.MergeFrom(m.DeepCopy())
	controllerutil.RemoveFinalizer(m, v1alpha2.MemberCleanupFinalizer)
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, m, patch))
}

// removeFromEtcd calls MemberRemove for m unless it is not (or no longer) in etcd, or it is the
// last voter, which etcd cannot remove.
func (r *Reconciler) removeFromEtcd(ctx context.Context, m *v1alpha2.EtcdMember, c *v1alpha2.EtcdCluster) (bool, error) {
	members, err := topology.ListMembers(ctx, r.Client, m.Namespace, c.Name, c.UID)
	if err != nil {
		return false, err
	}
	// The same access as the cluster controller's: both share one pooled client.
	cli, err := r.Etcd.Dial(ctx, etcdaccess.Request{Cluster: c, Members: members})
	if errors.Is(err, etcdaccess.ErrNoEndpoints) {
		return true, nil // nothing was ever registered
	}
	if err != nil {
		return false, err
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		return false, err
	}
	found, ok := topology.FindInList(m, list.Members)
	if !ok {
		return true, nil
	}
	if lastVoter(found, list.Members) {
		return true, nil
	}
	if err := cli.MemberRemove(ctx, found.ID); err != nil && !etcd.IsMemberNotFound(err) {
		return false, fmt.Errorf("MemberRemove %s: %w", etcd.FormatID(found.ID), err)
	}
	crashpoint.Hit(crashpoint.EtcdMemberRemoved)
	r.event(m, corev1.EventTypeNormal, "MemberRemoved", "RemoveMember", "removed etcd member %s", etcd.FormatID(found.ID))
	return true, nil
}

func lastVoter(m etcd.Member, list []etcd.Member) bool {
	if m.IsLearner {
		return false
	}
	for _, o := range list {
		if o.ID != m.ID && !o.IsLearner {
			return false
		}
	}
	return true
}
