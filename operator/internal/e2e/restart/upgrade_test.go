//go:build e2e

package restart

import (
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// previousOperatorEnv names an operator binary of an earlier build; see docs/development.md.
const previousOperatorEnv = "LC_PREVIOUS_OPERATOR_BIN"

// upgradeTimeout bounds the move of a 3-member cluster onto the new build's template.
const upgradeTimeout = 3 * time.Minute

// The new build's upgrade survey logs one of these (operator/internal/manager/survey.go).
const (
	surveyNone  = "this operator build restarts no member"
	surveyRolls = "member Pods run another template than this operator build makes"
)

// userServerSecret is the user's certificate Secret, used on both planes.
const userServerSecret = "up-server"

// TestUpgradeFromPreviousOperator runs a full-mTLS 3-member cluster under the previous
// operator build, then replaces the operator with this tree's build while a client writes to
// every member. The new build first says whether it restarts members; then the cluster must
// move onto whatever this build's members run (for builds before the CA-rotation work: the
// operator's active TLS copies and a trust bundle) one member at a time — or, when the survey
// said so, restart none (a build that changes only the operator's code) — keep every member's
// etcd identity and lose no acknowledged write, and no member may ever distrust another's
// certificate.
//
// It needs a binary of the previous build, so it runs only when $LC_PREVIOUS_OPERATOR_BIN
// names one (a release check, not part of `make test`).
func TestUpgradeFromPreviousOperator(t *testing.T) {
	prev := os.Getenv(previousOperatorEnv)
	if prev == "" {
		t.Skipf("set %s to an operator binary of the previous build to test the upgrade from it", previousOperatorEnv)
	}
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	op := e2eutil.StartOperatorFrom(t, c, prev)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log, last lines:\n%s", op.LogTail(60))
		}
	})
	ns := e2eutil.NewNamespace(t, c)
	t.Cleanup(func() {
		if t.Failed() {
			logState(t, c, ns, "up")
		}
	})
	ca := e2eutil.CreateServerSecret(t, c, ns, userServerSecret, "up")
	e2eutil.CreateTLSSecret(t, c, ns, "up-operator", ca.ClientSecretData(t, "up-operator-client"))
	e2eutil.CreateCluster(t, c, ns, "up", 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: userServerSecret},
				OperatorClientSecretRef: &corev1.LocalObjectReference{Name: "up-operator"}},
			Peer: &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: userServerSecret}},
		}
	})
	cfg := e2eutil.TLSConfig(t, c, ns, userServerSecret, "up-operator")
	took := e2eutil.WaitConvergedTLS(t, c, ns, "up", 3, cfg, 5*time.Minute)
	t.Logf("previous operator: 3-member full-mTLS cluster converged in %s", took.Round(time.Millisecond))
	ids, pods := memberIdentities(t, c, ns, "up")

	cli := e2eutil.TLSMembersClient(t, c, ns, "up", cfg)
	w := e2eutil.StartWriter(cli, "upgrade")
	e2eutil.WaitFor(t, time.Minute, "the writer's first writes", func() bool { return w.Acked() > 10 })
	bin, err := e2eutil.OperatorBinary(c)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := op.Upgrade(bin); err != nil {
		t.Fatal(err)
	}
	// The new build says first what it restarts (the manager's upgrade survey).
	var rolls bool
	e2eutil.WaitFor(t, time.Minute, "the new build's upgrade survey in its log", func() bool {
		log := op.LogTail(2000)
		rolls = strings.Contains(log, surveyRolls)
		return rolls || strings.Contains(log, surveyNone)
	})
	t.Logf("the new build's survey: members to restart: %t", rolls)
	took = e2eutil.WaitFor(t, upgradeTimeout, "every member running this build's template", func() bool {
		return onActiveCopies(t, c, ns, "up")
	})
	e2eutil.WaitConvergedWith(t, c, ns, "up", 3, cli, time.Minute)
	trustFailures := w.TrustFailures()
	acked, failed, errs := w.Stop()
	e2eutil.VerifyWrites(t, cli, "upgrade", acked)
	t.Logf("upgrade: every member on the new template %s after the operator was replaced; %d writes acknowledged and all readable, "+
		"%d attempts failed and were retried (%d certificate or handshake errors; last errors %v)",
		took.Round(time.Millisecond), acked, failed, trustFailures, errs)
	if trustFailures != 0 {
		t.Errorf("%d writes failed on a certificate error during the upgrade", trustFailures)
	}
	idsAfter, podsAfter := memberIdentities(t, c, ns, "up")
	restarted := 0
	for name, id := range ids {
		if idsAfter[name] != id {
			t.Errorf("member %s: etcd ID %s became %q (a member was replaced, not restarted)", name, id, idsAfter[name])
		}
		if podsAfter[name] != pods[name] {
			restarted++
		}
	}
	// What the survey announced is what happened: every member restarted onto the new
	// template, or none (a build that changes only the operator's code restarts nothing).
	if want := map[bool]int{true: len(ids), false: 0}[rolls]; restarted != want {
		t.Errorf("%d of %d members' Pods restarted; the survey announced %d", restarted, len(ids), want)
	}
	t.Logf("upgrade took %s in all", time.Since(start).Round(time.Millisecond))
}

