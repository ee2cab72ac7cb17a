package lifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// spec.additionalMetadata edits reach the member Pods, PVCs, both Services, the PDB and the
// EtcdMembers of a running cluster in place: keys added and changed, keys removed from the spec
// removed, a key someone else set kept, and no Pod restarted.
func TestAdditionalMetadataFollowsEdits(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "m", 3)
	waitFor(t, ns, "3 members", converged(t, ns, "m", 3))
	uids := podUIDs(t, ns)
	edit := func(a *v1alpha2.AdditionalMetadata) {
		t.Helper()
		c := getCluster(t, ns, "m")
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.AdditionalMetadata = a
		if err := k8s.Patch(context.Background(), c, patch); err != nil {
			t.Fatal(err)
		}
	}
	edit(&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "a", "tier": "gold"}, Annotations: map[string]string{"owner": "ops"}})
	waitFor(t, ns, "every object labelled team=a, tier=gold, annotated owner=ops", func() bool {
		return everyObject(t, ns, "m", func(o client.Object) bool {
			return o.GetLabels()["team"] == "a" && o.GetLabels()["tier"] == "gold" && o.GetAnnotations()["owner"] == "ops"
		})
	})
	// Someone else's label on a Pod survives the next edit.
	p := pod(t, ns, members(t, ns, "m")[0].Name)
	patch := client.MergeFrom(p.DeepCopy())
	p.Labels["added-by-hand"] = "yes"
	if err := k8s.Patch(context.Background(), p, patch); err != nil {
		t.Fatal(err)
	}
	edit(&v1alpha2.AdditionalMetadata{Labels: map[string]string{"team": "b"}})
	waitFor(t, ns, "team=b everywhere, tier and owner gone", func() bool {
		return everyObject(t, ns, "m", func(o client.Object) bool {
			_, tier := o.GetLabels()["tier"]
			_, owner := o.GetAnnotations()["owner"]
			return o.GetLabels()["team"] == "b" && !tier && !owner
		})
	})
	if got := pod(t, ns, p.Name); got.Labels["added-by-hand"] != "yes" {
		t.Error("a label set by hand was removed")
	}
	for name, uid := range podUIDs(t, ns) {
		if uids[name] != uid {
			t.Errorf("Pod %s was recreated for a metadata edit", name)
		}
	}
}

// everyObject checks pred on the cluster's member Pods, PVCs, EtcdMembers, Services and PDB.
func everyObject(t *testing.T, ns, cluster string, pred func(client.Object) bool) bool {
	t.Helper()
	ctx := context.Background()
	var objs []client.Object
	for _, m := range members(t, ns, cluster) {
		m := m
		objs = append(objs, &m)
		if p := pod(t, ns, m.Name); p != nil {
			objs = append(objs, p)
		} else {
			return false
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
			return false
		}
		objs = append(objs, pvc)
	}
	for _, name := range []string{cluster, v1alpha2.ClientServiceName(cluster, nil)} {
		svc := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
			return false
		}
		objs = append(objs, svc)
	}
	budget := &policyv1.PodDisruptionBudget{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: v1alpha2.PDBName(cluster)}, budget); err != nil {
		return false
	}
	objs = append(objs, budget)
	for _, o := range objs {
		if !pred(o) {
			return false
		}
	}
	return true
}
