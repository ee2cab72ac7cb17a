package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// observedOnly collects just the observed series of ec.
type observedOnly struct {
	o  *Observations
	ec *v1alpha2.EtcdCluster
}

func (c observedOnly) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }
func (c observedOnly) Collect(ch chan<- prometheus.Metric) { c.o.collect(ch, c.ec) }

func TestObservations(t *testing.T) {
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"}}
	k := client.ObjectKeyFromObject(ec)
	o := NewObservations()
	// Leaders 1, none, 1, 2, 3: two changes (a pass without a leader is not one).
	for _, leader := range []uint64{1, 0, 1, 2, 3} {
		o.Record(k, Observation{Leader: leader, Members: []MemberDB{{Name: "a-x", Size: 300, InUse: 100}}})
	}
	o.Record(k, Observation{Leader: 3, Alarms: []string{"NOSPACE"}, Members: []MemberDB{{Name: "a-x", Size: 400, InUse: 200}}})
	o.ReconcileError(k, "EtcdRetry")
	o.ReconcileError(k, "EtcdRetry")
	want := `
# HELP etcd_operator_cluster_alarm_active 1 while etcd has the alarm raised on any member of the cluster (NOSPACE, CORRUPT), else 0.
# TYPE etcd_operator_cluster_alarm_active gauge
etcd_operator_cluster_alarm_active{alarm="CORRUPT",cluster="a",namespace="t"} 0
etcd_operator_cluster_alarm_active{alarm="NOSPACE",cluster="a",namespace="t"} 1
# HELP etcd_operator_cluster_db_quota_bytes The members' --quota-backend-bytes: at this database size etcd raises NOSPACE and refuses writes.
# TYPE etcd_operator_cluster_db_quota_bytes gauge
etcd_operator_cluster_db_quota_bytes{cluster="a",namespace="t"} 2.147483648e+09
# HELP etcd_operator_cluster_leader_changes_total Leader changes the operator saw between its passes since it started (changes in quick succession count once).
# TYPE etcd_operator_cluster_leader_changes_total counter
etcd_operator_cluster_leader_changes_total{cluster="a",namespace="t"} 2
# HELP etcd_operator_cluster_member_db_size_bytes Size of a member's backend database on disk, as etcd reported it to the operator's last pass.
# TYPE etcd_operator_cluster_member_db_size_bytes gauge
etcd_operator_cluster_member_db_size_bytes{cluster="a",member="a-x",namespace="t"} 400
# HELP etcd_operator_cluster_member_db_size_in_use_bytes Part of a member's database that holds data; the rest is what a defragmentation gives back.
# TYPE etcd_operator_cluster_member_db_size_in_use_bytes gauge
etcd_operator_cluster_member_db_size_in_use_bytes{cluster="a",member="a-x",namespace="t"} 200
# HELP etcd_operator_cluster_reconcile_errors_total Reconcile passes over the cluster that ended in an error, by reason: EtcdRetry (etcd asked to retry), the membership action that failed, or Reconcile.
# TYPE etcd_operator_cluster_reconcile_errors_total counter
etcd_operator_cluster_reconcile_errors_total{cluster="a",namespace="t",reason="EtcdRetry"} 2
`
	if err := testutil.CollectAndCompare(observedOnly{o, ec}, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestQuotaSources: the members' reported quota wins, then the spec's, then etcd's default.
func TestQuotaSources(t *testing.T) {
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"}}
	k := client.ObjectKeyFromObject(ec)
	o := NewObservations()
	quota := func() float64 {
		t.Helper()
		return testutil.ToFloat64(filtered{observedOnly{o, ec}, quotaDesc})
	}
	o.Record(k, Observation{})
	if q := quota(); q != DefaultQuotaBytes {
		t.Errorf("default quota %v", q)
	}
	ec.Spec.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To[int64](8 << 30)}
	if q := quota(); q != 8<<30 {
		t.Errorf("spec quota %v", q)
	}
	o.Record(k, Observation{Members: []MemberDB{{Name: "a-x", ReportedQuota: 4 << 30}}})
	if q := quota(); q != 4<<30 {
		t.Errorf("reported quota %v", q)
	}
}

// TestDeletedClustersLoseTheirSeries: Forget and a scrape without the cluster drop its series.
func TestDeletedClustersLoseTheirSeries(t *testing.T) {
	o := NewObservations()
	a, b := client.ObjectKey{Namespace: "t", Name: "a"}, client.ObjectKey{Namespace: "t", Name: "b"}
	o.Record(a, Observation{Leader: 1})
	o.Record(b, Observation{Leader: 1})
	o.Forget(a)
	o.prune(map[client.ObjectKey]bool{})
	if len(o.clusters) != 0 {
		t.Errorf("kept %v", o.clusters)
	}
}

// filtered collects one descriptor's series.
type filtered struct {
	c prometheus.Collector
	d *prometheus.Desc
}

func (f filtered) Describe(ch chan<- *prometheus.Desc) { ch <- f.d }
func (f filtered) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric, 100)
	go func() { f.c.Collect(all); close(all) }()
	for m := range all {
		if m.Desc() == f.d {
			ch <- m
		}
	}
}
