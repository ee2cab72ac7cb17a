//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// OneToOne checks what every crash must leave intact: every etcd member is a voter (no orphan
// learner) backed by exactly one EtcdMember with its ID, and no EtcdMember stands for a member
// etcd does not have.
func OneToOne(members []v1alpha2.EtcdMember, list []*etcdserverpb.Member) error {
	ids := map[string]int{}
	for _, m := range members {
		ids[m.Status.MemberID]++
	}
	for _, m := range list {
		id := etcd.FormatID(m.ID)
		if m.IsLearner {
			return fmt.Errorf("etcd member %s is still a learner", id)
		}
		if ids[id] != 1 {
			return fmt.Errorf("etcd member %s is backed by %d EtcdMembers (IDs %v)", id, ids[id], ids)
		}
	}
	if len(members) != len(list) {
		return fmt.Errorf("%d EtcdMembers for %d etcd members", len(members), len(list))
	}
	return nil
}

// AssertOneToOne fails the test unless OneToOne holds for the cluster (plaintext client plane).
func AssertOneToOne(t testing.TB, c *framework.Cluster, ns, name string) {
	t.Helper()
	list, err := MemberList(t, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := OneToOne(Members(t, c, ns, name), list.Members); err != nil {
		t.Error(err)
	}
}

// Degraded is the cluster's Degraded condition when it is True, else nil.
func Degraded(ec *v1alpha2.EtcdCluster) *metav1.Condition {
	d := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionDegraded)
	if d == nil || d.Status != metav1.ConditionTrue {
		return nil
	}
	return d
}

// NoOrphans checks that every member Pod and PVC of the cluster (named after its member, as the
// operator names them) belongs to an EtcdMember that exists: a crash between deleting a member
// and its Pod or claim going must not leak them.
func NoOrphans(t testing.TB, c *framework.Cluster, ns, name string) error {
	t.Helper()
	members := map[string]bool{}
	for _, m := range Members(t, c, ns, name) {
		members[m.Name] = true
	}
	ctx := context.Background()
	sel := client.MatchingLabels{v1alpha2.LabelCluster: name}
	var pods corev1.PodList
	if err := c.Client.List(ctx, &pods, client.InNamespace(ns), sel); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if m := p.Labels[v1alpha2.LabelAppComponent]; p.Name == m && !members[m] {
			return fmt.Errorf("Pod %s outlives its EtcdMember", p.Name)
		}
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := c.Client.List(ctx, &pvcs, client.InNamespace(ns), sel); err != nil {
		return err
	}
	for _, p := range pvcs.Items {
		if m := p.Labels[v1alpha2.LabelAppComponent]; p.Name == v1alpha2.PVCName(m) && !members[m] {
			return fmt.Errorf("PVC %s outlives its EtcdMember", p.Name)
		}
	}
	return nil
}
