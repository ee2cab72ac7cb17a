package etcdbackupschedule

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// A restore reads a snapshot by reference or by the artifact's own key or path.
func TestReads(t *testing.T) {
	done := v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete, Artifact: &v1alpha2.SnapshotArtifact{Checksum: "sha256:ab"}}
	inS3 := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}, Status: done, Spec: v1alpha2.EtcdSnapshotSpec{
		Destination: v1alpha2.SnapshotLocation{S3: &v1alpha2.S3Location{Bucket: "b", Key: "tenants/a"}}}}
	onPVC := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "p-1"}, Status: done, Spec: v1alpha2.EtcdSnapshotSpec{
		Destination: v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "daily"}}}}
	running := inS3.DeepCopy()
	running.Status = v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotStarted}
	s3 := func(bucket, key string) v1alpha2.RestoreSource {
		return v1alpha2.RestoreSource{S3: &v1alpha2.S3Location{Bucket: bucket, Key: key}}
	}
	pvc := func(claim, sub string) v1alpha2.RestoreSource {
		return v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: claim, SubPath: sub}}
	}
	for _, tc := range []struct {
		name string
		src  v1alpha2.RestoreSource
		snap *v1alpha2.EtcdSnapshot
		want bool
	}{
		{"by reference", v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s-1"}}, inS3, true},
		{"another reference", v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s-2"}}, inS3, false},
		{"its S3 key", s3("b", "tenants/a/s-1.db"), inS3, true},
		{"its S3 key with a leading slash", s3("b", "/tenants/a/s-1.db"), inS3, true},
		{"the key in another bucket", s3("c", "tenants/a/s-1.db"), inS3, false},
		{"another key", s3("b", "tenants/a/s-2.db"), inS3, false},
		{"its PVC file", pvc("backups", "daily/p-1.db"), onPVC, true},
		{"its PVC file, unclean", pvc("backups", "./daily//p-1.db"), onPVC, true},
		{"the file on another claim", pvc("other", "daily/p-1.db"), onPVC, false},
		{"an S3 source for a PVC snapshot", s3("backups", "daily/p-1.db"), onPVC, false},
		{"a snapshot still in flight", s3("b", "tenants/a/s-1.db"), running, false},
	} {
		if got := reads(tc.src, tc.snap); got != tc.want {
			t.Errorf("%s: reads = %v, want %v", tc.name, got, tc.want)
		}
	}
}
