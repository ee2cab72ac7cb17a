package etcdcluster

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// +kubebuilder:rbac:groups=etcd-operator.cozystack.io,resources=etcdrestores,verbs=get;list;watch;create

// rebuildFromSurvivor recovers a cluster whose majority lost its data: the survivor with the
// most of the log (the highest raft index its etcd reports) restarts with --force-new-cluster,
// alone; the members without data are removed (their finalizers find them gone from the new
// one-member cluster). Writes only the lost members had are lost; the Event says from where.
func (r *Reconciler) rebuildFromSurvivor(ctx context.Context, st *clusterState) error {
	survivor, index := r.bestSurvivor(ctx, st)
	if survivor == nil {
		st.action = membership.Action{Kind: membership.Wait, Reason: membership.ReasonQuorumLostForGood,
			Message: "no surviving member answers to be rebuilt from"}
		return nil
	}
	patch := client.MergeFrom(survivor.DeepCopy())
	survivor.Spec.ForceNewCluster = true
	if err := r.Client.Patch(ctx, survivor, patch); err != nil {
		return err
	}
	// --force-new-cluster acts at start: the member controller restarts the survivor's Pod with it
	// (a tmpfs survivor's etcd container only, in its Pod, which holds the data).
	var lost []string
	for _, m := range st.obs.Members {
		if !strings.HasPrefix(m.Broken, membership.DataLostPrefix) {
			continue
		}
		lost = append(lost, m.Name)
		if !m.Deleting { // one being replaced already goes
			if err := r.Client.Delete(ctx, st.memberByName(m.Name)); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	r.event(st.cluster, corev1.EventTypeWarning, v1alpha2.ReasonQuorumRecovered, "RecoverQuorum",
		"quorum lost for good (%s lost their data): rebuilding from %s (committed raft index %d); writes it never received are lost",
		strings.Join(lost, ", "), survivor.Name, index)
	return nil
}

// bestSurvivor is the surviving voter that has committed the most of the log. Without quorum
// etcd's API answers nothing (not even a login), so each survivor's metrics say it. A lone
// survivor is the one, whatever its metrics say.
func (r *Reconciler) bestSurvivor(ctx context.Context, st *clusterState) (*v1alpha2.EtcdMember, uint64) {
	var survivors []*v1alpha2.EtcdMember
	for _, om := range st.obs.Members {
		if om.Voter && om.Broken == "" && !om.Deleting && !om.Dormant {
			survivors = append(survivors, st.memberByName(om.Name))
		}
	}
	var best *v1alpha2.EtcdMember
	var bestIndex uint64
	for _, m := range survivors {
		index, err := r.Etcd.CommittedIndex(ctx, m)
		if err != nil && len(survivors) > 1 {
			continue
		}
		if best == nil || index > bestIndex {
			best, bestIndex = m, index
		}
	}
	return best, bestIndex
}

// endForceNewCluster: the survivor formed its one-member cluster; later starts must not force
// one again. Clearing it flips the survivor Pod's annotation that etcd reads at each container
// start to "false"; the Pod's revision does not change, so nothing restarts.
func (r *Reconciler) endForceNewCluster(ctx context.Context, st *clusterState, m *v1alpha2.EtcdMember) error {
	if m == nil {
		return errMissing(m)
	}
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.ForceNewCluster = false
	if err := r.Client.Patch(ctx, m, patch); err != nil {
		return err
	}
	r.event(st.cluster, corev1.EventTypeNormal, v1alpha2.ReasonQuorumRecovered, "RecoverQuorum", "%s", st.action.Message)
	return nil
}

// restoreLatest recovers a cluster whose majority lost its data from its newest Complete
// snapshot, through an EtcdRestore the cluster owns (no safety snapshot: there is no quorum to
// take one from).
func (r *Reconciler) restoreLatest(ctx context.Context, st *clusterState) error {
	c := st.cluster
	var list v1alpha2.EtcdSnapshotList
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return err
	}
	latest := latestSnapshotOf(list.Items, c.Name, st.status.ClusterID)
	if latest == nil {
		st.action = membership.Action{Kind: membership.Wait, Reason: membership.ReasonQuorumLostForGood,
			Message: st.action.Message + "; but the cluster has no Complete EtcdSnapshot of its etcd cluster " + st.status.ClusterID + " to restore"}
		return nil
	}
	er := resources.QuorumLossRestore(c, st.status.ClusterID, latest.Name)
	if err := r.Client.Create(ctx, er); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	r.event(c, corev1.EventTypeWarning, v1alpha2.ReasonQuorumRecovered, "RecoverQuorum",
		"%s: restoring EtcdSnapshot %s (revision %d, taken %s) through EtcdRestore %s; writes after it are lost",
		st.action.Message, latest.Name, latest.Status.Revision, latest.Status.CompletionTime.UTC().Format("2006-01-02T15:04:05Z"), er.Name)
	return nil
}

// latestSnapshotOf is the newest Complete snapshot of this very etcd cluster: taken of the
// EtcdCluster named cluster while it ran etcd cluster clusterID. A snapshot of an earlier
// incarnation (a same-named cluster deleted before, or the state a rollback left behind, such
// as its safety snapshot) would bring back data the user did away with. Pure.
func latestSnapshotOf(snaps []v1alpha2.EtcdSnapshot, cluster, clusterID string) *v1alpha2.EtcdSnapshot {
	var latest *v1alpha2.EtcdSnapshot
	for i := range snaps {
		s := &snaps[i]
		if s.Spec.ClusterRef.Name != cluster || s.Status.ClusterID != clusterID || clusterID == "" ||
			s.Status.Phase != v1alpha2.SnapshotComplete || s.Status.CompletionTime == nil || !s.DeletionTimestamp.IsZero() {
			continue
		}
		if latest == nil || s.Status.CompletionTime.After(latest.Status.CompletionTime.Time) {
			latest = s
		}
	}
	return latest
}
