//go:build e2e

package e2eutil

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// LogLines is the last n lines of the operator's log that contain match (a cluster's name, say):
// a failed scenario's own story, without the other scenarios' noise.
func (o *Operator) LogLines(match string, n int) string {
	b, _ := os.ReadFile(o.logPath)
	var hits []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, match) {
			hits = append(hits, line)
		}
	}
	return strings.Join(hits[max(0, len(hits)-n):], "\n")
}

// DiagnoseOnFailure logs, when t has failed, what a person debugging it asks for first: the
// cluster's conditions and members, their Pods, the namespace's Events since start and the
// operator's log lines about the cluster.
func DiagnoseOnFailure(t *testing.T, c *framework.Cluster, op *Operator, ns, cluster string) {
	start := time.Now()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		cl := &v1alpha2.EtcdCluster{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, cl); err == nil {
			t.Logf("cluster %s: annotations %v, id %q, ready %d, members %+v", cluster, cl.Annotations, cl.Status.ClusterID,
				cl.Status.ReadyMembers, cl.Status.Members)
			for _, cond := range cl.Status.Conditions {
				t.Logf("  %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
		}
		var members v1alpha2.EtcdMemberList
		_ = c.Client.List(ctx, &members, client.InNamespace(ns), client.MatchingLabels{v1alpha2.LabelCluster: cluster})
		for _, m := range members.Items {
			t.Logf("member %s: deleting=%v id %q spec %+v", m.Name, !m.DeletionTimestamp.IsZero(), m.Status.MemberID, m.Spec)
			for _, cond := range m.Status.Conditions {
				t.Logf("  %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
			}
			pod := &corev1.Pod{}
			if err := c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, pod); err == nil {
				t.Logf("  pod %s on %s: %s %s, ip %s, uid %s", pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.Reason, pod.Status.PodIP, pod.UID)
				for _, cs := range pod.Status.ContainerStatuses {
					t.Logf("    container %s: ready %v, restarts %d, state %+v", cs.Name, cs.Ready, cs.RestartCount, cs.State)
				}
			}
		}
		LogEvents(t, c, ns, start)
		if op != nil {
			t.Logf("operator log about %s:\n%s", cluster, op.LogLines(`"`+cluster, 150))
		}
	})
}
