//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// The suites that install the charts check the operator's Pods and the EtcdCluster the tenant
// chart renders through these.

// OperatorPods are the Pods of the operator chart's release in ns (the chart's selector labels).
func OperatorPods(c *framework.Cluster, ns, release string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := c.Client.List(context.Background(), &pods, client.InNamespace(ns),
		client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator", "app.kubernetes.io/instance": release})
	return pods.Items, err
}

// LeaseHeldByPod reports whether the operator's leader election Lease in ns names one of pods
// (controller-runtime's identity is <hostname>_<uuid>, the hostname being the Pod's name), and
// the holder.
func LeaseHeldByPod(c *framework.Cluster, ns string, pods []corev1.Pod) (bool, string) {
	var l coordinationv1.Lease
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.DefaultLeaderElectionID}, &l); err != nil {
		return false, err.Error()
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	for _, p := range pods {
		if strings.HasPrefix(holder, p.Name+"_") {
			return true, holder
		}
	}
	return false, fmt.Sprintf("holder %q is none of the operator Pods", holder)
}

// ClusterAvailable reports whether the EtcdCluster is Available (healthy quorum), no longer
// progressing, and has n ready members and n EtcdMembers; the string says what it saw.
func ClusterAvailable(c *framework.Cluster, ns, name string, n int) (bool, string) {
	ctx := context.Background()
	var ec v1alpha2.EtcdCluster
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ec); err != nil {
		return false, err.Error()
	}
	var members v1alpha2.EtcdMemberList
	if err := c.Client.List(ctx, &members, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelCluster: name}); err != nil {
		return false, err.Error()
	}
	avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
	prog := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionProgressing)
	ok := avail != nil && avail.Status == metav1.ConditionTrue && avail.Reason == v1alpha2.ReasonQuorumHealthy &&
		prog != nil && prog.Status == metav1.ConditionFalse && ec.Status.ReadyMembers == int32(n) && len(members.Items) == n
	return ok, fmt.Sprintf("readyMembers %d, EtcdMembers %d, Available %s, Progressing %s",
		ec.Status.ReadyMembers, len(members.Items), condString(avail), condString(prog))
}

func condString(c *metav1.Condition) string {
	if c == nil {
		return "unset"
	}
	return fmt.Sprintf("%s/%s (%s)", c.Status, c.Reason, c.Message)
}
