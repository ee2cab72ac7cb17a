package lifecycle

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// TestPVCLossReplacesMember: a member whose claim was deleted lost its data. It is not started
// on a new, empty claim (etcd would rejoin without what it acknowledged); it is removed from etcd
// and replaced by a new member, while the other two keep quorum.
func TestPVCLossReplacesMember(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "disk", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "disk", 3))
	all := members(t, ns, "disk")
	victim := all[slices.IndexFunc(all, func(m v1alpha2.EtcdMember) bool { return !m.Spec.Bootstrap })]
	waitFor(t, ns, "the claim's UID recorded", func() bool {
		return slices.ContainsFunc(members(t, ns, "disk"), func(m v1alpha2.EtcdMember) bool {
			return m.Name == victim.Name && m.Status.PVCUID != ""
		})
	})
	ctx := context.Background()
	pvc := &corev1.PersistentVolumeClaim{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha2.PVCName(victim.Name)}, pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, pod(t, ns, victim.Name)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "the member replaced", func() bool {
		ms := members(t, ns, "disk")
		return !slices.ContainsFunc(ms, func(m v1alpha2.EtcdMember) bool { return m.Name == victim.Name }) &&
			converged(t, ns, "disk", 3)()
	})
	fc := fakeEtcd.Cluster(topology.Key(ns, "disk"))
	if !slices.Contains(fc.Ops(), "remove "+victim.Name) {
		t.Errorf("the member that lost its claim must be removed from etcd: %v", fc.Ops())
	}
	assertOneStepAtATime(t, fc.Ops())
}
