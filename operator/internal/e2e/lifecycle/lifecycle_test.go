//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const step = 4 * time.Minute

func TestBootstrapOneMember(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "one", 1)
	e2eutil.WaitConverged(t, c, ns, "one", 1, step)
	e2eutil.PutGet(t, c, ns, "one", "hello", "world")
}

// TestBootstrapThreeMembers runs on every etcd minor the operator supports.
func TestBootstrapThreeMembers(t *testing.T) {
	c := cluster(t)
	for _, v := range e2eutil.EtcdVersions {
		t.Run(v, func(t *testing.T) {
			ns := e2eutil.NewNamespace(t, c)
			e2eutil.CreateCluster(t, c, ns, "three", 3, e2eutil.Version(v))
			took := e2eutil.WaitConverged(t, c, ns, "three", 3, 2*step)
			t.Logf("etcd %s: 3 members converged %s after creation", v, took.Round(100*time.Millisecond))
			e2eutil.PutGet(t, c, ns, "three", "k", "v")
			for _, m := range e2eutil.Members(t, c, ns, "three") {
				if m.Status.Version != v {
					t.Errorf("member %s runs etcd %q, want %s", m.Name, m.Status.Version, v)
				}
			}
		})
	}
}

func TestBootstrapThreeMembersTmpfs(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "mem", 3, e2eutil.Tmpfs)
	e2eutil.WaitConverged(t, c, ns, "mem", 3, 2*step)
	e2eutil.PutGet(t, c, ns, "mem", "k", "v")
}

// TestScaleJourneyKeepsData: 3 -> 5 -> 3 -> 1 -> 0 -> 3, with the keys written at the start
// readable at the end, and the seed's member ID unchanged through the pause.
// It runs on every supported etcd minor.
func TestScaleJourneyKeepsData(t *testing.T) {
	c := cluster(t)
	for _, v := range e2eutil.EtcdVersions {
		t.Run(v, func(t *testing.T) { scaleJourney(t, c, v) })
	}
}

func scaleJourney(t *testing.T, c *framework.Cluster, version string) {
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "journey", 3, e2eutil.Version(version))
	e2eutil.WaitConverged(t, c, ns, "journey", 3, 2*step)
	for i := range 20 {
		e2eutil.PutGet(t, c, ns, "journey", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	for _, n := range []int32{5, 3, 1} {
		e2eutil.Scale(t, c, ns, "journey", n)
		e2eutil.WaitConverged(t, c, ns, "journey", int(n), 2*step)
	}
	survivor := e2eutil.Members(t, c, ns, "journey")[0]
	e2eutil.Scale(t, c, ns, "journey", 0)
	e2eutil.WaitFor(t, step, "paused", func() bool {
		ec := e2eutil.GetCluster(t, c, ns, "journey")
		avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
		var pod corev1.Pod
		gone := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: survivor.Name}, &pod) != nil
		return avail != nil && avail.Reason == v1alpha2.ReasonPaused && gone
	})
	e2eutil.Scale(t, c, ns, "journey", 3)
	e2eutil.WaitConverged(t, c, ns, "journey", 3, 2*step)
	for i := range 20 {
		e2eutil.AssertKey(t, c, ns, "journey", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	for _, m := range e2eutil.Members(t, c, ns, "journey") {
		if m.Name == survivor.Name && m.Status.MemberID != survivor.Status.MemberID {
			t.Errorf("resume changed the member ID: %s -> %s", survivor.Status.MemberID, m.Status.MemberID)
		}
	}
}

// TestPodDeletionKeepsMemberID: a deleted Pod comes back on the same PVC as the same member.
func TestPodDeletionKeepsMemberID(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "podloss", 3)
	e2eutil.WaitConverged(t, c, ns, "podloss", 3, 2*step)
	e2eutil.PutGet(t, c, ns, "podloss", "before", "delete")
	victim := e2eutil.Members(t, c, ns, "podloss")[1]
	var pod corev1.Pod
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim.Name}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Delete(context.Background(), &pod); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, step, "a new Pod", func() bool {
		var p corev1.Pod
		return c.Client.Get(context.Background(), client.ObjectKeyFromObject(&pod), &p) == nil && p.UID != pod.UID
	})
	e2eutil.WaitConverged(t, c, ns, "podloss", 3, step)
	for _, m := range e2eutil.Members(t, c, ns, "podloss") {
		if m.Name == victim.Name && m.Status.MemberID != victim.Status.MemberID {
			t.Errorf("member ID changed: %s -> %s", victim.Status.MemberID, m.Status.MemberID)
		}
	}
	e2eutil.AssertKey(t, c, ns, "podloss", "before", "delete")
}

// TestSIGKILLRecovery: etcd killed with SIGKILL restarts in place and rejoins as itself, on
// every supported etcd minor.
func TestSIGKILLRecovery(t *testing.T) {
	c := cluster(t)
	for _, v := range e2eutil.EtcdVersions {
		t.Run(v, func(t *testing.T) {
			ns := e2eutil.NewNamespace(t, c)
			e2eutil.CreateCluster(t, c, ns, "kill", 3, e2eutil.Version(v))
			e2eutil.WaitConverged(t, c, ns, "kill", 3, 2*step)
			victim := e2eutil.Members(t, c, ns, "kill")[0]
			if err := c.KillContainer(context.Background(), ns, victim.Name, "etcd"); err != nil {
				t.Fatal(err)
			}
			// 2 of 3 keep quorum. A write in flight when the victim was the leader times out until
			// the others elect a new one, so retry as a client would.
			e2eutil.PutEventually(t, c, ns, "kill", "during", "outage", step)
			e2eutil.WaitConverged(t, c, ns, "kill", 3, step)
			for _, m := range e2eutil.Members(t, c, ns, "kill") {
				if m.Name == victim.Name && m.Status.MemberID != victim.Status.MemberID {
					t.Errorf("member ID changed: %s -> %s", victim.Status.MemberID, m.Status.MemberID)
				}
			}
		})
	}
}
