//go:build e2e

package backup

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// loseTwoMembers deletes two members' PVCs and their Pods: their data is gone for good and the
// cluster has lost quorum. The first member (the survivor) is left alone.
func (e *env) loseTwoMembers(t *testing.T, cluster string) (survivor string) {
	t.Helper()
	ctx := context.Background()
	members := e2eutil.Members(t, e.c, e.ns, cluster)
	for _, m := range members[1:] {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Client.Delete(ctx, pvc); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metavOf(e.ns, m.Name)}, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
	}
	// Quorum is gone once the lost members' claims are: wait for the cluster to say so, so that
	// what follows measures the recovery, not the cluster before it noticed.
	e2eutil.WaitFor(t, convergeTimeout, "the cluster to see its lost quorum", func() bool {
		cl := e2eutil.GetCluster(t, e.c, e.ns, cluster)
		return !meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha2.ConditionAvailable) ||
			cl.Annotations[v1alpha2.AnnotationRestoring] != ""
	})
	return members[0].Name
}

func (e *env) writeKeys(t *testing.T, cli *clientv3.Client, prefix string, n int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for i := range n {
		k, v := fmt.Sprintf("%s%02d", prefix, i), fmt.Sprintf("v%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := cli.Put(ctx, k, v)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// testQuorumLossSurvivor: two of three members lose their PVCs; with quorumLoss
// RebuildFromSurvivor the operator forces a one-member cluster from the survivor and grows it
// back to three; every write is there (the survivor had them all).
func (e *env) testQuorumLossSurvivor(t *testing.T) {
	tc := e.newCluster(t, "survivor", 3, "survivor-password", func(s *v1alpha2.EtcdClusterSpec) {
		s.QuorumLoss = v1alpha2.QuorumLossRebuildFromSurvivor
	})
	tc.waitReady(t, e.c, 3)
	want := e.writeKeys(t, tc.root(t, e.c), "/kept/", 20)
	start := time.Now()
	survivor := e.loseTwoMembers(t, tc.name)
	e2eutil.WaitFor(t, 2*convergeTimeout, "rebuilt to 3 members", func() bool {
		cl := e2eutil.GetCluster(t, e.c, e.ns, tc.name)
		return cl.Status.ReadyMembers == 3 && len(e2eutil.Members(t, e.c, e.ns, tc.name)) == 3
	})
	tc.waitReady(t, e.c, 3)
	took := time.Since(start)
	assertHas(t, tc.root(t, e.c), "/kept/", want)
	if e2eutil.FindEvent(t, e.c, e.ns, tc.name, v1alpha2.ReasonQuorumRecovered) == nil {
		t.Error("no QuorumRecovered Event")
	}
	found := false
	for _, m := range e2eutil.Members(t, e.c, e.ns, tc.name) {
		found = found || m.Name == survivor
		if m.Spec.ForceNewCluster {
			t.Errorf("%s still has forceNewCluster", m.Name)
		}
	}
	if !found {
		t.Errorf("the survivor %s is gone", survivor)
	}
	e.restartSurvivor(t, tc, survivor)
	t.Logf("rebuilt from %s in %s", survivor, took.Round(time.Second))
}

// restartSurvivor kills the survivor's etcd once the cluster has grown back: the container
// restarts in the same Pod and must not force a one-member cluster again.
func (e *env) restartSurvivor(t *testing.T, tc tlsAuthCluster, survivor string) {
	t.Helper()
	ctx := context.Background()
	pod := e2eutil.Pod(t, e.c, e.ns, survivor)
	if got := pod.Annotations[v1alpha2.AnnotationForceNewCluster]; got != "false" {
		t.Errorf("survivor Pod's %s annotation is %q after the rebuild, want false", v1alpha2.AnnotationForceNewCluster, got)
	}
	if err := e.c.KillContainer(ctx, e.ns, survivor, "etcd"); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, convergeTimeout, survivor+" restarted in place", func() bool {
		p := e2eutil.Pod(t, e.c, e.ns, survivor)
		return p != nil && p.UID == pod.UID && restarts(p) > restarts(pod) && podReady(p)
	})
	tc.waitReady(t, e.c, 3)
	// Ask the survivor itself: forced again, it would list itself alone while the others still
	// list three.
	e2eutil.WaitNoError(t, convergeTimeout, "the restarted survivor lists 3 members", func() error {
		cli, err := e2eutil.TLSMemberClientAs(t, e.c, e.ns, tc.name, survivor, tc.cfg, "root", tc.password)
		if err != nil {
			return err
		}
		defer func() { _ = cli.Close() }()
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := cli.MemberList(cctx)
		if err == nil && len(resp.Members) != 3 {
			err = fmt.Errorf("%d members", len(resp.Members))
		}
		return err
	})
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// testQuorumLossSnapshot: with quorumLoss RestoreLatestSnapshot the cluster is rolled back to
// its newest Complete snapshot: what it held is back, what came after is reported lost.
func (e *env) testQuorumLossSnapshot(t *testing.T) {
	tc := e.newCluster(t, "from-latest", 3, "latest-password", func(s *v1alpha2.EtcdClusterSpec) {
		s.QuorumLoss = v1alpha2.QuorumLossRestoreLatestSnapshot
	})
	tc.waitReady(t, e.c, 3)
	want := e.writeKeys(t, tc.root(t, e.c), "/snap/", 20)
	createSnapshot(t, e.c, e.ns, "latest", tc.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "latest")})
	mustComplete(t, waitSnapshot(t, e.c, e.ns, "latest"))
	start := time.Now()
	e.loseTwoMembers(t, tc.name)
	e2eutil.WaitFor(t, 2*convergeTimeout, "restored to 3 members", func() bool {
		cl := e2eutil.GetCluster(t, e.c, e.ns, tc.name)
		return cl.Status.ReadyMembers == 3 && len(e2eutil.Members(t, e.c, e.ns, tc.name)) == 3 &&
			cl.Annotations[v1alpha2.AnnotationRestoring] == ""
	})
	tc.waitReady(t, e.c, 3)
	took := time.Since(start)
	assertHas(t, tc.root(t, e.c), "/snap/", want)
	t.Logf("restored from the latest snapshot in %s", took.Round(time.Second))
}
