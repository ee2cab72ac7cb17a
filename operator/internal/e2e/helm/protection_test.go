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
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
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
	if ok, last := e2eutil.ClusterAvailable(s.c, etcdNamespace, etcdRelease, etcdReplicas); !ok {
		t.Fatalf("the cluster changed after refused deletes: %s", last)
	}

	// Down one member (the operator deletes an EtcdMember, the garbage collector its PVC), then
	// back to the chart's size for the steps after this one.
	for _, n := range []int{etcdReplicas - 1, etcdReplicas} {
		s.scale(t, n)
	}
	putGet(t, s.c, etcdNamespace, etcdRelease, s.etcdTLS, "/e2e/helm/protected", "scaled down and up")
}

// scale sets the EtcdCluster's replicas to n and waits for n members with a PVC each.
func (s *suite) scale(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	var ec v1alpha2.EtcdCluster
	if err := s.c.Client.Get(ctx, client.ObjectKey{Namespace: etcdNamespace, Name: etcdRelease}, &ec); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Replicas = ptr.To(int32(n))
	if err := s.c.Client.Patch(ctx, &ec, patch); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitSeen(t, 3*time.Minute, fmt.Sprintf("%d members, a PVC each", n), func() (bool, string) {
		ok, last := e2eutil.ClusterAvailable(s.c, etcdNamespace, etcdRelease, n)
		var pvcs corev1.PersistentVolumeClaimList
		if err := s.c.Client.List(ctx, &pvcs, client.InNamespace(etcdNamespace), client.MatchingLabels{v1alpha2.LabelCluster: etcdRelease}); err != nil {
			return false, err.Error()
		}
		return ok && len(pvcs.Items) == n, fmt.Sprintf("%s; %d PVCs", last, len(pvcs.Items))
	})
	t.Logf("scaled to %d with the policy in place: %s", n, took.Round(time.Millisecond))
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
