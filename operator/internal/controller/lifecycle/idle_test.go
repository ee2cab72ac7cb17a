package lifecycle

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

func parseID(s string) uint64 { return etcd.ParseID(s) }

// TestIdleClusterMakesNoWrites runs both reconcilers by hand on a converged cluster and checks
// that no object changed: an idle cluster costs no API writes and asks for no requeue.
func TestIdleClusterMakesNoWrites(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "idle", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "idle", 3))
	before := resourceVersions(t, ns)
	ctx := context.Background()
	res, err := clusterRec.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: "idle"}})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("idle cluster pass: %+v %v", res, err)
	}
	for _, m := range members(t, ns, "idle") {
		res, err := memberRec.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
		if err != nil || res.RequeueAfter != 0 {
			t.Fatalf("idle member pass: %+v %v", res, err)
		}
	}
	after := resourceVersions(t, ns)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s was written by an idle pass (%s -> %s)", k, v, after[k])
		}
	}
}

// resourceVersions of everything the operator writes in a namespace (Events aside).
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, list := range []client.ObjectList{&v1alpha2.EtcdClusterList{}, &v1alpha2.EtcdMemberList{}, &corev1.PodList{},
		&corev1.PersistentVolumeClaimList{}, &corev1.ServiceList{}, &policyv1.PodDisruptionBudgetList{}} {
		if err := k8s.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			obj := o.(client.Object)
			out[fmt.Sprintf("%T/%s", list, obj.GetName())] = obj.GetResourceVersion()
		}
	}
	if len(out) < 10 {
		t.Fatalf("expected the cluster, 3 members, 3 Pods, 3 PVCs, 2 Services and a PDB; got %v", out)
	}
	return out
}
