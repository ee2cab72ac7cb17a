// Package metrics exports per-cluster metrics of the operator, read from the manager's cache
// at each scrape: the series of a deleted cluster go with it, nothing is kept between scrapes,
// and cardinality is bounded by the clusters and their members, never by keys.
package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// Prefix starts every metric name the operator exports.
const Prefix = "etcd_operator_"

var (
	clusterLabels  = []string{"namespace", "cluster"}
	membersDesc    = desc("cluster_members", "Members of an EtcdCluster by state: desired (spec.replicas), ready, voting, learner.", "state")
	leaderDesc     = desc("cluster_leader_present", "1 when etcd reports a leader for the cluster, else 0.")
	conditionDesc  = desc("cluster_condition", "1 when the cluster's condition of that type is True, else 0 (Available, Progressing, Degraded).", "type")
	rolloutDesc    = desc("cluster_rollout_in_progress", "1 while a rolling restart of the cluster's members is in progress.")
	rolloutStep    = desc("cluster_rollout_updated_members", "Members already running the current template during a rolling restart (of cluster_members{state=\"voting\"} and learners); absent when none is in progress.")
	snapshotTime   = desc("cluster_last_snapshot_timestamp_seconds", "Completion time of the newest Complete EtcdSnapshot of the cluster, Unix seconds.")
	snapshotSize   = desc("cluster_last_snapshot_size_bytes", "Size of the newest Complete EtcdSnapshot of the cluster.")
	snapshotLength = desc("cluster_last_snapshot_duration_seconds", "How long the newest Complete EtcdSnapshot of the cluster took.")
)

func desc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(Prefix+name, help, append(append([]string{}, clusterLabels...), extra...), nil)
}

// Collector reports every EtcdCluster in the cache, with what the cluster controller last
// observed of its etcd (nil: none).
type Collector struct {
	Reader       client.Reader
	Observations *Observations
}

func (c Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{membersDesc, leaderDesc, conditionDesc, rolloutDesc, rolloutStep, snapshotTime, snapshotSize, snapshotLength, certExpiryDesc,
		dbSizeDesc, dbInUseDesc, quotaDesc, alarmDesc, leaderChangesDesc, reconcileErrsDesc} {
		ch <- d
	}
}

func (c Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var clusters v1alpha2.EtcdClusterList
	if err := c.Reader.List(ctx, &clusters); err != nil {
		return // a scrape never fails the operator; the series are absent until the cache answers
	}
	var snaps v1alpha2.EtcdSnapshotList
	_ = c.Reader.List(ctx, &snaps)
	newest := newestSnapshots(snaps.Items)
	live := map[client.ObjectKey]bool{}
	for i := range clusters.Items {
		ec := &clusters.Items[i]
		live[client.ObjectKey{Namespace: ec.Namespace, Name: ec.Name}] = true
		collectCluster(ch, ec)
		collectCertificates(ctx, ch, c.Reader, ec)
		if s := newest[client.ObjectKey{Namespace: ec.Namespace, Name: ec.Name}]; s != nil {
			collectSnapshot(ch, ec, s)
		}
		if c.Observations != nil {
			c.Observations.collect(ch, ec)
		}
	}
	if c.Observations != nil {
		c.Observations.prune(live)
	}
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func boolean(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func collectCluster(ch chan<- prometheus.Metric, ec *v1alpha2.EtcdCluster) {
	ns, name := ec.Namespace, ec.Name
	voting, learner := 0, 0
	for _, m := range ec.Status.Members {
		switch m.Role {
		case v1alpha2.MemberRoleLeader, v1alpha2.MemberRoleFollower:
			voting++
		case v1alpha2.MemberRoleLearner:
			learner++
		}
	}
	desired := 0.0
	if ec.Spec.Replicas != nil {
		desired = float64(*ec.Spec.Replicas)
	}
	for state, v := range map[string]float64{"desired": desired, "ready": float64(ec.Status.ReadyMembers),
		"voting": float64(voting), "learner": float64(learner)} {
		gauge(ch, membersDesc, v, ns, name, state)
	}
	gauge(ch, leaderDesc, boolean(ec.Status.LeaderID != ""), ns, name)
	for _, t := range []string{v1alpha2.ConditionAvailable, v1alpha2.ConditionProgressing, v1alpha2.ConditionDegraded} {
		gauge(ch, conditionDesc, boolean(meta.IsStatusConditionTrue(ec.Status.Conditions, t)), ns, name, t)
	}
	gauge(ch, rolloutDesc, boolean(ec.Status.Rollout != nil), ns, name)
	if r := ec.Status.Rollout; r != nil {
		gauge(ch, rolloutStep, float64(r.UpdatedMembers), ns, name)
	}
}

func collectSnapshot(ch chan<- prometheus.Metric, ec *v1alpha2.EtcdCluster, s *v1alpha2.EtcdSnapshot) {
	gauge(ch, snapshotTime, float64(s.Status.CompletionTime.Unix()), ec.Namespace, ec.Name)
	if s.Status.Artifact != nil {
		gauge(ch, snapshotSize, float64(s.Status.Artifact.SizeBytes), ec.Namespace, ec.Name)
	}
	if s.Status.Duration != nil {
		gauge(ch, snapshotLength, s.Status.Duration.Seconds(), ec.Namespace, ec.Name)
	}
}

// newestSnapshots is, per cluster, its newest Complete snapshot.
func newestSnapshots(snaps []v1alpha2.EtcdSnapshot) map[client.ObjectKey]*v1alpha2.EtcdSnapshot {
	out := map[client.ObjectKey]*v1alpha2.EtcdSnapshot{}
	for i := range snaps {
		s := &snaps[i]
		if s.Status.Phase != v1alpha2.SnapshotComplete || s.Status.CompletionTime == nil {
			continue
		}
		k := client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.ClusterRef.Name}
		if cur := out[k]; cur == nil || s.Status.CompletionTime.After(cur.Status.CompletionTime.Time) {
			out[k] = s
		}
	}
	return out
}

// Register adds the collector to controller-runtime's registry (served on the manager's
// metrics endpoint); once per process.
// The collector reports the process's Observed store, and the etcd client's request histogram
// (package etcd) is registered with it.
func Register(reader client.Reader) error {
	for _, c := range []prometheus.Collector{Collector{Reader: reader, Observations: Observed}, etcd.RequestDuration} {
		err := crmetrics.Registry.Register(c)
		var already prometheus.AlreadyRegisteredError
		if err != nil && !errors.As(err, &already) {
			return err
		}
	}
	return nil
}
