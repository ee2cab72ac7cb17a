//go:build e2e

package realnodes

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// memRelease is the tenant chart installed with its members on tmpfs.
const memRelease = "mem"

// tmpfsMembers installs a release whose members keep their data in memory: every member's data
// guard (an init container from the built operator image) lets its etcd start. Then a node
// holding one of them loses power and comes back with a new boot ID: the operator replaces the
// member as rebooted, or the kubelet first starts the same Pod again on the empty memory volume
// and the guard refuses it; either way the other two keep quorum and the data.
func (s *suite) tmpfsMembers(t *testing.T) {
	release := helmrelease.New(t, s.c, memRelease, etcdNamespace)
	took := release.Install(t, helmrelease.RepoPath(t, "charts/etcd"), map[string]any{"storage": map[string]any{"medium": "Memory"}})
	t.Logf("helm install %s (storage.medium Memory): %s", memRelease, took.Round(time.Millisecond))
	took = s.waitReleaseAvailable(t, memRelease, etcdReplicas, 3*time.Minute)
	t.Logf("tmpfs cluster Available with %d members: %s", etcdReplicas, took.Round(time.Millisecond))
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, memRelease) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, m.Name)
		s.checkRanBuiltOperator(t, p, v1alpha2.DataGuardContainer)
		if term := initStatus(p, v1alpha2.DataGuardContainer).State.Terminated; term == nil || term.ExitCode != 0 {
			t.Errorf("Pod %s: data guard %+v, want it passed (exit 0)", p.Name, term)
		}
	}
	cfg := e2eutil.TLSConfig(t, s.c, etcdNamespace, memRelease+"-server-tls", memRelease+"-client-tls")
	cli := e2eutil.TLSEtcdClient(t, s.c, etcdNamespace, memRelease, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/e2e/real/mem", "kept by the others"); err != nil {
		t.Fatal(err)
	}
	s.powerCycleTmpfsMember(t)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "/e2e/real/mem")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the tmpfs cluster's /e2e/real/mem after the replacement: %v %v", err, resp)
	}
	release.Uninstall(t)
}

// powerCycleTmpfsMember stops and starts the node of a tmpfs member (not the operator's node)
// and waits for the member's replacement, which the new boot ID or the guard's refusal causes.
func (s *suite) powerCycleTmpfsMember(t *testing.T) {
	t.Helper()
	victim, node, idx := s.memberOffOperatorNode(t, memRelease)
	var refused atomic.Bool
	e2eutil.WatchPods(t, s.c, etcdNamespace, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", victim.Name).String()}, func(p *corev1.Pod) bool {
		if topology.DataGuardRefused(p) {
			refused.Store(true)
			return true
		}
		return false
	})
	bootID := s.bootID(t, node)
	start := time.Now()
	if err := s.c.StopNode(idx); err != nil {
		t.Fatal(err)
	}
	if err := s.c.StartNode(idx); err != nil {
		t.Fatal(err)
	}
	t.Logf("node %s (member %s) stopped and started again, Ready: %s", node, victim.Name, time.Since(start).Round(time.Millisecond))
	took := e2eutil.WaitSeen(t, 4*time.Minute, "member "+victim.Name+" replaced", func() (bool, string) {
		gone := !slices.ContainsFunc(e2eutil.Members(t, s.c, etcdNamespace, memRelease), func(m v1alpha2.EtcdMember) bool { return m.Name == victim.Name })
		ok, last := e2eutil.ClusterAvailable(s.c, etcdNamespace, memRelease, etcdReplicas)
		return gone && ok, last
	})
	rebooted := s.bootID(t, node) != bootID
	t.Logf("node %s has a new boot ID: %t; the data guard refused: %t; member %s replaced %s after the node came back",
		node, rebooted, refused.Load(), victim.Name, took.Round(time.Millisecond))
	if !refused.Load() && !rebooted {
		t.Errorf("member %s was replaced, but its node kept its boot ID and its data guard was never seen refusing the empty volume", victim.Name)
	}
	took = s.waitRestartedOn(t, node, start)
	t.Logf("the PVC-backed cluster's member on %s running again and Ready (same Pod, its volume kept): %s", node, took.Round(time.Millisecond))
	s.waitAvailable(t, etcdReplicas, 2*time.Minute)
}

// waitRestartedOn waits until the tenant cluster's member Pods on node run an etcd started after
// since and are Ready: the kubelet, back after the power cycle, started them again in a new
// sandbox.
func (s *suite) waitRestartedOn(t *testing.T, node string, since time.Time) time.Duration {
	t.Helper()
	return e2eutil.WaitSeen(t, 3*time.Minute, "the member Pods on "+node+" started again and Ready", func() (bool, string) {
		for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
			p := e2eutil.Pod(t, s.c, etcdNamespace, m.Name)
			if p == nil || p.Spec.NodeName != node {
				continue
			}
			run := containerStatus(p, "etcd").State.Running
			if run == nil || !run.StartedAt.After(since) || !e2eutil.PodReady(p) {
				return false, fmt.Sprintf("Pod %s: etcd %+v, ready %t", p.Name, containerStatus(p, "etcd").State, e2eutil.PodReady(p))
			}
		}
		return true, ""
	})
}

// waitReleaseAvailable is waitAvailable for another release of the tenant chart.
func (s *suite) waitReleaseAvailable(t *testing.T, release string, n int, timeout time.Duration) time.Duration {
	t.Helper()
	return e2eutil.WaitSeen(t, timeout, "EtcdCluster "+release+" Available", func() (bool, string) {
		return e2eutil.ClusterAvailable(s.c, etcdNamespace, release, n)
	})
}

func initStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, st := range p.Status.InitContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return corev1.ContainerStatus{}
}

// bootID is the boot ID node reports (a real node gets a new one at each start).
func (s *suite) bootID(t *testing.T, node string) string {
	t.Helper()
	var n corev1.Node
	if err := s.c.Client.Get(context.Background(), client.ObjectKey{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	return n.Status.NodeInfo.BootID
}
