//go:build e2e

package day2

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestStorageGrowsOnline: spec.storage.size grown on a running 3-member cluster (the local
// StorageClass allows expansion) resizes every member's PVC; each member reports VolumeResized,
// no Pod is restarted, and the cluster keeps serving.
func TestStorageGrowsOnline(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "grow", 3)
	e2eutil.WaitConverged(t, c, ns, "grow", 3, 2*step)
	pods := map[string]string{}
	for _, m := range e2eutil.Members(t, c, ns, "grow") {
		pods[m.Name] = string(e2eutil.Pod(t, c, ns, m.Name).UID)
	}
	ec := e2eutil.GetCluster(t, c, ns, "grow")
	patch := client.MergeFrom(ec.DeepCopy())
	want := resource.MustParse("2Gi")
	if ec.Spec.Storage.Size.Cmp(want) >= 0 {
		t.Fatalf("the cluster starts at %s already", ec.Spec.Storage.Size.String())
	}
	ec.Spec.Storage.Size = want
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitFor(t, 2*step, "every PVC at 2Gi and every member VolumeResized", func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "grow") {
			pvc := &corev1.PersistentVolumeClaim{}
			if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
				return false
			}
			have := pvc.Status.Capacity[corev1.ResourceStorage]
			if have.Cmp(want) < 0 || !meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha2.ConditionVolumeResized) {
				return false
			}
		}
		return true
	})
	t.Logf("3 PVCs grown 1Gi → 2Gi in %s", took.Round(100*time.Millisecond))
	for name, uid := range pods {
		if p := e2eutil.Pod(t, c, ns, name); p == nil || string(p.UID) != uid {
			t.Errorf("member %s was restarted for a size change", name)
		}
	}
	e2eutil.PutGet(t, c, ns, "grow", "after", "resize")
}
