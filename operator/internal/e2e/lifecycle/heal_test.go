//go:build e2e

package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// TestTmpfsPodLossReplacesMember: a tmpfs member's data dies with its Pod, so the member is
// removed from etcd and replaced by a new learner; the other two keep quorum and the data.
func TestTmpfsPodLossReplacesMember(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "memloss", 3, e2eutil.Tmpfs)
	e2eutil.WaitConverged(t, c, ns, "memloss", 3, 2*step)
	e2eutil.PutGet(t, c, ns, "memloss", "before", "loss")
	victim := e2eutil.Members(t, c, ns, "memloss")[1]
	if err := c.Client.Delete(context.Background(), e2eutil.Pod(t, c, ns, victim.Name)); err != nil {
		t.Fatal(err)
	}
	// Quorum holds throughout: a write right after the loss succeeds.
	e2eutil.PutEventually(t, c, ns, "memloss", "during", "replacement", step)
	took := e2eutil.WaitFor(t, step, "the lost member replaced", func() bool {
		return !hasMember(t, c, ns, "memloss", victim.Name) && e2eutil.Converged(t, c, ns, "memloss", 3)
	})
	t.Logf("tmpfs member replaced and cluster converged %s after its Pod was deleted", took.Round(100*time.Millisecond))
	assertNotInEtcd(t, c, ns, "memloss", victim.Status.MemberID)
	e2eutil.AssertKey(t, c, ns, "memloss", "before", "loss")
}

// TestTmpfsNodeStopped: a node that stays NotReady takes its tmpfs member's data with it; after
// the grace period the member is replaced on another node while quorum holds.
func TestTmpfsNodeStopped(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	victim, _ := stopQuietestNode(t, c, ns, "memnode", e2eutil.Tmpfs)
	e2eutil.PutEventually(t, c, ns, "memnode", "during", "outage", step)
	took := e2eutil.WaitFor(t, 2*step, "the stopped node's member replaced", func() bool {
		return !hasMember(t, c, ns, "memnode", victim.Name) && e2eutil.Converged(t, c, ns, "memnode", 3)
	})
	t.Logf("member on the stopped node replaced %s after the stop (node grace %s)", took.Round(100*time.Millisecond), e2eutil.NodeGracePeriod)
	assertNotInEtcd(t, c, ns, "memnode", victim.Status.MemberID)
	e2eutil.AssertKey(t, c, ns, "memnode", "before", "stop")
}

// TestTmpfsNodeRebooted: a node that goes down and comes back at once (before it is even
// NotReady) restarts its tmpfs member's same Pod on an empty memory volume, as a kubelet does
// after a reboot. The node's new boot ID tells the data is gone: the member is replaced as lost
// (not left crash-looping on a member ID whose log it no longer has) while quorum holds.
func TestTmpfsNodeRebooted(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	victim, node := stopQuietestNode(t, c, ns, "reboot", e2eutil.Tmpfs)
	if err := c.StartNode(node); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitFor(t, 2*step, "the rebooted node's member replaced", func() bool {
		return !hasMember(t, c, ns, "reboot", victim.Name) && e2eutil.Converged(t, c, ns, "reboot", 3)
	})
	t.Logf("tmpfs member of the rebooted node replaced %s after the node came back", took.Round(100*time.Millisecond))
	note := replacingNote(t, c, ns, victim.Name)
	if !strings.Contains(note, "booted again") {
		t.Errorf("replaced because %q, want the node's new boot ID", note)
	}
	assertNotInEtcd(t, c, ns, "reboot", victim.Status.MemberID)
	e2eutil.AssertKey(t, c, ns, "reboot", "before", "stop")
}

// replacingNote is the note of the cluster's ReplacingMember Event about member.
func replacingNote(t *testing.T, c *framework.Cluster, ns, member string) string {
	t.Helper()
	var list eventsv1.EventList
	if err := c.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Reason == v1alpha2.ReasonReplacing && strings.Contains(e.Note, member) {
			return e.Note
		}
	}
	return ""
}

