package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

func TestCollector(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3)},
		Status: v1alpha2.EtcdClusterStatus{ReadyMembers: 2, LeaderID: "1",
			Members: []v1alpha2.ClusterMemberStatus{{Name: "a-1", Role: v1alpha2.MemberRoleLeader}, {Name: "a-2", Role: v1alpha2.MemberRoleFollower},
				{Name: "a-3", Role: v1alpha2.MemberRoleLearner}},
			Rollout:    &v1alpha2.RolloutStatus{UpdatedMembers: 1, Members: 3},
			Conditions: []metav1.Condition{{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue}, {Type: v1alpha2.ConditionDegraded, Status: metav1.ConditionFalse}}}}
	done := func(name string, at time.Time, size int64) *v1alpha2.EtcdSnapshot {
		return &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name},
			Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "a"}},
			Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete, CompletionTime: &metav1.Time{Time: at},
				Duration: &metav1.Duration{Duration: 1500 * time.Millisecond}, Artifact: &v1alpha2.SnapshotArtifact{URI: "s3://b/" + name, SizeBytes: size}}}
	}
	older, newer := done("s1", time.Unix(1000, 0), 10), done("s2", time.Unix(2000, 0), 20)
	failed := done("s3", time.Unix(3000, 0), 30)
	failed.Status.Phase = v1alpha2.SnapshotFailed
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ec, older, newer, failed).Build()
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{Reader: c})
	want := `
# HELP etcd_operator_cluster_condition 1 when the cluster's condition of that type is True, else 0 (Available, Progressing, Degraded).
# TYPE etcd_operator_cluster_condition gauge
etcd_operator_cluster_condition{cluster="a",namespace="t",type="Available"} 1
etcd_operator_cluster_condition{cluster="a",namespace="t",type="Degraded"} 0
etcd_operator_cluster_condition{cluster="a",namespace="t",type="Progressing"} 0
# HELP etcd_operator_cluster_last_snapshot_duration_seconds How long the newest Complete EtcdSnapshot of the cluster took.
# TYPE etcd_operator_cluster_last_snapshot_duration_seconds gauge
etcd_operator_cluster_last_snapshot_duration_seconds{cluster="a",namespace="t"} 1.5
# HELP etcd_operator_cluster_last_snapshot_size_bytes Size of the newest Complete EtcdSnapshot of the cluster.
# TYPE etcd_operator_cluster_last_snapshot_size_bytes gauge
etcd_operator_cluster_last_snapshot_size_bytes{cluster="a",namespace="t"} 20
# HELP etcd_operator_cluster_last_snapshot_timestamp_seconds Completion time of the newest Complete EtcdSnapshot of the cluster, Unix seconds.
# TYPE etcd_operator_cluster_last_snapshot_timestamp_seconds gauge
etcd_operator_cluster_last_snapshot_timestamp_seconds{cluster="a",namespace="t"} 2000
# HELP etcd_operator_cluster_leader_present 1 when etcd reports a leader for the cluster, else 0.
# TYPE etcd_operator_cluster_leader_present gauge
etcd_operator_cluster_leader_present{cluster="a",namespace="t"} 1
# HELP etcd_operator_cluster_members Members of an EtcdCluster by state: desired (spec.replicas), ready, voting, learner.
# TYPE etcd_operator_cluster_members gauge
etcd_operator_cluster_members{cluster="a",namespace="t",state="desired"} 3
etcd_operator_cluster_members{cluster="a",namespace="t",state="learner"} 1
etcd_operator_cluster_members{cluster="a",namespace="t",state="ready"} 2
etcd_operator_cluster_members{cluster="a",namespace="t",state="voting"} 2
# HELP etcd_operator_cluster_rollout_in_progress 1 while a rolling restart of the cluster's members is in progress.
# TYPE etcd_operator_cluster_rollout_in_progress gauge
etcd_operator_cluster_rollout_in_progress{cluster="a",namespace="t"} 1
# HELP etcd_operator_cluster_rollout_updated_members Members already running the current template during a rolling restart (of cluster_members{state="voting"} and learners); absent when none is in progress.
# TYPE etcd_operator_cluster_rollout_updated_members gauge
etcd_operator_cluster_rollout_updated_members{cluster="a",namespace="t"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// A deleted cluster's series go with it.
	if err := c.Delete(t.Context(), ec); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Errorf("%d series after the cluster was deleted (%v)", n, err)
	}
}

// The served leaves' notAfter, per plane; a plane whose Secret is absent or holds no
// certificate has no series.
func TestCertificateExpiry(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1alpha2.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "a"}}
	ca := pkitest.NewCA(t, "a-ca")
	server := ca.SecretData(t, []string{"a.t.svc"}, nil, pkitest.ServerAndClient...)
	leaf := firstCertificate(server[corev1.TLSCertKey])
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name}, Data: data}
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(ec,
		secret(v1alpha2.ActiveServerSecretName("a"), server),
		secret(v1alpha2.ActivePeerSecretName("a"), map[string][]byte{corev1.TLSCertKey: []byte("not a certificate")})).Build()
	reg := prometheus.NewRegistry()
	reg.MustRegister(Collector{Reader: c})
	want := fmt.Sprintf(`
# HELP etcd_operator_cluster_certificate_expiry_timestamp_seconds notAfter of the leaf certificate the cluster's members serve (plane server or peer) or the operator presents to them (plane operator-client), Unix seconds, from the active TLS Secrets the members mount.
# TYPE etcd_operator_cluster_certificate_expiry_timestamp_seconds gauge
etcd_operator_cluster_certificate_expiry_timestamp_seconds{cluster="a",namespace="t",plane="server"} %d
`, leaf.NotAfter.Unix())
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), Prefix+"cluster_certificate_expiry_timestamp_seconds"); err != nil {
		t.Error(err)
	}
}
