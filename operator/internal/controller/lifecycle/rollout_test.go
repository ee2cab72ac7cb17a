package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// A template change restarts every member's Pod, one at a time, with the leader last after
// leadership moved to an updated member; membership is never touched.
func TestRollingUpdateRestartsOneMemberAtATime(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "etcd", 3)
	waitFor(t, ns, "three healthy members", converged(t, ns, "etcd", 3))
	fc := fakeEtcd.Cluster(topology.Key(ns, "etcd"))
	opsBefore := len(fc.Ops())
	oldUID := podUIDs(t, ns)
	leaderBefore := leaderName(t, ns, "etcd")

	c := getCluster(t, ns, "etcd")
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	if err := k8s.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}

	// Kubelet is played by hand here: after each restart the test first waits for the operator
	// to report that it holds the next restart back, and only then lets the new Pod become ready.
	var order []string
	for len(order) < 3 {
		var restarted string
		waitWithoutKubelet(t, ns, "a restarted member and the rollout waiting on it", func() bool {
			restarted = ""
			for name, uid := range oldUID {
				if p := pod(t, ns, name); (p == nil || string(p.UID) != uid) && !slices.Contains(order, name) {
					if restarted != "" {
						t.Fatalf("members %s and %s restarted at once\n%s", restarted, name, dump(ns))
					}
					restarted = name
				}
			}
			c := getCluster(t, ns, "etcd")
			p := meta.FindStatusCondition(c.Status.Conditions, v1alpha2.ConditionProgressing)
			return restarted != "" && pod(t, ns, restarted) != nil && c.Status.Rollout != nil && c.Status.Rollout.Restarting == restarted &&
				p != nil && p.Reason == v1alpha2.ReasonRollingUpdate && strings.Contains(p.Message, "restarting member "+restarted)
		})
		order = append(order, restarted)
		markPodsReady(t, ns)
	}
	waitFor(t, ns, "the rollout to finish", func() bool {
		return converged(t, ns, "etcd", 3)() && getCluster(t, ns, "etcd").Status.Rollout == nil
	})
	if order[2] != leaderBefore {
		t.Errorf("restart order %v: the leader %s was not last", order, leaderBefore)
	}
	for _, m := range members(t, ns, "etcd") {
		if got := pod(t, ns, m.Name).Spec.Containers[0].Resources.Limits.Memory().String(); got != "512Mi" {
			t.Errorf("member %s Pod memory limit %s", m.Name, got)
		}
		if m.Status.CurrentRevision == "" || m.Status.CurrentRevision != m.Status.UpdateRevision {
			t.Errorf("member %s revisions %q -> %q", m.Name, m.Status.CurrentRevision, m.Status.UpdateRevision)
		}
	}
	ops := fc.Ops()[opsBefore:]
	if len(ops) != 1 || ops[0] != "move-leader "+order[0] && ops[0] != "move-leader "+order[1] {
		t.Errorf("etcd operations during the rollout %v: want exactly one leader move to an updated member", ops)
	}
}

func leaderName(t *testing.T, ns, cluster string) string {
	t.Helper()
	for _, m := range getCluster(t, ns, cluster).Status.Members {
		if m.Role == v1alpha2.MemberRoleLeader {
			return m.Name
		}
	}
	t.Fatal("no leader in status")
	return ""
}
