//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestTerminalPhasePodRecreated: the node of one member is shut down gracefully, so the kubelet
// (here the node agent) ends its Pod Failed/Terminated. A bare Pod in a terminal phase never runs
// again; the public operator left it so forever (its bug #368). Ours deletes and recreates it on
// the same PVC, as the same member, and the cluster converges with the data written before.
func TestTerminalPhasePodRecreated(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.DiagnoseOnFailure(t, c, nil, ns, "term")
	e2eutil.CreateCluster(t, c, ns, "term", 3)
	e2eutil.WaitConverged(t, c, ns, "term", 3, 2*step)
	for i := range 10 {
		e2eutil.PutGet(t, c, ns, "term", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	before := e2eutil.Members(t, c, ns, "term")
	victim, node := memberOnQuietestNode(t, c, ns, before)
	old := e2eutil.Pod(t, c, ns, victim.Name)
	// The operator may replace the Pod the moment it turns Failed: watch for that status, a poll
	// could miss it.
	failed := watchTerminal(t, c, old)
	start := time.Now()
	if err := c.ShutdownNode(node); err != nil {
		t.Fatalf("graceful shutdown of node %d: %v", node, err)
	}
	t.Logf("node %d shut down in %s", node, time.Since(start).Round(time.Millisecond))
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			_ = c.StartNode(node)
		}
	})
	e2eutil.WaitFor(t, step, "member "+victim.Name+"'s Pod to end Failed", func() bool { return failed.Load() != nil })
	if st := failed.Load().Status; st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Fatalf("the node shutdown reported %s %q %q", st.Phase, st.Reason, st.Message)
	}
	failedAt := time.Now()
	if err := c.StartNode(node); err != nil {
		t.Fatalf("start node %d: %v", node, err)
	}
	restarted = true

	var recreated *corev1.Pod
	e2eutil.WaitFor(t, step, "a new Pod for "+victim.Name+", ready", func() bool {
		recreated = e2eutil.Pod(t, c, ns, victim.Name)
		return recreated != nil && recreated.UID != old.UID && e2eutil.PodReady(recreated)
	})
	e2eutil.WaitConverged(t, c, ns, "term", 3, step)
	t.Logf("Pod recreated (on %q); cluster converged at 3 %s after the old Pod was seen Failed",
		recreated.Spec.NodeName, time.Since(failedAt).Round(time.Millisecond))
	ids := map[string]string{}
	for _, m := range before {
		ids[m.Name] = m.Status.MemberID
	}
	for _, m := range e2eutil.Members(t, c, ns, "term") {
		if want, ok := ids[m.Name]; !ok || m.Status.MemberID != want {
			t.Errorf("member %s has ID %s, want the one it had before the shutdown (%q, known %v)", m.Name, m.Status.MemberID, want, ok)
		}
	}
	for i := range 10 {
		e2eutil.AssertKey(t, c, ns, "term", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	e2eutil.WaitFor(t, step, "a PodTerminated Event on "+victim.Name, func() bool {
		return hasEvent(t, c, ns, victim.Name, "PodTerminated")
	})
}

// memberOnQuietestNode picks the member whose node runs the fewest Pods (alone, if the
// scheduler spread them), so the shutdown hits that member only; it returns the node's index.
func memberOnQuietestNode(t *testing.T, c *framework.Cluster, ns string, members []v1alpha2.EtcdMember) (v1alpha2.EtcdMember, int) {
	t.Helper()
	best, bestNode, bestCount := -1, 0, 0
	for i, m := range members {
		p := e2eutil.Pod(t, c, ns, m.Name)
		if p == nil || p.Spec.NodeName == "" {
			t.Fatalf("member %s has no scheduled Pod", m.Name)
		}
		idx, err := c.NodeIndex(p.Spec.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := c.Kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", p.Spec.NodeName).String()})
		if err != nil {
			t.Fatal(err)
		}
		if best < 0 || len(pods.Items) < bestCount {
			best, bestNode, bestCount = i, idx, len(pods.Items)
		}
	}
	t.Logf("shutting down node %d: it runs %d Pod(s), one of them member %s's", bestNode, bestCount, members[best].Name)
	return members[best], bestNode
}

// watchTerminal records the first status of pod (this very UID) in a terminal phase. It watches
// from the pod's resourceVersion, so no update is missed, and stops with the test.
func watchTerminal(t *testing.T, c *framework.Cluster, pod *corev1.Pod) *atomic.Pointer[corev1.Pod] {
	t.Helper()
	var seen atomic.Pointer[corev1.Pod]
	e2eutil.WatchPods(t, c, pod.Namespace, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", pod.Name).String(), ResourceVersion: pod.ResourceVersion},
		func(p *corev1.Pod) bool {
			if p.UID == pod.UID && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
				seen.Store(p)
				return true
			}
			return false
		})
	return &seen
}

// hasEvent reports whether the operator recorded an Event with reason about the named object.
func hasEvent(t *testing.T, c *framework.Cluster, ns, name, reason string) bool {
	t.Helper()
	evs, err := c.Kube.EventsV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, e := range evs.Items {
		if e.Reason == reason && e.Regarding.Name == name {
			return true
		}
	}
	return false
}
