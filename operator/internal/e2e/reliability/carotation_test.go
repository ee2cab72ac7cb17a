//go:build e2e

package reliability

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// TestDuringCARotation: both planes' bring-your-own Secrets are replaced by certificates of a
// new CA while the workload runs through a client that follows the operator's active TLS
// material (widen the trust, serve the new leaves, narrow: two rollouts), with a fault at a
// random moment of it (the leader SIGKILLed; a longer campaign rotates again, to a new CA
// each time, with the other faults in turn: a follower killed, the operator, the leader
// partitioned, a follower's node stopped).
func TestDuringCARotation(t *testing.T) {
	cp := newCampaign(t, "CA rotation of both planes", "rot", 1)
	cp.pick = cp.statusPick // the workload's client is the only one that follows the rotation
	names := pki.ServerNames(pki.ClusterRef{Name: "rot", Namespace: cp.ns, ClusterDomain: cp.c.ClusterDomain()})
	issue := func(ca *pkitest.CA) map[string][]byte {
		return ca.SecretData(t, names.DNS, names.IPs, pkitest.ServerAndClient...)
	}
	ca := pkitest.NewCA(t, "rot-ca-0")
	e2eutil.CreateTLSSecret(t, cp.c, cp.ns, "rot-server", issue(ca))
	e2eutil.CreateTLSSecret(t, cp.c, cp.ns, "rot-peer", issue(ca))
	e2eutil.CreateCluster(t, cp.c, cp.ns, "rot", 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{
			Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "rot-server"}},
			Peer:   &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: "rot-peer"}}}
	})
	follow := e2eutil.FollowingTLSConfig(t, cp.c, cp.ns, "rot")
	e2eutil.WaitConvergedTLS(t, cp.c, cp.ns, "rot", 3, follow, convergeTimeout)
	cp.watch(e2eutil.TLSMembersClient(t, cp.c, cp.ns, "rot", follow))
	probe := e2eutil.TLSMembersClient(t, cp.c, cp.ns, "rot", follow) // the members keep their names through a rotation
	for i := range cp.faults {
		if i > 0 {
			cp.nextRound()
		}
		ca = pkitest.NewCA(t, fmt.Sprintf("rot-ca-%d", i+1))
		start := time.Now()
		e2eutil.SetSecretData(t, cp.c, cp.ns, "rot-server", issue(ca))
		e2eutil.SetSecretData(t, cp.c, cp.ns, "rot-peer", issue(ca))
		over := cp.injectSoon(cp.kind(i))
		cp.converge(start, fmt.Sprintf("rotation %d: both planes serving and trusting only the new CA", i+1), 2*convergeTimeout, over, func() bool {
			return rotatedTo(t, cp.c, cp.ns, "rot", ca.PEM) && e2eutil.ConvergedWith(t, cp.c, cp.ns, "rot", 3, probe)
		})
	}
	cp.finish()
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
