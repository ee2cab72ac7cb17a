package v1alpha2_test

import (
	"context"
	"fmt"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func member(ns, name string, replicas *int32) *v1.EtcdMember {
	return &v1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.EtcdMemberSpec{ClusterName: "c", Version: "3.6.16", ClusterToken: "t",
			Storage: v1.StorageSpec{Size: resource.MustParse("1Gi")}, Replicas: replicas},
	}
}

func TestMemberRejections(t *testing.T) {
	ns := newNamespace(t)
	for _, n := range []int32{0, 2} {
		expectRejected(t, env.Client.Create(context.Background(), member(ns, fmt.Sprintf("m%d", n), ptr.To(n))), v1.MsgMemberReplicasOne)
	}
}

// An EtcdMember's /scale is what a PodDisruptionBudget with maxUnavailable over member Pods
// resolves (the Pod's controller): it reads 1 and the member's selector, and cannot be moved.
func TestMemberScaleIsOne(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	m := member(ns, "m", nil)
	if err := env.Client.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Status.Replicas, m.Status.Selector = 1, v1.LabelCluster+"=c"
	if err := env.Client.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, m, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != m.Status.Selector {
		t.Fatalf("unexpected scale of a member (want spec 1 defaulted, status 1, its selector): %+v", scale)
	}
	scale.Spec.Replicas = 0
	expectRejected(t, env.Client.SubResource("scale").Update(ctx, m, client.WithSubResourceBody(scale)), v1.MsgMemberReplicasOne)
}
