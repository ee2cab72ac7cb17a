package etcdcluster

import (
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/metrics"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Reasons of etcd_operator_cluster_reconcile_errors_total besides the failed membership action.
const errorReasonEtcdRetry = "EtcdRetry"

// recordMetrics hands what the pass saw of etcd, and how it ended, to the metrics store.
func (r *Reconciler) recordMetrics(st *clusterState) {
	if r.Observations == nil {
		return
	}
	k := client.ObjectKeyFromObject(st.cluster)
	switch {
	case st.err != nil && etcd.IsRetryable(st.err):
		r.Observations.ReconcileError(k, errorReasonEtcdRetry)
	case st.err != nil:
		r.Observations.ReconcileError(k, failedStep(st))
	}
	if st.etcd.list == nil {
		return // etcd was not read this pass: the last observation stands
	}
	ob := metrics.Observation{Leader: st.etcd.leader, Alarms: alarmsOf(st.etcd.answered)}
	for i := range st.members {
		m := &st.members[i]
		found, ok := topology.FindInList(m, st.etcd.list.Members)
		if !ok {
			continue
		}
		if s, ok := st.etcd.answered[found.ID]; ok {
			ob.Members = append(ob.Members, metrics.MemberDB{Name: m.Name, Size: s.DBSize, InUse: s.DBSizeInUse, ReportedQuota: s.DBQuota})
		}
	}
	r.Observations.Record(k, ob)
}

// forgetMetrics drops a deleted cluster's observations.
func (r *Reconciler) forgetMetrics(k client.ObjectKey) {
	if r.Observations != nil {
		r.Observations.Forget(k)
	}
}
