package v1alpha2_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// EtcdDefrags written for the public operator apply unchanged; the spec is a record and
// cannot change afterwards.
func TestDefragManifestsAndImmutability(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	for i, spec := range []string{
		`{clusterRef: {name: etcd}}`,
		`{clusterRef: {name: etcd}, rule: {all: true}, ttlSecondsAfterFinished: 3600}`,
		`{clusterRef: {name: etcd}, rule: {freeSpaceAbove: 500Mi}}`,
		`{clusterRef: {name: etcd}, rule: {freeSpaceAbove: 1Gi, quotaUsageAbove: "80%", minReclaim: 64Mi}}`,
	} {
		u := &unstructured.Unstructured{}
		manifest := fmt.Sprintf("{apiVersion: etcd-operator.cozystack.io/v1alpha2, kind: EtcdDefrag, metadata: {name: d%d}, spec: %s}", i, spec)
		if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Errorf("a public-operator EtcdDefrag was rejected: %s: %v", spec, err)
		}
	}
	d := &v1.EtcdDefrag{}
	if err := env.Client.Get(ctx, objKey(ns, "d2"), d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Rule.FreeSpaceAbove = ptr.To(resource.MustParse("1Gi"))
	expectRejected(t, env.Client.Update(ctx, d), v1.MsgDefragSpecImmutable)
}

func TestDefragRejections(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	for i, tc := range []struct {
		rule *v1.DefragRule
		name string
		msg  string
	}{
		{&v1.DefragRule{All: true, FreeSpaceAbove: q("1Mi")}, "etcd", v1.MsgDefragAllExclusive},
		{&v1.DefragRule{FreeSpaceAbove: q("0")}, "etcd", v1.MsgDefragFreeSpacePositive},
		{&v1.DefragRule{QuotaUsageAbove: "80%", MinReclaim: q("0")}, "etcd", v1.MsgDefragMinReclaimPositive},
		{&v1.DefragRule{MinReclaim: q("1Mi")}, "etcd", v1.MsgDefragMinReclaimQuota},
		{&v1.DefragRule{QuotaUsageAbove: "80%", FreeSpaceAbove: q("10Mi"), MinReclaim: q("20Mi")}, "etcd", v1.MsgDefragMinReclaimBound},
		{&v1.DefragRule{QuotaUsageAbove: "180%"}, "etcd", "spec.rule.quotaUsageAbove"},
		{nil, "", v1.MsgDefragClusterRef},
	} {
		d := &v1.EtcdDefrag{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bad-%d", i)},
			Spec: v1.EtcdDefragSpec{ClusterRef: corev1.LocalObjectReference{Name: tc.name}, Rule: tc.rule}}
		expectRejected(t, env.Client.Create(ctx, d), tc.msg)
	}
}

func TestDefragScheduleValidation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	ds := &v1.EtcdDefragSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekly"},
		Spec: v1.EtcdDefragScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "0 3 * * 0"}}
	if err := env.Client.Create(ctx, ds); err != nil {
		t.Fatal(err)
	}
	if l := ds.Spec.SuccessfulRunsHistoryLimit; l == nil || *l != 3 || ds.Spec.FailedRunsHistoryLimit == nil || *ds.Spec.FailedRunsHistoryLimit != 1 {
		t.Errorf("history limits default to %v and %v, want 3 and 1", ds.Spec.SuccessfulRunsHistoryLimit, ds.Spec.FailedRunsHistoryLimit)
	}
	noCluster := ds.DeepCopy()
	noCluster.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "nocluster"}
	noCluster.Spec.ClusterRef.Name = ""
	expectRejected(t, env.Client.Create(ctx, noCluster), v1.MsgDefragScheduleClusterRef)
	long := ds.DeepCopy()
	long.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: strings.Repeat("a", 64)}
	expectRejected(t, env.Client.Create(ctx, long), v1.MsgDefragScheduleName)
	badRule := ds.DeepCopy()
	badRule.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "badrule"}
	badRule.Spec.Rule = &v1.DefragRule{MinReclaim: ptr.To(resource.MustParse("1Mi"))}
	expectRejected(t, env.Client.Create(ctx, badRule), v1.MsgDefragMinReclaimQuota)
}
