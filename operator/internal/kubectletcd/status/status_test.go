package status

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func etcdMember(name, id string, ready bool) v1alpha2.EtcdMember {
	m := v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   v1alpha2.EtcdMemberSpec{ClusterName: "demo", InitialCluster: name + "=https://" + name + ".demo.ns.svc:2380"},
		Status: v1alpha2.EtcdMemberStatus{MemberID: id, PodName: name}}
	if ready {
		m.Status.Conditions = []metav1.Condition{{Type: v1alpha2.ConditionReady, Status: metav1.ConditionTrue}}
	}
	return m
}

func fixture() Cluster {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Spec: v1alpha2.EtcdClusterSpec{Version: "3.6.16"},
		Status: v1alpha2.EtcdClusterStatus{ClusterID: "cdf818194e3a8c32", Conditions: []metav1.Condition{
			{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "Healthy"}}}}
	leader := uint64(0xa1)
	probes := []kubectletcd.MemberStatus{
		{Member: etcdMember("demo-b", "00000000000000b2", true), Status: etcd.EndpointStatus{MemberID: 0xb2, Leader: leader, Version: "3.6.16",
			DBSize: 20 << 20, DBSizeInUse: 5 << 20, RaftIndex: 1200, RaftAppliedIndex: 1200, Revision: 900}},
		{Member: etcdMember("demo-a", "00000000000000a1", true), Status: etcd.EndpointStatus{MemberID: 0xa1, Leader: leader, Version: "3.6.16",
			DBSize: 20 << 20, DBSizeInUse: 6 << 20, RaftIndex: 1201, RaftAppliedIndex: 1201, Revision: 900}},
		{Member: etcdMember("demo-c", "00000000000000c3", false), Err: errors.New("context deadline exceeded")},
		{Member: etcdMember("demo-d", "00000000000000d4", true), Status: etcd.EndpointStatus{MemberID: 0xd4, Leader: leader, Version: "3.6.16",
			IsLearner: true, DBSize: 1 << 20, DBSizeInUse: 1 << 20, RaftIndex: 1201, RaftAppliedIndex: 1100, Revision: 850,
			Errors: []string{"memberID:212 alarm:NOSPACE"}}},
	}
	alarms := []etcd.Alarm{{MemberID: 0xd4, Type: etcd.AlarmNoSpace}, {MemberID: 0xee, Type: etcd.AlarmCorrupt}}
	done := func(name, cluster string, at time.Time, size int64) v1alpha2.EtcdSnapshot {
		return v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1Ref(cluster)},
			Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete, CompletionTime: &metav1.Time{Time: at},
				Artifact: &v1alpha2.SnapshotArtifact{URI: "s3://b/" + name + ".db", SizeBytes: size}}}
	}
	snaps := []v1alpha2.EtcdSnapshot{
		done("older", "demo", now.Add(-3*time.Hour), 1<<20),
		done("newest", "demo", now.Add(-90*time.Minute), 2<<20),
		done("other-cluster", "other", now.Add(-time.Minute), 1),
		{ObjectMeta: metav1.ObjectMeta{Name: "running"}, Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1Ref("demo")},
			Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotStarted}},
	}
	v := Build(c, probes, alarms, nil, snaps)
	v.Sorted()
	return v
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// The view: the leader named from the probes, an unreached member reported not dropped, a
// learner's NOSPACE kept as its error, alarms by member name (or ID when etcd has a member the
// operator does not), the newest Complete snapshot of this cluster only.
func TestStatusGolden(t *testing.T) {
	v := fixture()
	for _, format := range kubectletcd.Formats {
		var out bytes.Buffer
		if err := kubectletcd.Print(&out, format, v, func(w ioWriter) { Table(w, v, now) }); err != nil {
			t.Fatal(err)
		}
		golden(t, "status."+format, out.Bytes())
	}
}

func TestStatusWithoutQuorum(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}
	v := Build(c, []kubectletcd.MemberStatus{{Member: etcdMember("demo-a", "", false), Err: errors.New("connection refused")}}, nil, errors.New("context deadline exceeded"), nil)
	var out bytes.Buffer
	Table(&out, v, now)
	for _, want := range []string{"Leader:\tnone", "Alarms:\tcontext deadline exceeded", "Available:\tUnknown", "Last backup:\tnone", "demo-a\t-\tunknown"} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("no %q in\n%s", want, out.String())
		}
	}
}

func TestMembersGolden(t *testing.T) {
	list := etcd.MemberList{Members: []etcd.Member{
		{ID: 0xa1, Name: "demo-a", PeerURLs: []string{"https://demo-a.demo.ns.svc:2380"}, ClientURLs: []string{"https://demo-a.demo.ns.svc:2379"}},
		{ID: 0xd4, PeerURLs: []string{"https://demo-d.demo.ns.svc:2380"}, IsLearner: true},
		{ID: 0xee, Name: "stranger", PeerURLs: []string{"https://10.0.0.9:2380"}, ClientURLs: []string{"https://10.0.0.9:2379"}},
	}}
	members := []v1alpha2.EtcdMember{etcdMember("demo-a", "00000000000000a1", true), etcdMember("demo-d", "", false), etcdMember("demo-x", "", false)}
	es := Entries(list, members)
	for _, format := range kubectletcd.Formats {
		var out bytes.Buffer
		if err := kubectletcd.Print(&out, format, es, func(w ioWriter) { MembersTable(w, es) }); err != nil {
			t.Fatal(err)
		}
		golden(t, "members."+format, out.Bytes())
	}
}
