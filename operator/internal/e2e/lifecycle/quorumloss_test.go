//go:build e2e

package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// TestTmpfsTwoNodesRebooted: the nodes of two of three tmpfs members go down and come straight
// back, as machines rebooting: their Pods restart on empty memory volumes. Their data guards keep
// etcd from starting there (without them, etcd rejoined under the old member IDs, voted without
// its data, and the cluster looked healthy: spec.quorumLoss was bypassed and a write only they
// held was lost without a word). So the cluster reports the quorum loss and, under quorumLoss
// Wait, replaces nobody; the survivor still holds every write.
func TestTmpfsTwoNodesRebooted(t *testing.T) {
	c, ns := tmpfsClusterWithKeys(t, "twoboot")
	survivor, survivorPod, lost := rebootTwoOfThree(t, c, ns, "twoboot")
	for _, name := range lost {
		e2eutil.WaitFor(t, 2*step, name+"'s data guard refusing its empty volume", func() bool {
			return topology.DataGuardRefused(e2eutil.Pod(t, c, ns, name))
		})
		if p := e2eutil.Pod(t, c, ns, name); etcdRunning(p) {
			t.Errorf("%s's etcd ran on the empty volume: %+v", name, p.Status.ContainerStatuses)
		}
	}
	took := e2eutil.WaitFor(t, 2*step, "the quorum loss reported", func() bool {
		a := meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, "twoboot").Status.Conditions, v1alpha2.ConditionAvailable)
		return a != nil && a.Status == metav1.ConditionFalse && a.Reason == v1alpha2.ReasonQuorumLostForGood
	})
	t.Logf("quorum loss reported %s after the nodes came back", took.Round(100*time.Millisecond))
	if got := len(e2eutil.Members(t, c, ns, "twoboot")); got != 3 {
		t.Errorf("%d members, want the 3 kept as they are (quorumLoss Wait)", got)
	}
	if p := e2eutil.Pod(t, c, ns, survivor); p == nil || p.UID != survivorPod {
		t.Errorf("the survivor's Pod was replaced: its data would be gone")
	}
	cli, err := e2eutil.MemberClient(c, ns, "twoboot", survivor)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	for i := range 10 { // without quorum, only a serializable read answers: the survivor's own data
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := cli.Get(ctx, fmt.Sprintf("key-%02d", i), clientv3.WithSerializable())
		cancel()
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != fmt.Sprintf("value-%02d", i) {
			t.Errorf("survivor's key-%02d: %v %v", i, resp, err)
		}
	}
}

// etcdRunning: the Pod's etcd container runs (or is ready).
func etcdRunning(p *corev1.Pod) bool {
	if p == nil {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "etcd" && (cs.State.Running != nil || cs.Ready) {
			return true
		}
	}
	return false
}

// survivorAndOthers picks the member that is alone on its node as the survivor; it returns the
// other two members' names and their nodes, which must not include the survivor's.
func survivorAndOthers(t *testing.T, c *framework.Cluster, ns string, members []v1alpha2.EtcdMember) (v1alpha2.EtcdMember, []string, []int) {
	t.Helper()
	nodeOf := map[string]int{}
	count := map[int]int{}
	for _, m := range members {
		p := e2eutil.Pod(t, c, ns, m.Name)
		if p == nil || p.Spec.NodeName == "" {
			t.Fatalf("member %s has no scheduled Pod", m.Name)
		}
		i, err := c.NodeIndex(p.Spec.NodeName)
		if err != nil {
			t.Fatal(err)
		}
		nodeOf[m.Name] = i
		count[i]++
	}
	for _, s := range members {
		if count[nodeOf[s.Name]] != 1 {
			continue
		}
		var lost []string
		var nodes []int
		for _, m := range members {
			if m.Name == s.Name {
				continue
			}
			lost = append(lost, m.Name)
			if len(nodes) == 0 || nodes[0] != nodeOf[m.Name] {
				nodes = append(nodes, nodeOf[m.Name])
			}
		}
		return s, lost, nodes
	}
	t.Fatalf("no member is alone on its node: %v", nodeOf)
	return v1alpha2.EtcdMember{}, nil, nil
}

