//go:build e2e

package reliability

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// TestDuringCARotation: both planes' bring-your-own Secrets are replaced by certificates of a
// new CA while the workload runs through a client that follows the operator's active TLS
// material (widen the trust, serve the new leaves, narrow: two rollouts); the leader is
// SIGKILLed at a random moment of it.
func TestDuringCARotation(t *testing.T) {
	c := e2eutil.InProcessCluster(t)
	ns := e2eutil.NewNamespace(t, c)
	const name = "rot"
	names := pki.ServerNames(pki.ClusterRef{Name: name, Namespace: ns, ClusterDomain: localcluster.ClusterDomain})
	issue := func(ca *pkitest.CA) map[string][]byte {
		return ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...)
	}
	oldCA := pkitest.NewCA(t, "rot-ca-1")
	e2eutil.CreateTLSSecret(t, c, ns, "rot-server", issue(oldCA))
	e2eutil.CreateTLSSecret(t, c, ns, "rot-peer", issue(oldCA))
	e2eutil.CreateCluster(t, c, ns, name, 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "rot-server"}},
			Peer:   &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "rot-peer"}}}
	})
	follow := e2eutil.FollowingTLSConfig(t, c, ns, name)
	e2eutil.WaitConvergedTLS(t, c, ns, name, 3, follow, convergeTimeout)
	h := e2eutil.StartHistory(e2eutil.TLSMembersClient(t, c, ns, name, follow), "/campaign", 4, 6)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 5))
	e2eutil.WaitFor(t, time.Minute, "the workload going", func() bool { return h.Len() > 50 })

	newCA := pkitest.NewCA(t, "rot-ca-2")
	start := time.Now()
	e2eutil.SetSecretData(t, c, ns, "rot-server", issue(newCA))
	e2eutil.SetSecretData(t, c, ns, "rot-peer", issue(newCA))
	time.Sleep(time.Duration(r.IntN(3000)) * time.Millisecond) // a random moment of the rotation: the point of the campaign
	killLeader(t, c, ns, name)
	probe := e2eutil.TLSMembersClient(t, c, ns, name, follow) // the members keep their names through a rotation
	e2eutil.WaitFor(t, 2*convergeTimeout, "both planes serving and trusting only the new CA", func() bool {
		return rotatedTo(t, c, ns, name, newCA.PEM) && e2eutil.ConvergedWith(t, c, ns, name, 3, probe)
	})
	rep := h.StopAndCheck(t, t.TempDir())
	t.Logf("campaign during a CA rotation of both planes: 1 fault, %d operations, %d unknown outcomes, linearizable %v, converged %s after the Secrets changed",
		rep.Ops, rep.Unknown, rep.Linearizable, time.Since(start).Round(100*time.Millisecond))
}

// rotatedTo: the active server and peer Secrets trust only ca and serve its leaves, and no
// rollout is left.
func rotatedTo(t *testing.T, c *framework.Cluster, ns, cluster string, ca []byte) bool {
	want := trust.Merge(nil, ca)
	for _, s := range []string{v1alpha2.ActiveServerSecretName(cluster), v1alpha2.ActivePeerSecretName(cluster)} {
		d := e2eutil.SecretData(t, c, ns, s)
		if !bytes.Equal(d[pki.KeyCA], want) || !trust.Verifies(want, d[pki.KeyCert], time.Now()) {
			return false
		}
	}
	return e2eutil.GetCluster(t, c, ns, cluster).Status.Rollout == nil
}

// killLeader SIGKILLs the member the cluster's status names leader (no etcd client needed, so
// it works whatever TLS the cluster has).
func killLeader(t *testing.T, c *framework.Cluster, ns, cluster string) {
	t.Helper()
	var victim string
	e2eutil.WaitFor(t, time.Minute, "a leader in the cluster's status", func() bool {
		for _, m := range e2eutil.GetCluster(t, c, ns, cluster).Status.Members {
			if m.Role == "Leader" {
				victim = m.Name
				return true
			}
		}
		return false
	})
	if err := c.KillContainer(context.Background(), ns, victim, "etcd"); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL %s (leader)", victim)
}
