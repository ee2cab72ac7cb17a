//go:build e2e

package tls

import (
	"bytes"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// rotationTimeout bounds a whole CA rotation: cert-manager re-issues four certificates, and the
// operator rolls every member twice (widen, narrow).
const rotationTimeout = 5 * time.Minute

// testCARotation rotates the CA behind the cluster's Issuer while a client writes continuously:
// cert-manager renews the CA Certificate (a new key), then re-issues the three leaf Certificates
// from the new CA, as `cmctl renew` would. The operator must widen every member's trust, serve
// the new leaves, and narrow the trust to the new CA; every write must succeed.
func testCARotation(t *testing.T, c *framework.Cluster, ns, cluster string) {
	before := e2eutil.PodIdentities(t, c, ns, cluster)
	// A client as kube-apiserver is configured: every member's URL, TLS material that follows the
	// operator's active Secrets.
	cli := e2eutil.TLSMembersClient(t, c, ns, cluster, e2eutil.FollowingTLSConfig(t, c, ns, cluster))
	w := e2eutil.StartWriter(cli, "ca-rotation")
	e2eutil.WaitFor(t, time.Minute, "the writer's first writes", func() bool { return w.Acked() > 10 })

	oldCA := e2eutil.SecretData(t, c, ns, "etcd-ca")[pki.KeyCert]
	start := time.Now()
	e2eutil.TriggerRenewal(t, c, ns, "etcd-ca")
	var newCA []byte
	e2eutil.WaitFor(t, issueTimeout, "a new CA", func() bool {
		newCA = e2eutil.SecretData(t, c, ns, "etcd-ca")[pki.KeyCert]
		return !bytes.Equal(newCA, oldCA)
	})
	for _, name := range []string{v1alpha2.ServerCertificateName(cluster), v1alpha2.OperatorClientCertificateName(cluster), v1alpha2.PeerCertificateName(cluster)} {
		e2eutil.TriggerRenewal(t, c, ns, name)
	}
	took := e2eutil.WaitFor(t, rotationTimeout, "every member serving and trusting only the new CA", func() bool {
		return e2eutil.RotatedTo(t, c, ns, cluster, newCA)
	})
	refused, trustFailures := w.Refused(), w.TrustFailures()
	acked, failed, errs := w.Stop()
	e2eutil.VerifyWrites(t, cli, "ca-rotation", acked)
	t.Logf("CA rotation: %s from the CA renewal to every member trusting only the new CA; %d writes acknowledged and all readable; "+
		"%d attempts failed and were retried: %d refused by etcd while leadership moved, %d certificate or handshake errors (last errors %v)",
		took.Round(time.Millisecond), acked, failed, refused, trustFailures, errs)
	// A rotation restarts every member twice and moves leadership twice. etcd refuses a proposal
	// made to the leader during the move and silently drops one a follower forwards then (the
	// follower's request times out), so a few attempts can fail whatever the operator does, as in
	// any rolling restart. What a rotation itself could cause, and must not, is a member or the
	// client distrusting the other's certificate.
	if trustFailures != 0 {
		t.Errorf("%d writes failed on a certificate or handshake error during the CA rotation (last errors %v)", trustFailures, errs)
	}
	after := e2eutil.PodIdentities(t, c, ns, cluster)
	for name, id := range before {
		if after[name] == id {
			t.Errorf("member %s was not restarted: its trust bundle cannot have changed", name)
		}
	}
	for _, reason := range []string{v1alpha2.ReasonTrustWidened, v1alpha2.ReasonCertificateApplied, v1alpha2.ReasonTrustNarrowed} {
		if e2eutil.FindEvent(t, c, ns, cluster, reason) == nil {
			t.Errorf("no %s Event on the cluster", reason)
		}
	}
	t.Logf("rotation took %s in all", time.Since(start).Round(time.Millisecond))
	if t.Failed() {
		e2eutil.LogEvents(t, c, ns, start)
	}
}