// TestTmpfsRolloutReplacesMembers: a voter's Pod carries the data guard and data-expected
// "true"; a template change (here its resources, as the guard's arrival is on an upgrade) rolls
// a tmpfs cluster by replacing each member (its Pod cannot restart with its data), one at a
// time, and nothing written before is lost.
func TestTmpfsRolloutReplacesMembers(t *testing.T) {
	c, ns := tmpfsClusterWithKeys(t, "memroll")
	before := map[string]bool{}
	for _, m := range e2eutil.Members(t, c, ns, "memroll") {
		before[m.Name] = true
		waitDataExpected(t, c, ns, m.Name)
		if p := e2eutil.Pod(t, c, ns, m.Name); len(p.Spec.InitContainers) == 0 || p.Spec.InitContainers[0].Name != v1alpha2.DataGuardContainer {
			t.Fatalf("member %s's Pod has no data guard first: %v", m.Name, p.Spec.InitContainers)
		}
	}
	ec := e2eutil.GetCluster(t, c, ns, "memroll")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("110m")}
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitFor(t, 3*step, "every member replaced into the new template", func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "memroll") {
			p := e2eutil.Pod(t, c, ns, m.Name)
			if before[m.Name] || p == nil || p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 110 {
				return false
			}
		}
		return e2eutil.Converged(t, c, ns, "memroll", 3)
	})
	t.Logf("rolled by replacement in %s", took.Round(100*time.Millisecond))
	assertKeys(t, c, ns, "memroll")
}

// tmpfsClusterWithKeys creates, in a new namespace it returns with the shared local cluster, a
// converged 3-member tmpfs cluster holding key-00..09 (see assertKeys), diagnosed on failure.
func tmpfsClusterWithKeys(t *testing.T, name string, mutate ...func(*v1alpha2.EtcdClusterSpec)) (*framework.Cluster, string) {
	t.Helper()
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.DiagnoseOnFailure(t, c, nil, ns, name)
	e2eutil.CreateCluster(t, c, ns, name, 3, append([]func(*v1alpha2.EtcdClusterSpec){e2eutil.Tmpfs}, mutate...)...)
	e2eutil.WaitConverged(t, c, ns, name, 3, 2*step)
	for i := range 10 {
		e2eutil.PutGet(t, c, ns, name, fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
	return c, ns
}

// assertKeys fails unless the cluster serves key-00..09 as tmpfsClusterWithKeys wrote them.
func assertKeys(t *testing.T, c *framework.Cluster, ns, name string) {
	t.Helper()
	for i := range 10 {
		e2eutil.AssertKey(t, c, ns, name, fmt.Sprintf("key-%02d", i), fmt.Sprintf("value-%02d", i))
	}
}

// waitDataExpected waits for a member's Pod to say its data guard expects data.
func waitDataExpected(t *testing.T, c *framework.Cluster, ns, member string) {
	t.Helper()
	e2eutil.WaitFor(t, step, member+"'s Pod marked data-expected", func() bool {
		p := e2eutil.Pod(t, c, ns, member)
		return p != nil && p.Annotations[v1alpha2.AnnotationDataExpected] == "true"
	})
}

// TestTmpfsTwoNodesRebuiltFromSurvivor: as TestTmpfsTwoNodesRebooted, under quorumLoss
// RebuildFromSurvivor. The survivor's data is on its Pod's memory volume, so its etcd is
// restarted forced in that same Pod (an ephemeral container stops it); the two lost members are
// replaced, and every write is there.
func TestTmpfsTwoNodesRebuiltFromSurvivor(t *testing.T) {
	c, ns := tmpfsClusterWithKeys(t, "tworebuild", func(s *v1alpha2.EtcdClusterSpec) {
		s.QuorumLoss = v1alpha2.QuorumLossRebuildFromSurvivor
	})
	survivor, survivorPod, lost := rebootTwoOfThree(t, c, ns, "tworebuild")
	took := e2eutil.WaitFor(t, 3*step, "the cluster rebuilt from "+survivor, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "tworebuild") {
			if m.Spec.ForceNewCluster || m.Name == lost[0] || m.Name == lost[1] {
				return false
			}
		}
		return hasMember(t, c, ns, "tworebuild", survivor) && e2eutil.Converged(t, c, ns, "tworebuild", 3)
	})
	t.Logf("rebuilt to 3 members from %s %s after the nodes came back", survivor, took.Round(100*time.Millisecond))
	p := e2eutil.Pod(t, c, ns, survivor)
	if p == nil || p.UID != survivorPod {
		t.Fatal("the survivor's Pod was replaced: its data would be gone")
	}
	if !slices.ContainsFunc(p.Spec.EphemeralContainers, func(ec corev1.EphemeralContainer) bool {
		return strings.HasPrefix(ec.Name, v1alpha2.ForceNewClusterContainer)
	}) {
		t.Errorf("the survivor's etcd was not restarted through the ephemeral container: %v", p.Spec.EphemeralContainers)
	}
	if e2eutil.FindEvent(t, c, ns, "tworebuild", v1alpha2.ReasonQuorumRecovered) == nil {
		t.Error("no QuorumRecovered Event")
	}
	assertKeys(t, c, ns, "tworebuild")
}