// TestWipedSeedDataDir: the seed's data dir is wiped under it and etcd restarted in place. It
// must not bootstrap an empty one-member cluster of its own (its Pod says "existing" once the
// cluster formed); it fails to start, is replaced, and no member ever reports another cluster ID.
func TestWipedSeedDataDir(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "wiped", 3)
	e2eutil.WaitConverged(t, c, ns, "wiped", 3, 2*step)
	e2eutil.PutGet(t, c, ns, "wiped", "before", "wipe")
	clusterID := e2eutil.GetCluster(t, c, ns, "wiped").Status.ClusterID
	i := slices.IndexFunc(e2eutil.Members(t, c, ns, "wiped"), func(m v1alpha2.EtcdMember) bool { return m.Spec.Bootstrap })
	if i < 0 {
		t.Fatal("no seed member")
	}
	seed := e2eutil.Members(t, c, ns, "wiped")[i]
	if got := e2eutil.Pod(t, c, ns, seed.Name).Annotations[v1alpha2.AnnotationInitialClusterState]; got != "existing" {
		t.Fatalf("the seed's Pod of a formed cluster says initial-cluster-state %q", got)
	}
	dir, err := c.VolumePath(context.Background(), ns, seed.Name, "data")
	if err != nil {
		t.Fatal(err)
	}
	wipe(t, dir)
	if err := c.KillContainer(context.Background(), ns, seed.Name, "etcd"); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 2*step, "the wiped seed replaced", func() bool {
		assertOneClusterID(t, c, ns, "wiped", clusterID)
		return !hasMember(t, c, ns, "wiped", seed.Name) && e2eutil.Converged(t, c, ns, "wiped", 3)
	})
	assertNotInEtcd(t, c, ns, "wiped", seed.Status.MemberID)
	e2eutil.AssertKey(t, c, ns, "wiped", "before", "wipe")
	if got := e2eutil.GetCluster(t, c, ns, "wiped").Status.ClusterID; got != clusterID {
		t.Errorf("cluster ID changed: %s -> %s", clusterID, got)
	}
}

// TestBadSpecRejected: the apiserver refuses an invalid spec with the API's own message, and
// nothing is created.
func TestBadSpecRejected(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "v3.6.16"}}
	err := c.Client.Create(context.Background(), ec)
	if err == nil || !strings.Contains(err.Error(), v1alpha2.MsgVersionFormat) {
		t.Fatalf("create with version v3.6.16: %v, want the message %q", err, v1alpha2.MsgVersionFormat)
	}
	var list v1alpha2.EtcdClusterList
	if err := c.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		if item.Namespace == ns {
			t.Errorf("a rejected cluster exists: %s", item.Name)
		}
	}
}

func hasMember(t *testing.T, c *framework.Cluster, ns, cluster, name string) bool {
	return slices.ContainsFunc(e2eutil.Members(t, c, ns, cluster), func(m v1alpha2.EtcdMember) bool { return m.Name == name })
}

func assertNotInEtcd(t *testing.T, c *framework.Cluster, ns, name, id string) {
	t.Helper()
	list, err := e2eutil.MemberList(t, c, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Members {
		if etcd.FormatID(m.ID) == id {
			t.Errorf("member %s is still in etcd", id)
		}
	}
}

// assertOneClusterID asks every member Pod's etcd directly which cluster it belongs to.
func assertOneClusterID(t *testing.T, c *framework.Cluster, ns, name, want string) {
	t.Helper()
	for _, m := range e2eutil.Members(t, c, ns, name) {
		if got, ok := memberClusterID(c, ns, name, m.Name); ok && got != want {
			t.Fatalf("member %s serves cluster %s, not %s: it bootstrapped a cluster of its own", m.Name, got, want)
		}
	}
}

func memberClusterID(c *framework.Cluster, ns, cluster, member string) (string, bool) {
	cli, err := e2eutil.MemberClient(c, ns, cluster, member)
	if err != nil {
		return "", false
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cli.Status(ctx, cli.Endpoints()[0])
	if err != nil {
		return "", false
	}
	return etcd.FormatID(resp.Header.ClusterId), true
}

// wipe removes everything in a data dir (etcd's member/ folder), as a disk loss would.
func wipe(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("data dir %s is already empty", dir)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wiped %s (%d entries)", dir, len(entries))
}
