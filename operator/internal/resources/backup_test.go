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
	ds := &v1alpha2.EtcdDefragSchedule{ObjectMeta: metav1.ObjectMeta{Name: "weekly", Namespace: "ns", UID: "ds-uid"},
		Spec: v1alpha2.EtcdDefragScheduleSpec{ClusterRef: ref, Rule: &v1alpha2.DefragRule{All: true}}}
	defrag := ScheduledDefrag(ds, due)
	for _, tc := range []struct {
		name, gotName, wantName string
		labels                  map[string]string
		maker                   string
		owners                  int
	}{
		{"scheduled", sched.Name, v1alpha2.ScheduledSnapshotName("hourly", due.Unix()/60), sched.Labels, v1alpha2.LabelBackupSchedule, 0},
		{"safety", safety.Name, v1alpha2.SafetySnapshotName("back"), safety.Labels, v1alpha2.LabelRestore, 0},
		{"quorum loss", ql.Name, "db-quorum-loss-abc", ql.Labels, v1alpha2.LabelCluster, 1},
		{"scheduled defrag", defrag.Name, v1alpha2.ScheduledDefragName("weekly", due.Unix()/60), defrag.Labels, v1alpha2.LabelDefragSchedule, 1},
	} {
		if tc.gotName != tc.wantName {
			t.Errorf("%s: name %q, want %q", tc.name, tc.gotName, tc.wantName)
		}
		want := map[string]string{v1alpha2.LabelCluster: "db", v1alpha2.LabelAppManagedBy: v1alpha2.ManagedBy}
		if tc.maker != v1alpha2.LabelCluster {
			want[tc.maker] = map[string]string{v1alpha2.LabelBackupSchedule: "hourly", v1alpha2.LabelRestore: "back",
				v1alpha2.LabelDefragSchedule: "weekly"}[tc.maker]
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
	if o := defrag.OwnerReferences; len(o) != 1 || o[0].UID != "ds-uid" || o[0].Kind != "EtcdDefragSchedule" ||
		defrag.Spec.Rule == nil || !defrag.Spec.Rule.All || defrag.Spec.ClusterRef.Name != "db" {
		t.Errorf("scheduled defrag: %+v", defrag)
	}
}

func TestRestoreVerifyPod(t *testing.T) {
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns", UID: "er-uid"},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: "db"}}}
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"},
		Spec: v1alpha2.EtcdClusterSpec{NodeSelector: map[string]string{"zone": "a"}}}
	s3 := &v1alpha2.S3Location{Endpoint: "http://s3", Bucket: "b", Key: "k/x.db", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}
	for _, tc := range []struct {
		name    string
		restore v1alpha2.MemberRestore
		want    map[string]string
		volume  bool
	}{
		{"s3 with checksum", v1alpha2.MemberRestore{Checksum: "sha256:ab", Source: v1alpha2.RestoreSource{S3: s3}},
			map[string]string{"RESTORE_VERIFY_ONLY": "true", "RESTORE_CHECKSUM": "sha256:ab", "RESTORE_SOURCE": "s3", "S3_KEY": "k/x.db"}, false},
		{"pvc", v1alpha2.MemberRestore{Source: v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "/a/x.db"}}},
			map[string]string{"RESTORE_VERIFY_ONLY": "true", "RESTORE_SOURCE": "pvc", "RESTORE_FILE": "/restore/src/a/x.db"}, true},
	} {
		p := RestoreVerifyPod(er, c, &tc.restore, "op:1")
		ctr := p.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range ctr.Env {
			env[e.Name] = e.Value
		}
		for k, v := range tc.want {
			if env[k] != v {
				t.Errorf("%s: %s=%q, want %q", tc.name, k, env[k], v)
			}
		}
		for _, member := range []string{"ETCD_NAME", "ETCD_INITIAL_CLUSTER", "DATA_DIR"} {
			if _, ok := env[member]; ok {
				t.Errorf("%s: verify Pod has member variable %s", tc.name, member)
			}
		}
		if p.Name != "back-verify" || p.Spec.RestartPolicy != corev1.RestartPolicyNever || ctr.Image != "op:1" ||
			len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "er-uid" || p.Spec.NodeSelector["zone"] != "a" {
			t.Errorf("%s: pod %+v", tc.name, p.ObjectMeta)
		}
		if (len(p.Spec.Volumes) == 1) != tc.volume || (tc.volume && !p.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly) {
			t.Errorf("%s: volumes %+v", tc.name, p.Spec.Volumes)
		}
		if sc := ctr.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: container security context %+v is not restricted", tc.name, sc)
		}
	}
}
