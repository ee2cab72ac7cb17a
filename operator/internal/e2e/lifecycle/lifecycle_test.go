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
)

const step = 4 * time.Minute

func TestBootstrapOneMember(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "one", 1)
	waitConverged(t, c, ns, "one", 1, step)
	putGet(t, c, ns, "one", "hello", "world")
}

func TestBootstrapThreeMembers(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "three", 3)
	waitConverged(t, c, ns, "three", 3, 2*step)
	putGet(t, c, ns, "three", "k", "v")
}

func TestBootstrapThreeMembersTmpfs(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "mem", 3, tmpfs)
	waitConverged(t, c, ns, "mem", 3, 2*step)
	putGet(t, c, ns, "mem", "k", "v")
}

// TestScaleJourneyKeepsData: 3 -> 5 -> 3 -> 1 -> 0 -> 3, with the keys written at the start
// readable at the end, and the seed's member ID unchanged through the pause.
func TestScaleJourneyKeepsData(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "journey", 3)
	waitConverged(t, c, ns, "journey", 3, 2*step)
	for i := range 20 {
		putGet(t, c, ns, "journey", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	for _, n := range []int32{5, 3, 1} {
		scale(t, c, ns, "journey", n)
		waitConverged(t, c, ns, "journey", int(n), 2*step)
	}
	survivor := members(t, c, ns, "journey")[0]
	scale(t, c, ns, "journey", 0)
	waitFor(t, step, "paused", func() bool {
		ec := getCluster(t, c, ns, "journey")
		avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
		var pod corev1.Pod
		gone := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: survivor.Name}, &pod) != nil
		return avail != nil && avail.Reason == v1alpha2.ReasonPaused && gone
	})
	scale(t, c, ns, "journey", 3)
	waitConverged(t, c, ns, "journey", 3, 2*step)
	for i := range 20 {
		assertKey(t, c, ns, "journey", fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	for _, m := range members(t, c, ns, "journey") {
		if m.Name == survivor.Name && m.Status.MemberID != survivor.Status.MemberID {
			t.Errorf("resume changed the member ID: %s -> %s", survivor.Status.MemberID, m.Status.MemberID)
		}
	}
}

// TestPodDeletionKeepsMemberID: a deleted Pod comes back on the same PVC as the same member.
func TestPodDeletionKeepsMemberID(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "podloss", 3)
	waitConverged(t, c, ns, "podloss", 3, 2*step)
	putGet(t, c, ns, "podloss", "before", "delete")
	victim := members(t, c, ns, "podloss")[1]
	var pod corev1.Pod
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: victim.Name}, &pod); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Delete(context.Background(), &pod); err != nil {
		t.Fatal(err)
	}
	waitFor(t, step, "a new Pod", func() bool {
		var p corev1.Pod
		return c.Client.Get(context.Background(), client.ObjectKeyFromObject(&pod), &p) == nil && p.UID != pod.UID
	})
	waitConverged(t, c, ns, "podloss", 3, step)
	for _, m := range members(t, c, ns, "podloss") {
		if m.Name == victim.Name && m.Status.MemberID != victim.Status.MemberID {
			t.Errorf("member ID changed: %s -> %s", victim.Status.MemberID, m.Status.MemberID)
		}
	}
	assertKey(t, c, ns, "podloss", "before", "delete")
}

// TestSIGKILLRecovery: etcd killed with SIGKILL restarts in place and rejoins as itself.
func TestSIGKILLRecovery(t *testing.T) {
	c := cluster(t)
	ns := newNamespace(t, c)
	createCluster(t, c, ns, "kill", 3)
	waitConverged(t, c, ns, "kill", 3, 2*step)
	victim := members(t, c, ns, "kill")[0]
	if err := c.KillContainer(context.Background(), ns, victim.Name, "etcd"); err != nil {
		t.Fatal(err)
	}
	// 2 of 3 keep quorum. A write in flight when the victim was the leader times out until the
	// others elect a new one, so retry as a client would.
	putEventually(t, c, ns, "kill", "during", "outage", step)
	waitConverged(t, c, ns, "kill", 3, step)
	for _, m := range members(t, c, ns, "kill") {
		if m.Name == victim.Name && m.Status.MemberID != victim.Status.MemberID {
			t.Errorf("member ID changed: %s -> %s", victim.Status.MemberID, m.Status.MemberID)
		}
	}
}

func putGet(t *testing.T, c *framework.Cluster, ns, name, key, value string) {
	t.Helper()
	cli := etcdClient(t, c, ns, name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	assertKey(t, c, ns, name, key, value)
}

// putEventually retries a write until it succeeds or the timeout passes.
func putEventually(t *testing.T, c *framework.Cluster, ns, name, key, value string, timeout time.Duration) {
	t.Helper()
	cli := etcdClient(t, c, ns, name)
	var lastErr error
	waitFor(t, timeout, "a successful write of "+key, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, lastErr = cli.Put(ctx, key, value)
		if lastErr != nil {
			t.Logf("put %s: %v (retrying)", key, lastErr)
		}
		return lastErr == nil
	})
	assertKey(t, c, ns, name, key, value)
}

func assertKey(t *testing.T, c *framework.Cluster, ns, name, key, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := etcdClient(t, c, ns, name).Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
		t.Fatalf("get %s: %v %v, want %s", key, err, resp, want)
	}
}
