//go:build e2e

package realnodes

import (
	"slices"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// nodeLoss powers off a real node holding a member (not the operator's node): the kubelet,
// containerd and every container die with it. Once the Node is NotReady an admin marks it
// out-of-service; the member's Pod is cleared and starts on another node with the same volume
// and etcd member ID, while a client keeps writing through the other members. The node is
// started again at the end and the cluster stays Available.
func (s *suite) nodeLoss(t *testing.T) {
	const prefix = "/e2e/real/nodeloss"
	victim, node, idx := s.memberOffOperatorNode(t, etcdRelease)
	w := s.startWriter(t, prefix)
	start := time.Now()
	if err := s.c.StopNode(idx); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitSeen(t, 2*time.Minute, "node "+node+" NotReady", func() (bool, string) {
		return e2eutil.NodeNotReady(s.c, node)
	})
	t.Logf("node %s (member %s) powered off; NotReady after %s", node, victim.Name, took.Round(time.Millisecond))
	e2eutil.SetOutOfService(t, s.c, node, true)
	took = e2eutil.WaitSeen(t, 3*time.Minute, "member "+victim.Name+" Ready on another node", func() (bool, string) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, victim.Name)
		if p == nil || p.Spec.NodeName == "" || p.Spec.NodeName == node {
			return false, "its Pod is not yet on another node"
		}
		return e2eutil.PodReady(p), "on " + p.Spec.NodeName
	})
	t.Logf("member %s moved off the out-of-service node and Ready in %s (%s since the power-off)", victim.Name, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	s.waitAvailable(t, etcdReplicas, 2*time.Minute)
	s.stopWriter(t, w, prefix, false)
	if got := s.member(t, victim.Name).Status.MemberID; got != victim.Status.MemberID {
		t.Errorf("member %s is etcd member %s now, want %s (moved with its volume, not replaced)", victim.Name, got, victim.Status.MemberID)
	}
	e2eutil.SetOutOfService(t, s.c, node, false)
	if err := s.c.StartNode(idx); err != nil {
		t.Fatal(err)
	}
	took = s.waitAvailable(t, etcdReplicas, 2*time.Minute)
	t.Logf("node %s started again; cluster Available: %s", node, took.Round(time.Millisecond))
}

// memberOffOperatorNode is a member of release whose Pod runs on another real node than the
// operator's (so stopping that node leaves the operator running), its node and the node's index.
func (s *suite) memberOffOperatorNode(t *testing.T, release string) (v1alpha2.EtcdMember, string, int) {
	t.Helper()
	operatorNode := s.operatorPods(t)[0].Spec.NodeName
	members := e2eutil.Members(t, s.c, etcdNamespace, release)
	i := slices.IndexFunc(members, func(m v1alpha2.EtcdMember) bool {
		return e2eutil.Pod(t, s.c, etcdNamespace, m.Name).Spec.NodeName != operatorNode
	})
	if i < 0 {
		t.Fatalf("every member of %s runs on the operator's node %s", release, operatorNode)
	}
	node := e2eutil.Pod(t, s.c, etcdNamespace, members[i].Name).Spec.NodeName
	idx, err := s.c.NodeIndex(node)
	if err != nil {
		t.Fatal(err)
	}
	return members[i], node, idx
}
