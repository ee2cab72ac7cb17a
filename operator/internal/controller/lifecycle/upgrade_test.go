package lifecycle

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// TestOperatorUpgradeRestartsNoTmpfsMember: tmpfs members' Pods made by an older operator build
// (its own agent image in the data guard, its revision scheme, which hashed that image) are
// current for this build: their revision is brought forward, and none is restarted — a restart
// would cost each one a full resync. A Pod whose spec differs beyond the image is still rolled.
func TestOperatorUpgradeRestartsNoTmpfsMember(t *testing.T) {
	ns := newNamespace(t)
	newTmpfsCluster(t, ns, "upg", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "upg", 3))
	before := podUIDs(t, ns)
	const olderImage = "ghcr.io/cozystack/etcd-operator:0.0.9"
	var stamped []string
	for _, m := range members(t, ns, "upg") {
		p := pod(t, ns, m.Name)
		// What the older build made: this spec with its image, stamped with the whole-spec hash.
		older := resources.Pod(&m, resources.PodOptions{ClusterFormed: true, Steady: true, AgentImage: olderImage})
		patch := client.MergeFrom(p.DeepCopy())
		for i := range p.Spec.InitContainers {
			p.Spec.InitContainers[i].Image = olderImage
		}
		p.Annotations[v1alpha2.AnnotationPodRevision] = resources.LegacyPodRevision(older, older)
		if err := k8s.Patch(context.Background(), p, patch); err != nil {
			t.Fatal(err)
		}
		stamped = append(stamped, m.Name)
	}
	waitFor(t, ns, "every Pod's revision brought forward", func() bool {
		for _, name := range stamped {
			m := &v1alpha2.EtcdMember{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
				return false
			}
			p := pod(t, ns, name)
			if p == nil || p.Annotations[v1alpha2.AnnotationPodRevision] != m.Status.UpdateRevision || m.Status.CurrentRevision != m.Status.UpdateRevision {
				return false
			}
		}
		return true
	})
	for name, uid := range podUIDs(t, ns) {
		if before[name] != uid {
			t.Errorf("Pod %s was replaced (uid %s → %s) by an operator upgrade that changed only the agent image", name, before[name], uid)
		}
	}
	if p := pod(t, ns, stamped[0]); p.Spec.InitContainers[0].Image != olderImage {
		t.Errorf("the running Pod's guard image changed in place to %s", p.Spec.InitContainers[0].Image)
	}
}
