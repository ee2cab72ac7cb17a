package resources

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestBackupObjectsCarryClusterAndMaker(t *testing.T) {
	ref := corev1.LocalObjectReference{Name: "db"}
	dest := v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "backups"}}
	bs := &v1alpha2.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: "ns"},
		Spec: v1alpha2.EtcdBackupScheduleSpec{ClusterRef: ref, SnapshotTemplate: v1alpha2.SnapshotTemplate{Destination: dest}}}
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns"}, Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: ref}}
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid"}}
	due := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)

	sched := ScheduledSnapshot(bs, due)
	safety := SafetySnapshot(er, dest)
	ql := QuorumLossRestore(c, "abc", "latest")
	for _, tc := range []struct {
		name, gotName, wantName string
		labels                  map[string]string
		maker                   string
		owners                  int
	}{
		{"scheduled", sched.Name, v1alpha2.ScheduledSnapshotName("hourly", due.Unix()/60), sched.Labels, v1alpha2.LabelBackupSchedule, 0},
		{"safety", safety.Name, v1alpha2.SafetySnapshotName("back"), safety.Labels, v1alpha2.LabelRestore, 0},
		{"quorum loss", ql.Name, "db-quorum-loss-abc", ql.Labels, v1alpha2.LabelCluster, 1},
	} {
		if tc.gotName != tc.wantName {
			t.Errorf("%s: name %q, want %q", tc.name, tc.gotName, tc.wantName)
		}
		want := map[string]string{v1alpha2.LabelCluster: "db", v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy}
		if tc.maker != v1alpha2.LabelCluster {
			want[tc.maker] = map[string]string{v1alpha2.LabelBackupSchedule: "hourly", v1alpha2.LabelRestore: "back"}[tc.maker]
		}
		if !maps.Equal(tc.labels, want) {
			t.Errorf("%s: labels %v, want %v", tc.name, tc.labels, want)
		}
	}
	if sched.Spec.DeletionPolicy != v1alpha2.SnapshotDelete || len(sched.OwnerReferences) != 0 {
		t.Errorf("scheduled: policy %q, owners %v; want Delete and none", sched.Spec.DeletionPolicy, sched.OwnerReferences)
	}
	if safety.Spec.DeletionPolicy != v1alpha2.SnapshotRetain || len(safety.OwnerReferences) != 0 || safety.Spec.Destination.PVC == nil {
		t.Errorf("safety: policy %q, owners %v, destination %+v; want Retain, none, the given one", safety.Spec.DeletionPolicy, safety.OwnerReferences, safety.Spec.Destination)
	}
	if len(ql.OwnerReferences) != 1 || ql.OwnerReferences[0].UID != "uid" || ql.Spec.Source.SnapshotRef.Name != "latest" ||
		ql.Annotations[v1alpha2.AnnotationQuorumLoss] != "true" {
		t.Errorf("quorum loss restore: %+v", ql)
	}
}
