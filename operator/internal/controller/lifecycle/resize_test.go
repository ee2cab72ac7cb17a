package lifecycle

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// storage.size grown on a cluster whose StorageClass does not allow expansion: the claims stay
// as they are, each member's VolumeResized says why, with one Warning Event, and nothing restarts.
// (envtest binds no claim; the growth itself is proven on the local cluster, e2e/day2.)
func TestStorageGrowthRefusedByStorageClass(t *testing.T) {
	ns := newNamespace(t)
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fixed-" + ns}, Provisioner: "example.com/fixed",
		AllowVolumeExpansion: ptr.To(false)}
	create(t, sc)
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](1), Version: "3.6.16",
			Storage: v1alpha2.StorageSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To(sc.Name)}}}
	create(t, c)
	waitFor(t, ns, "1 member", converged(t, ns, "r", 1))
	m := members(t, ns, "r")[0]
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = corev1.ClaimBound // play the volume controller
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if err := k8s.Status().Update(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	uid := pod(t, ns, m.Name).UID
	c = getCluster(t, ns, "r")
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Storage.Size = resource.MustParse("2Gi")
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "VolumeResized=False/ExpansionNotSupported", func() bool {
		v := meta.FindStatusCondition(members(t, ns, "r")[0].Status.Conditions, v1alpha2.ConditionVolumeResized)
		return v != nil && v.Reason == v1alpha2.ReasonExpansionNotSupported && strings.Contains(v.Message, "allowVolumeExpansion")
	})
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
		t.Fatal(err)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("PVC asks for %s on a StorageClass that cannot expand", got.String())
	}
	if n := len(events(t, ns, m.Name, v1alpha2.ReasonExpansionNotSupported)); n != 1 {
		t.Errorf("%d ExpansionNotSupported Events, want 1", n)
	}
	if p := pod(t, ns, m.Name); p == nil || p.UID != uid {
		t.Error("the member's Pod was recreated for a size change")
	}
}
