//go:build e2e

package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestPVCNodeStopped: a node stopped for good with a PVC member on it. Past the PVC grace
// period the member is removed from etcd and replaced by a new learner elsewhere; quorum and
// writes hold throughout.
func TestPVCNodeStopped(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	victim, _ := stopQuietestNode(t, c, ns, "pvcnode")
	e2eutil.PutEventually(t, c, ns, "pvcnode", "during", "outage", step)
	took := e2eutil.WaitFor(t, 2*step, "the stopped node's PVC member replaced", func() bool {
		return !hasMember(t, c, ns, "pvcnode", victim.Name) && e2eutil.Converged(t, c, ns, "pvcnode", 3)
	})
	t.Logf("PVC member on the stopped node replaced %s after the stop (PVC node grace %s)", took.Round(100*time.Millisecond), e2eutil.PVCNodeGracePeriod)
	assertNotInEtcd(t, c, ns, "pvcnode", victim.Status.MemberID)
	e2eutil.AssertKey(t, c, ns, "pvcnode", "before", "stop")
	e2eutil.AssertKey(t, c, ns, "pvcnode", "during", "outage")
}

// TestPVCNodeOutOfService: the stopped node is marked node.kubernetes.io/out-of-service (an
// admin's word that it is shut down) and the member's volume can follow (the local cluster's
// volumes are not bound to a node): its Pod is cleared and restarts on another node with the
// same data and member ID; no membership change.
func TestPVCNodeOutOfService(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	victim, _ := stopQuietestNode(t, c, ns, "oos")
	nodeName := e2eutil.Pod(t, c, ns, victim.Name).Spec.NodeName // a stopped node's Pods stay bound to it
	e2eutil.WaitFor(t, step, "node "+nodeName+" NotReady", func() bool {
		n := &corev1.Node{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Name: nodeName}, n); err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue
		})
	})
	e2eutil.SetOutOfService(t, c, nodeName, true)
	t.Cleanup(func() { e2eutil.SetOutOfService(t, c, nodeName, false) })
	start := time.Now()
	e2eutil.WaitFor(t, 2*step, "the member back on another node", func() bool {
		p := e2eutil.Pod(t, c, ns, victim.Name)
		return p != nil && p.Spec.NodeName != "" && p.Spec.NodeName != nodeName && e2eutil.PodReady(p) && e2eutil.Converged(t, c, ns, "oos", 3)
	})
	t.Logf("member %s restarted off the out-of-service node in %s", victim.Name, time.Since(start).Round(100*time.Millisecond))
	for _, m := range e2eutil.Members(t, c, ns, "oos") {
		if m.Name == victim.Name && m.Status.MemberID != victim.Status.MemberID {
			t.Errorf("member ID changed from %s to %s: it was replaced, not moved", victim.Status.MemberID, m.Status.MemberID)
		}
	}
	if !hasEvent(t, c, ns, victim.Name, "PodMovedOffNode") {
		t.Error("no PodMovedOffNode Event")
	}
	e2eutil.AssertKey(t, c, ns, "oos", "before", "stop")
}

// stopQuietestNode creates a 3-member cluster, writes before=stop, and stops the node of the
// member whose node carries the fewest other members (started again at cleanup); it returns
// that member and the node's index.
func stopQuietestNode(t *testing.T, c *framework.Cluster, ns, name string, mutate ...func(*v1alpha2.EtcdClusterSpec)) (v1alpha2.EtcdMember, int) {
	t.Helper()
	e2eutil.DiagnoseOnFailure(t, c, nil, ns, name)
	e2eutil.CreateCluster(t, c, ns, name, 3, mutate...)
	e2eutil.WaitConverged(t, c, ns, name, 3, 2*step)
	e2eutil.PutGet(t, c, ns, name, "before", "stop")
	victim, node := memberOnQuietestNode(t, c, ns, e2eutil.Members(t, c, ns, name))
	if err := c.StopNode(node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.StartNode(node) })
	return victim, node
}
