//go:build e2e

package e2eutil

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// SnapshotToNewPVC creates a 1 GiB PVC named loc.ClaimName and an EtcdSnapshot name of cluster
// to it, and waits until the snapshot is Complete; a Failed one fails the test with its
// conditions.
func SnapshotToNewPVC(t testing.TB, c *framework.Cluster, ns, cluster, name string, loc v1alpha2.PVCLocation, timeout time.Duration) *v1alpha2.EtcdSnapshot {
	t.Helper()
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: loc.ClaimName, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster},
			Destination: v1alpha2.SnapshotLocation{PVC: &loc}}}
	for _, o := range []client.Object{pvc, s} {
		if err := c.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	WaitFor(t, timeout, "EtcdSnapshot "+name+" Complete", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false
		}
		if s.Status.Phase == v1alpha2.SnapshotFailed {
			t.Fatalf("EtcdSnapshot %s failed: %+v", name, s.Status.Conditions)
		}
		return s.Status.Phase == v1alpha2.SnapshotComplete
	})
	return s
}
