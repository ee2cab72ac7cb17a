package etcdcluster

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/membership"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// decide turns the observation into membership.Observed and asks for the next action.
func (r *Reconciler) decide(ctx context.Context, st *clusterState) error {
	st.obs = observed(st, r.nodeStates(ctx), graces{tmpfs: r.NodeGracePeriod, pvc: r.PVCNodeGracePeriod}, r.volumeFollows(ctx), time.Now())
	st.action = membership.Decide(st.obs)
	st.decided = true
	return nil
}

// observed is the pure translation of a pass's observation for the decision.
func observed(st *clusterState, node nodeStates, g graces, follows func(m *v1alpha2.EtcdMember, node string) bool, now time.Time) membership.Observed {
	o := membership.Observed{
		Desired:    resources.DesiredReplicas(st.cluster),
		Formed:     st.status.ClusterID != "",
		Reachable:  st.etcd.list != nil,
		QuorumLoss: membership.QuorumLossPolicy(st.cluster.Spec.QuorumLoss),
	}
	if st.etcd.list != nil {
		o.Listed = len(st.etcd.list.Members)
	}
	matched := map[uint64]bool{}
	for i := range st.members {
		m := &st.members[i]
		mm := membership.Member{
			Name: m.Name, Created: m.CreationTimestamp.Time, Seed: m.Spec.Bootstrap,
			Deleting: !m.DeletionTimestamp.IsZero(), Dormant: m.Spec.Dormant, Pending: m.Spec.InitialCluster == "",
			Ready: topology.MemberReady(m), Voter: m.Status.IsVoter, ForceNewCluster: m.Spec.ForceNewCluster,
			Broken: brokenReason(m, st.pods[m.Name], node, g, func(node string) bool { return follows(m, node) }, now),
		}
		if st.etcd.list != nil {
			if e, ok := topology.FindInList(m, st.etcd.list.Members); ok {
				_, healthy := st.etcd.statuses[e.ID]
				mm.InEtcd, mm.ID, mm.IsLearner, mm.IsLeader, mm.Healthy = true, e.ID, e.IsLearner, e.ID == st.etcd.leader, healthy
				matched[e.ID] = true
			}
		}
		o.Members = append(o.Members, mm)
	}
	if st.etcd.list != nil {
		for _, e := range st.etcd.list.Members {
			if !matched[e.ID] {
				_, healthy := st.etcd.statuses[e.ID]
				o.Strays = append(o.Strays, membership.Stray{ID: e.ID, IsLearner: e.IsLearner, Healthy: healthy})
			}
		}
	}
	return o
}

// nodeStates reads Nodes through the cache.
func (r *Reconciler) nodeStates(ctx context.Context) nodeStates {
	return func(name string) topology.NodeState {
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return topology.NodeState{}
		}
		return topology.StateOf(node)
	}
}

// volumeFollows reads a member's PVC and PV (only for a member on a node out of service): a
// volume that cannot be read says it cannot follow.
func (r *Reconciler) volumeFollows(ctx context.Context) func(*v1alpha2.EtcdMember, string) bool {
	return func(m *v1alpha2.EtcdMember, node string) bool {
		pv, err := topology.MemberVolume(ctx, r.Client, m)
		return err == nil && pv != nil && !topology.VolumePinned(pv, node)
	}
}

// memberByName finds a member of this pass.
func (st *clusterState) memberByName(name string) *v1alpha2.EtcdMember {
	for i := range st.members {
		if st.members[i].Name == name {
			return &st.members[i]
		}
	}
	return nil
}

// etcdClient is this pass's client; an action that needs etcd fails cleanly without one.
func (st *clusterState) etcdClient() (etcd.Client, error) {
	if st.etcd.client == nil {
		return nil, errNoEtcd
	}
	return st.etcd.client, nil
}
