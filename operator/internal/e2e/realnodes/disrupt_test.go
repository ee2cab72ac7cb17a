//go:build e2e

package realnodes

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// upgradeEtcd upgrades the tenant release with values merged into those set so far (Helm's
// ResetValues: the release gets exactly what the platform passes).
func (s *suite) upgradeEtcd(t *testing.T, values map[string]any) {
	t.Helper()
	if s.etcdValues == nil {
		s.etcdValues = map[string]any{}
	}
	for k, v := range values {
		s.etcdValues[k] = v
	}
	took := s.etcd.Upgrade(t, helmrelease.RepoPath(t, "charts/etcd"), s.etcdValues)
	t.Logf("helm upgrade %s %v: %s", s.etcd.Name, values, took.Round(time.Millisecond))
}

// startWriter writes under prefix through every member's own endpoint, as kube-apiserver does.
func (s *suite) startWriter(t *testing.T, prefix string) *e2eutil.Writer {
	t.Helper()
	return e2eutil.StartWriter(e2eutil.TLSMembersClient(t, s.c, etcdNamespace, etcdRelease, s.clientTLS), prefix)
}

// stopWriter stops w and fails the test if an acknowledged write is not readable, or, when
// strict, if an attempt failed for another reason than etcd refusing a proposal while
// leadership moved (nothing applied; the client retries it).
func (s *suite) stopWriter(t *testing.T, w *e2eutil.Writer, prefix string, strict bool) {
	t.Helper()
	refused := w.Refused()
	acked, failed, lastErrs := w.Stop()
	t.Logf("writes under %s: %d acknowledged, %d failed attempts (%d refused during a leader change; retried) %v", prefix, acked, failed, refused, lastErrs)
	if acked == 0 {
		t.Errorf("no write under %s was acknowledged", prefix)
	}
	if strict && failed != refused {
		t.Errorf("%d write attempts under %s failed otherwise than by a leader-change refusal: %v", failed-refused, prefix, lastErrs)
	}
	e2eutil.VerifyWrites(t, e2eutil.TLSEtcdClient(t, s.c, etcdNamespace, etcdRelease, s.clientTLS), prefix, acked)
}

// scaleUnderWrites scales the release 3 -> 5 -> 3 through the chart while a client writes.
func (s *suite) scaleUnderWrites(t *testing.T) {
	const prefix = "/e2e/real/scale"
	w := s.startWriter(t, prefix)
	for _, n := range []int{5, etcdReplicas} {
		s.upgradeEtcd(t, map[string]any{"replicas": n})
		took := s.waitAvailable(t, n, 3*time.Minute)
		t.Logf("scaled to %d: %s", n, took.Round(time.Millisecond))
	}
	s.stopWriter(t, w, prefix, true)
}

// podLoss deletes a member's Pod: the operator recreates it on the member's volume, so the
// member comes back under the same etcd member ID while the others keep serving writes (a
// request in flight on the member's connection fails and is retried; none is lost).
func (s *suite) podLoss(t *testing.T) {
	const prefix = "/e2e/real/podloss"
	victim := e2eutil.Members(t, s.c, etcdNamespace, etcdRelease)[1]
	old := e2eutil.Pod(t, s.c, etcdNamespace, victim.Name)
	w := s.startWriter(t, prefix)
	if err := s.c.Client.Delete(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	took := e2eutil.WaitSeen(t, 2*time.Minute, "member "+victim.Name+"'s Pod recreated and Ready", func() (bool, string) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, victim.Name)
		if p == nil || p.UID == old.UID {
			return false, "the old Pod or none"
		}
		return e2eutil.PodReady(p), string(p.Status.Phase)
	})
	t.Logf("Pod %s deleted; a new one Ready after %s", victim.Name, took.Round(time.Millisecond))
	s.waitAvailable(t, etcdReplicas, 2*time.Minute)
	s.stopWriter(t, w, prefix, false)
	after := s.member(t, victim.Name)
	if after.Status.MemberID != victim.Status.MemberID {
		t.Errorf("member %s came back as etcd member %s, want %s (its volume kept)", victim.Name, after.Status.MemberID, victim.Status.MemberID)
	}
}

// containerKill kills a member's etcd container through the runtime: the kubelet restarts it in
// the same Pod, counts the restart and records the kill as the last state; no acknowledged
// write is lost (one in flight on the killed member fails and is retried).
func (s *suite) containerKill(t *testing.T) {
	const prefix = "/e2e/real/kill"
	victim := e2eutil.Members(t, s.c, etcdNamespace, etcdRelease)[0].Name
	before := e2eutil.Pod(t, s.c, etcdNamespace, victim)
	restarts := containerStatus(before, "etcd").RestartCount
	w := s.startWriter(t, prefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.c.KillContainer(ctx, etcdNamespace, victim, "etcd"); err != nil {
		t.Fatal(err)
	}
	var after *corev1.Pod
	took := e2eutil.WaitSeen(t, 2*time.Minute, "the kubelet restarting etcd in Pod "+victim, func() (bool, string) {
		after = e2eutil.Pod(t, s.c, etcdNamespace, victim)
		if after == nil {
			return false, "no Pod"
		}
		st := containerStatus(after, "etcd")
		return after.UID == before.UID && st.RestartCount == restarts+1 && e2eutil.PodReady(after),
			fmt.Sprintf("uid %s, restarts %d, ready %t", after.UID, st.RestartCount, e2eutil.PodReady(after))
	})
	t.Logf("etcd of %s killed; restarted in the same Pod and Ready after %s", victim, took.Round(time.Millisecond))
	if term := containerStatus(after, "etcd").LastTerminationState.Terminated; term == nil || term.ExitCode != 137 {
		t.Errorf("Pod %s etcd's last state %+v, want terminated by SIGKILL (exit code 137)", victim, term)
	}
	s.waitAvailable(t, etcdReplicas, 2*time.Minute)
	s.stopWriter(t, w, prefix, false)
}

func containerStatus(p *corev1.Pod, name string) corev1.ContainerStatus {
	for _, st := range p.Status.ContainerStatuses {
		if st.Name == name {
			return st
		}
	}
	return corev1.ContainerStatus{}
}

// member is the tenant cluster's EtcdMember of that name.
func (s *suite) member(t *testing.T, name string) v1alpha2.EtcdMember {
	t.Helper()
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no EtcdMember %s", name)
	return v1alpha2.EtcdMember{}
}