// memberIdentities maps each member to its etcd ID and to its Pod's UID.
func memberIdentities(t *testing.T, c *framework.Cluster, ns, cluster string) (ids, pods map[string]string) {
	t.Helper()
	ids, pods = map[string]string{}, map[string]string{}
	for _, m := range e2eutil.Members(t, c, ns, cluster) {
		ids[m.Name] = m.Status.MemberID
		if p := e2eutil.Pod(t, c, ns, m.Name); p != nil {
			pods[m.Name] = string(p.UID)
		}
	}
	return ids, pods
}

// onActiveCopies: every member's Pod is Ready, mounts a trust bundle, and mounts the operator's
// active copies instead of the user's Secret.
func onActiveCopies(t *testing.T, c *framework.Cluster, ns, cluster string) bool {
	for _, m := range e2eutil.Members(t, c, ns, cluster) {
		p := e2eutil.Pod(t, c, ns, m.Name)
		if p == nil || !p.DeletionTimestamp.IsZero() || !e2eutil.PodReady(p) {
			return false
		}
		mounted := map[string]bool{}
		for _, v := range p.Spec.Volumes {
			switch {
			case v.Secret != nil:
				mounted[v.Secret.SecretName] = true
			case v.Name == resources.TrustVolume && v.ConfigMap != nil:
				mounted[resources.TrustVolume] = true
			}
		}
		if mounted[userServerSecret] || !mounted[resources.TrustVolume] ||
			!mounted[v1alpha2.ActiveServerSecretName(cluster)] || !mounted[v1alpha2.ActivePeerSecretName(cluster)] {
			return false
		}
	}
	return e2eutil.GetCluster(t, c, ns, cluster).Status.Rollout == nil
}

// logState logs the cluster's conditions, its members' Pod volumes and the namespace's Events.
func logState(t *testing.T, c *framework.Cluster, ns, cluster string) {
	ec := e2eutil.GetCluster(t, c, ns, cluster)
	for _, cond := range ec.Status.Conditions {
		t.Logf("condition %s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	for _, m := range e2eutil.Members(t, c, ns, cluster) {
		if p := e2eutil.Pod(t, c, ns, m.Name); p != nil {
			var vols []string
			for _, v := range p.Spec.Volumes {
				switch {
				case v.Secret != nil:
					vols = append(vols, v.Name+"=secret/"+v.Secret.SecretName)
				case v.ConfigMap != nil:
					vols = append(vols, v.Name+"=configmap/"+v.ConfigMap.Name)
				}
			}
			t.Logf("member %s: Pod ready=%v volumes %v", m.Name, e2eutil.PodReady(p), vols)
		}
	}
	e2eutil.LogEvents(t, c, ns, time.Time{})
}
