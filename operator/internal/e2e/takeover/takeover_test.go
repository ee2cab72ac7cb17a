//go:build e2e

// Package takeover: clusters left by the public cozystack/etcd-operator (it serves the same API
// group and version, so installing this operator in its place is the whole migration) are taken
// over in place while a client writes: the same etcd member IDs, EtcdMembers and volumes, no
// acknowledged write lost; then the operator scales them 3→5→3.
package takeover

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

const convergeTimeout = 8 * time.Minute

// identity is what a takeover must not change: each EtcdMember (by UID), its claim (by UID) and
// its etcd member ID.
type identity map[string]string

func identityOf(t *testing.T, c *framework.Cluster, pc *e2eutil.PublicCluster) identity {
	t.Helper()
	out := identity{}
	for _, m := range e2eutil.Members(t, c, pc.Namespace, pc.Name) {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: pc.Namespace, Name: v1alpha2.PVCName(m.Name)}, pvc); err != nil {
			t.Fatal(err)
		}
		out[m.Name] = string(m.UID) + "/" + string(pvc.UID) + "/" + m.Status.MemberID
	}
	return out
}

func (want identity) check(t *testing.T, got identity, when string) {
	t.Helper()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: member %s is member/claim/ID %q, was %q: a member was replaced", when, name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d members, were %d", when, len(got), len(want))
	}
}

// takenOver: the operator has observed the cluster's current spec, every member runs the
// template the operator renders (a rollout it needed is over), and the cluster has converged.
func takenOver(t *testing.T, c *framework.Cluster, pc *e2eutil.PublicCluster, n int) bool {
	ec := e2eutil.GetCluster(t, c, pc.Namespace, pc.Name)
	if ec.Status.ObservedGeneration != ec.Generation || ec.Status.Rollout != nil {
		return false
	}
	for _, m := range e2eutil.Members(t, c, pc.Namespace, pc.Name) {
		if m.Status.UpdateRevision == "" || m.Status.CurrentRevision != m.Status.UpdateRevision {
			return false
		}
	}
	return e2eutil.ConvergedWith(t, c, pc.Namespace, pc.Name, n, pc.Client)
}

// TestTakeOverPublicOperatorClusters: a plaintext cluster and one with Cozystack's TLS Secrets
// (RSA 4096, short .svc names only), built exactly as the public operator leaves them, are taken
// over by the operator started in its place.
func TestTakeOverPublicOperatorClusters(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	plainNS, tlsNS := e2eutil.NewNamespace(t, c), e2eutil.NewNamespace(t, c)
	clusters := []*e2eutil.PublicCluster{
		e2eutil.CreatePublicCluster(t, c, plainNS, "kv", 3, nil),
		// Cozystack's etcd app names its cluster etcd.
		e2eutil.CreatePublicCluster(t, c, tlsNS, "etcd", 3, e2eutil.CozystackTLS(t, c, tlsNS)),
	}
	t.Logf("clusters of the public operator built in %s", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, pc := range clusters {
				e2eutil.LogEvents(t, c, pc.Namespace, start)
				t.Logf("%s/%s status: %+v", pc.Namespace, pc.Name, e2eutil.GetCluster(t, c, pc.Namespace, pc.Name).Status)
			}
		}
	})
	before := make([]identity, len(clusters))
	pods := make([]map[string]types.UID, len(clusters))
	writers := make([]*e2eutil.Writer, len(clusters))
	for i, pc := range clusters {
		before[i], pods[i] = identityOf(t, c, pc), podUIDs(t, c, pc)
		writers[i] = e2eutil.StartWriter(pc.Client, "takeover")
	}
	e2eutil.StartSuiteOperator(t, c, 300)
	for i, pc := range clusters {
		took := e2eutil.WaitFor(t, convergeTimeout, pc.Namespace+"/"+pc.Name+" taken over", func() bool { return takenOver(t, c, pc, 3) })
		acked, failed, last := writers[i].Stop()
		t.Logf("%s taken over in %s; writes: %d acknowledged, %d failed attempts (retried; last %v)",
			pc.Name, took.Round(time.Millisecond), acked, failed, last)
		e2eutil.VerifyWrites(t, pc.Client, "takeover", acked)
		before[i].check(t, identityOf(t, c, pc), pc.Name+" after the takeover")
		checkMemberIDs(t, pc)
		checkRolled(t, c, pc, pods[i])
	}
	for _, pc := range clusters {
		t.Run("Scale/"+pc.Name, func(t *testing.T) { testScale(t, c, pc) })
	}
}

func podUIDs(t *testing.T, c *framework.Cluster, pc *e2eutil.PublicCluster) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for name := range pc.IDs {
		out[name] = e2eutil.Pod(t, c, pc.Namespace, name).UID
	}
	return out
}

// checkRolled: a plaintext cluster's Pods, which mount what the operator's template mounts,
// were kept; a TLS cluster's Pods, which mounted the cluster's Secrets themselves, were each
// restarted onto the operator's active copies.
func checkRolled(t *testing.T, c *framework.Cluster, pc *e2eutil.PublicCluster, before map[string]types.UID) {
	t.Helper()
	for name, uid := range before {
		pod := e2eutil.Pod(t, c, pc.Namespace, name)
		if pc.TLS == nil {
			if pod.UID != uid {
				t.Errorf("%s: Pod %s was restarted by the takeover of a plaintext cluster", pc.Name, name)
			}
			continue
		}
		active := v1alpha2.ActiveServerSecretName(pc.Name)
		if pod.UID == uid || !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == active }) {
			t.Errorf("%s: Pod %s was not restarted onto Secret %s", pc.Name, name, active)
		}
	}
}

// checkMemberIDs: etcd lists exactly the members the public operator made, by name and ID.
func checkMemberIDs(t *testing.T, pc *e2eutil.PublicCluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := pc.Client.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, m := range resp.Members {
		got[m.Name] = m.ID
	}
	for name, id := range pc.IDs {
		if got[name] != id {
			t.Errorf("%s: etcd member %s has ID %x, had %x", pc.Name, name, got[name], id)
		}
	}
	if len(got) != len(pc.IDs) {
		t.Errorf("%s: etcd lists %v, the public operator made %v", pc.Name, got, pc.IDs)
	}
}

// testScale: the operator scales the taken-over cluster 3→5→3 with a client writing; the members
// the public operator made stay (scale-down removes the newest).
func testScale(t *testing.T, c *framework.Cluster, pc *e2eutil.PublicCluster) {
	w := e2eutil.StartWriter(pc.Client, "scale")
	for _, n := range []int32{5, 3} {
		e2eutil.Scale(t, c, pc.Namespace, pc.Name, n)
		took := e2eutil.WaitFor(t, convergeTimeout, pc.Name+" converged", func() bool { return takenOver(t, c, pc, int(n)) })
		t.Logf("%s scaled to %d in %s", pc.Name, n, took.Round(time.Millisecond))
	}
	acked, failed, last := w.Stop()
	t.Logf("writes while scaling: %d acknowledged, %d failed attempts (retried; last %v)", acked, failed, last)
	e2eutil.VerifyWrites(t, pc.Client, "scale", acked)
	checkMemberIDs(t, pc)
	for _, m := range e2eutil.Members(t, c, pc.Namespace, pc.Name) {
		if _, ok := pc.IDs[m.Name]; !ok {
			t.Errorf("member %s outlived the scale-down; the public operator's members are %v", m.Name, pc.IDs)
		}
	}
}