// rebootTwoOfThree stops and at once starts the nodes of the two members that do not share the
// third's node, once their Pods expect data; it returns the third (the survivor), its Pod's UID,
// and the two others.
func rebootTwoOfThree(t *testing.T, c *framework.Cluster, ns, cluster string) (string, types.UID, []string) {
	t.Helper()
	survivor, lost, nodes := survivorAndOthers(t, c, ns, e2eutil.Members(t, c, ns, cluster))
	for _, name := range lost {
		waitDataExpected(t, c, ns, name)
	}
	survivorPod := e2eutil.Pod(t, c, ns, survivor.Name)
	for _, n := range nodes {
		if err := c.StopNode(n); err != nil {
			t.Fatalf("stop node %d: %v", n, err)
		}
	}
	for _, n := range nodes {
		if err := c.StartNode(n); err != nil {
			t.Fatalf("start node %d: %v", n, err)
		}
	}
	t.Logf("rebooted nodes %v (members %v); %s survives", nodes, lost, survivor.Name)
	return survivor.Name, survivorPod.UID, lost
}

// TestTmpfsTwoNodesRestoredFromLatestSnapshot: as TestTmpfsTwoNodesRebooted, under quorumLoss
// RestoreLatestSnapshot: the data guards' refusals are read as the majority's data lost, and
// the cluster is restored in place from its newest Complete snapshot (to a PVC here). The new
// members start on empty memory volumes that are not yet expected to hold data, so their guards
// let the restore fill the seed's. What the snapshot held is back; a write after it is lost.
func TestTmpfsTwoNodesRestoredFromLatestSnapshot(t *testing.T) {
	c, ns := tmpfsClusterWithKeys(t, "tworestore", func(s *v1alpha2.EtcdClusterSpec) {
		s.QuorumLoss = v1alpha2.QuorumLossRestoreLatestSnapshot
	})
	snap := e2eutil.SnapshotToNewPVC(t, c, ns, "tworestore", "tworestore-latest", v1alpha2.PVCLocation{ClaimName: "tworestore-snapshots"}, step).Name
	e2eutil.PutGet(t, c, ns, "tworestore", "after-snapshot", "lost")
	_, _, lost := rebootTwoOfThree(t, c, ns, "tworestore")
	took := e2eutil.WaitFor(t, 3*step, "the cluster restored from "+snap, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "tworestore") {
			if m.Name == lost[0] || m.Name == lost[1] {
				return false
			}
		}
		cl := e2eutil.GetCluster(t, c, ns, "tworestore")
		return cl.Annotations[v1alpha2.AnnotationRestoring] == "" && e2eutil.Converged(t, c, ns, "tworestore", 3)
	})
	t.Logf("restored to 3 members from %s %s after the nodes came back", snap, took.Round(100*time.Millisecond))
	if ev := e2eutil.FindEvent(t, c, ns, "tworestore", v1alpha2.ReasonQuorumRecovered); ev == nil {
		t.Error("no QuorumRecovered Event")
	} else if !strings.Contains(ev.Note, snap) {
		t.Errorf("the QuorumRecovered Event does not name %s: %s", snap, ev.Note)
	}
	assertKeys(t, c, ns, "tworestore")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := e2eutil.EtcdClient(t, c, ns, "tworestore").Get(ctx, "after-snapshot"); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("after-snapshot: %v %v, want it gone with the restore", err, resp)
	}
}
