package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

var (
	dbSizeDesc        = desc("cluster_member_db_size_bytes", "Size of a member's backend database on disk, as etcd reported it to the operator's last pass.", "member")
	dbInUseDesc       = desc("cluster_member_db_size_in_use_bytes", "Part of a member's database that holds data; the rest is what a defragmentation gives back.", "member")
	quotaDesc         = desc("cluster_db_quota_bytes", "The members' --quota-backend-bytes: at this database size etcd raises NOSPACE and refuses writes.")
	alarmDesc         = desc("cluster_alarm_active", "1 while etcd has the alarm raised on any member of the cluster (NOSPACE, CORRUPT), else 0.", "alarm")
	leaderChangesDesc = desc("cluster_leader_changes_total", "Leader changes the operator saw between its passes since it started (changes in quick succession count once).")
	reconcileErrsDesc = desc("cluster_reconcile_errors_total", "Reconcile passes over the cluster that ended in an error, by reason: EtcdRetry (etcd asked to retry), the membership action that failed, or Reconcile.", "reason")
)

// Alarms are the alarm types etcd raises; each is always exported, 0 when not raised.
var Alarms = []string{"NOSPACE", "CORRUPT"}

// DefaultQuotaBytes is etcd's quota when --quota-backend-bytes is not given: 2 GiB.
const DefaultQuotaBytes = 2 << 30

// MemberDB is one member's database as etcd reported it.
type MemberDB struct {
	Name          string
	Size, InUse   int64
	ReportedQuota int64 // --quota-backend-bytes as etcd 3.6+ reports it; 0 from 3.5
}

// Observation is what one pass of the cluster controller learned from etcd.
type Observation struct {
	Members []MemberDB
	Leader  uint64
	Alarms  []string
}

// Observations keeps, per cluster, the latest Observation, the leader changes seen and the
// reconcile errors; the cluster controller writes it and the Collector reads it at each scrape.
type Observations struct {
	mu       sync.Mutex
	clusters map[client.ObjectKey]*observed
}

type observed struct {
	last          Observation
	leader        uint64 // the last leader seen, kept across passes without one
	leaderChanges float64
	errors        map[string]float64
}

// Observed is the process's store: the registered Collector reads it, the cluster controller
// writes it (one registry per process, so one store).
var Observed = NewObservations()

// NewObservations is an empty store.
func NewObservations() *Observations {
	return &Observations{clusters: map[client.ObjectKey]*observed{}}
}

func (o *Observations) get(k client.ObjectKey) *observed {
	c := o.clusters[k]
	if c == nil {
		c = &observed{errors: map[string]float64{}}
		o.clusters[k] = c
	}
	return c
}

// Record stores a pass's observation and counts a leader change.
func (o *Observations) Record(k client.ObjectKey, ob Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.get(k)
	if ob.Leader != 0 {
		if c.leader != 0 && c.leader != ob.Leader {
			c.leaderChanges++
		}
		c.leader = ob.Leader
	}
	c.last = ob
}

// ReconcileError counts a pass that ended in an error.
func (o *Observations) ReconcileError(k client.ObjectKey, reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.get(k).errors[reason]++
}

// Forget drops a deleted cluster: its series go with it.
func (o *Observations) Forget(k client.ObjectKey) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.clusters, k)
}

// prune keeps only the clusters still in the cache (a deletion the controller missed).
func (o *Observations) prune(live map[client.ObjectKey]bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.clusters {
		if !live[k] {
			delete(o.clusters, k)
		}
	}
}

// collect emits a cluster's observed series. The quota is the members' reported one, else the
// spec's, else etcd's default.
func (o *Observations) collect(ch chan<- prometheus.Metric, ec *v1alpha2.EtcdCluster) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.clusters[client.ObjectKey{Namespace: ec.Namespace, Name: ec.Name}]
	if c == nil {
		return
	}
	l := []string{ec.Namespace, ec.Name}
	quota := int64(0)
	for _, m := range c.last.Members {
		ch <- prometheus.MustNewConstMetric(dbSizeDesc, prometheus.GaugeValue, float64(m.Size), append(l, m.Name)...)
		ch <- prometheus.MustNewConstMetric(dbInUseDesc, prometheus.GaugeValue, float64(m.InUse), append(l, m.Name)...)
		quota = max(quota, m.ReportedQuota)
	}
	if quota == 0 {
		quota = specQuota(ec)
	}
	ch <- prometheus.MustNewConstMetric(quotaDesc, prometheus.GaugeValue, float64(quota), l...)
	for _, a := range Alarms {
		ch <- prometheus.MustNewConstMetric(alarmDesc, prometheus.GaugeValue, boolean(slices.Contains(c.last.Alarms, a)), append(l, a)...)
	}
	ch <- prometheus.MustNewConstMetric(leaderChangesDesc, prometheus.CounterValue, c.leaderChanges, l...)
	for reason, n := range c.errors {
		ch <- prometheus.MustNewConstMetric(reconcileErrsDesc, prometheus.CounterValue, n, append(l, reason)...)
	}
}

func specQuota(ec *v1alpha2.EtcdCluster) int64 {
	if o := ec.Spec.Options; o != nil && o.QuotaBackendBytes != nil && *o.QuotaBackendBytes > 0 {
		return *o.QuotaBackendBytes
	}
	return DefaultQuotaBytes
}
