//go:build e2e

package e2eutil

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// SetOutOfService adds or removes Kubernetes' out-of-service taint on a node.
func SetOutOfService(t testing.TB, c *framework.Cluster, name string, on bool) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == corev1.TaintNodeOutOfService })
	if on {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
	}
	if err := c.Client.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
}

// NodeNotReady reports whether the node's Ready condition is other than True.
func NodeNotReady(c *framework.Cluster, name string) (bool, string) {
	n := &corev1.Node{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		return false, err.Error()
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status != corev1.ConditionTrue, string(cond.Status) + " " + cond.Reason
		}
	}
	return false, "no Ready condition"
}
