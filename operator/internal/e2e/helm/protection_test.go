//go:build e2e

package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// protectMembers: with the operator chart's admission policy, a user deleting an EtcdMember or a
// member's PVC (here the test, as cluster admin) is refused and nothing changes; the operator's
// own scale-down, which deletes an EtcdMember and lets the garbage collector take its PVC,
// still goes through, and the cluster keeps serving.
func (s *suite) protectMembers(t *testing.T) {
	ctx := context.Background()
	members := s.memberNames(t)
	if len(members) != etcdReplicas {
		t.Fatalf("EtcdMembers %v, want %d", members, etcdReplicas)
	}
	for _, o := range []client.Object{
		&v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNamespace, Name: members[0]}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: etcdNamespace, Name: v1alpha2.PVCName(members[1])}},
	} {
		err := s.c.Client.Delete(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "quorum gate") {
			t.Fatalf("deleting %T %s: %v, want the deletion-protection policy's refusal", o, o.GetName(), err)
		}
		t.Logf("refused: %v", err)
	}
	if ok, last := clusterConverged(s.c, etcdNamespace, etcdRelease, etcdReplicas); !ok {
		t.Fatalf("the cluster changed after refused deletes: %s", last)
	}

	var ec v1alpha2.EtcdCluster
	if err := s.c.Client.Get(ctx, client.ObjectKey{Namespace: etcdNamespace, Name: etcdRelease}, &ec); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = ptr.To[int32](etcdReplicas - 1)
	if err := s.c.Client.Patch(ctx, &ec, patch); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, 3*time.Minute, fmt.Sprintf("scale-down to %d members, their PVCs too", etcdReplicas-1), func() (bool, string) {
		ok, last := clusterConverged(s.c, etcdNamespace, etcdRelease, etcdReplicas-1)
		var pvcs corev1.PersistentVolumeClaimList
		if err := s.c.Client.List(ctx, &pvcs, client.InNamespace(etcdNamespace), client.MatchingLabels{v1alpha2.LabelCluster: etcdRelease}); err != nil {
			return false, err.Error()
		}
		return ok && len(pvcs.Items) == etcdReplicas-1, fmt.Sprintf("%s; %d PVCs", last, len(pvcs.Items))
	})
	t.Logf("scaled down past the policy in %s", took.Round(time.Millisecond))
	putGet(t, s.c, etcdNamespace, etcdRelease, s.etcdTLS, "/e2e/helm/protected", "scaled down")
}

func (s *suite) memberNames(t *testing.T) []string {
	t.Helper()
	var list v1alpha2.EtcdMemberList
	if err := s.c.Client.List(context.Background(), &list, client.InNamespace(etcdNamespace),
		client.MatchingLabels{v1alpha2.LabelCluster: etcdRelease}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range list.Items {
		out = append(out, m.Name)
	}
	return out
}
