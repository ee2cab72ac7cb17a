package etcdcluster

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestLatestSnapshotOf(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	snap := func(name, cluster, id string, phase v1alpha2.SnapshotPhase, minute int) v1alpha2.EtcdSnapshot {
		s := v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:   v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}},
			Status: v1alpha2.EtcdSnapshotStatus{Phase: phase, ClusterID: id}}
		if phase == v1alpha2.SnapshotComplete {
			s.Status.CompletionTime = &metav1.Time{Time: t0.Add(time.Duration(minute) * time.Minute)}
		}
		return s
	}
	gone := snap("newest-but-deleted", "db", "aa", v1alpha2.SnapshotComplete, 9)
	gone.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tc := range []struct {
		name  string
		snaps []v1alpha2.EtcdSnapshot
		want  string
	}{
		{"the newest of this etcd cluster", []v1alpha2.EtcdSnapshot{
			snap("old", "db", "aa", v1alpha2.SnapshotComplete, 1), snap("new", "db", "aa", v1alpha2.SnapshotComplete, 5)}, "new"},
		{"not a newer one of an earlier incarnation (a rollback's safety snapshot, a same-named predecessor)", []v1alpha2.EtcdSnapshot{
			snap("ours", "db", "aa", v1alpha2.SnapshotComplete, 1), snap("before-rollback", "db", "99", v1alpha2.SnapshotComplete, 5)}, "ours"},
		{"not another cluster's", []v1alpha2.EtcdSnapshot{
			snap("ours", "db", "aa", v1alpha2.SnapshotComplete, 1), snap("theirs", "other", "aa", v1alpha2.SnapshotComplete, 5)}, "ours"},
		{"not one in flight or failed", []v1alpha2.EtcdSnapshot{
			snap("ours", "db", "aa", v1alpha2.SnapshotComplete, 1), snap("running", "db", "aa", v1alpha2.SnapshotStarted, 0),
			snap("failed", "db", "aa", v1alpha2.SnapshotFailed, 0)}, "ours"},
		{"not one being deleted", []v1alpha2.EtcdSnapshot{snap("ours", "db", "aa", v1alpha2.SnapshotComplete, 1), gone}, "ours"},
		{"none of this etcd cluster", []v1alpha2.EtcdSnapshot{snap("before-rollback", "db", "99", v1alpha2.SnapshotComplete, 5)}, ""},
	} {
		got := latestSnapshotOf(tc.snaps, "db", "aa")
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, name, tc.want)
		}
	}
	if got := latestSnapshotOf([]v1alpha2.EtcdSnapshot{snap("unformed", "db", "", v1alpha2.SnapshotComplete, 1)}, "db", ""); got != nil {
		t.Errorf("a cluster that never formed restored %s", got.Name)
	}
}
