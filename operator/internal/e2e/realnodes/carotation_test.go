//go:build e2e

package realnodes

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/trust"
)

// The chart's CA (charts/etcd's pki mode) and the Certificates it signs.
const (
	etcdCASecret   = etcdRelease + "-ca-tls"
	etcdPeerSecret = etcdRelease + "-peer-tls"
)

var etcdLeafCertificates = []string{etcdRelease + "-server", etcdRelease + "-peer", etcdRelease + "-client"}

// caRotationTimeout bounds a whole CA rotation on real nodes: cert-manager issues a CA and three
// leaves, and the operator rolls the 3 members twice (widen, narrow), each new Pod started by a
// kubelet and gated on its readiness probe.
const caRotationTimeout = 6 * time.Minute

// rotationPhases are the times, from the old CA Secret's deletion, at which cert-manager issued
// the new CA (issued), every member Pod not being deleted mounted a trust bundle holding both CAs
// (widened: the operator's gate for the swap; the last member's old Pod may still be terminating
// on a real kubelet, and its new Pod starts on the widened bundle or a later one), the active
// Secrets held leaves of the new CA (swapped), and every member was Ready trusting the new CA
// alone (narrowed). Each state lasts once reached, so a poll that comes late still sees it.
type rotationPhases struct{ issued, widened, swapped, narrowed time.Duration }

// rotateCA gives the chart's PKI a new CA, with a new key, while a client writes: the chart's CA
// keeps its key on renewal (rotationPolicy Never, so that Kamaji keeps trusting it), so a rotation
// deletes the CA Secret and cert-manager issues a new key and certificate; then the three leaf
// Certificates are renewed from it, as `cmctl renew` does. The operator widens the members' trust
// bundle (a rollout of new Pods on the kubelets), copies the new leaves into the active Secrets and
// the kubelets sync them, then narrows the bundle (a second rollout). The client follows the active
// Secrets, as one told to trust the active server Secret's ca.crt does: no acknowledged write may be
// lost and no attempt may fail on a certificate or handshake error; at the end every member serves
// leaves of the new CA on both planes.
func (s *suite) rotateCA(t *testing.T) {
	const prefix = "/e2e/real/ca"
	before := e2eutil.PodIdentities(t, s.c, etcdNamespace, etcdRelease)
	following := e2eutil.FollowingTLSConfig(t, s.c, etcdNamespace, etcdRelease)
	cli := e2eutil.TLSMembersClient(t, s.c, etcdNamespace, etcdRelease, following)
	w := e2eutil.StartWriter(cli, prefix)
	e2eutil.WaitFor(t, time.Minute, "the writer's first writes", func() bool { return w.Acked() > 10 })

	oldCA := e2eutil.SecretData(t, s.c, etcdNamespace, etcdCASecret)[pki.KeyCert]
	start := time.Now()
	newCA := s.reissueCA(t, oldCA)
	ph := rotationPhases{issued: time.Since(start)}
	for _, name := range etcdLeafCertificates {
		e2eutil.TriggerRenewal(t, s.c, etcdNamespace, name)
	}
	e2eutil.WaitFor(t, caRotationTimeout, "every member serving and trusting only the new CA", func() bool {
		return s.observeRotation(t, &ph, start, oldCA, newCA)
	})
	t.Logf("CA rotation, from the old CA Secret's deletion: new CA issued at %s; widened (every member Pod not being deleted on a bundle of both CAs) at %s; "+
		"swapped (the active Secrets hold leaves of the new CA) at %s; narrowed (every member Ready trusting the new CA alone) at %s",
		round(ph.issued), round(ph.widened), round(ph.swapped), round(ph.narrowed))

	s.clientTLS = e2eutil.TLSConfig(t, s.c, etcdNamespace, etcdServerSecret, etcdClientSecret)
	for _, p := range []struct {
		port   int
		secret string
	}{{v1alpha2.ClientPort, etcdServerSecret}, {v1alpha2.PeerPort, etcdPeerSecret}} {
		serial, took := e2eutil.WaitServed(t, s.c, etcdNamespace, etcdRelease, servingTimeout, p.port, s.clientTLS, p.secret)
		t.Logf("every member serves on :%d serial %x of the new CA (%s more)", p.port, serial, round(took))
	}

	trustFailures, refused := w.TrustFailures(), w.Refused()
	acked, failed, errs := w.Stop()
	e2eutil.VerifyWrites(t, e2eutil.TLSEtcdClient(t, s.c, etcdNamespace, etcdRelease, s.clientTLS), prefix, acked)
	t.Logf("writes under %s: %d acknowledged and all readable; %d failed attempts, retried: %d refused while leadership moved, "+
		"%d certificate or handshake errors (last errors %v)", prefix, acked, failed, refused, trustFailures, errs)
	// Each rollout restarts every member and moves leadership (the leader goes last): etcd refuses a
	// proposal made during the move and drops one a follower forwards then, whatever the operator
	// does. What the rotation itself could cause, and must not, is a side distrusting the other.
	if trustFailures != 0 {
		t.Errorf("%d writes failed on a certificate or handshake error during the CA rotation (last errors %v)", trustFailures, errs)
	}
	after := e2eutil.PodIdentities(t, s.c, etcdNamespace, etcdRelease)
	for name, id := range before {
		if after[name] == id {
			t.Errorf("member %s was not restarted: etcd reads its trust bundle only at start", name)
		}
	}
	for _, reason := range []string{v1alpha2.ReasonTrustWidened, v1alpha2.ReasonTrustNarrowed} {
		if e2eutil.FindEvent(t, s.c, etcdNamespace, etcdRelease, reason) == nil {
			t.Errorf("no %s Event on the cluster", reason)
		}
	}
	t.Logf("CA rotation under writes: %s in all", round(time.Since(start)))
	if t.Failed() {
		e2eutil.LogEvents(t, s.c, etcdNamespace, start)
	}
}

// reissueCA deletes the chart's CA Secret and waits until cert-manager has issued a CA with a
// new key in its place; it returns the new CA certificate.
func (s *suite) reissueCA(t *testing.T, oldCA []byte) []byte {
	t.Helper()
	secret := &corev1.Secret{}
	secret.Namespace, secret.Name = etcdNamespace, etcdCASecret
	if err := s.c.Client.Delete(context.Background(), secret); err != nil {
		t.Fatalf("delete the CA Secret %s: %v", etcdCASecret, err)
	}
	var newCA []byte
	e2eutil.WaitFor(t, 2*time.Minute, "cert-manager issuing a new CA into "+etcdCASecret, func() bool {
		got := &corev1.Secret{}
		if err := s.c.Client.Get(context.Background(), client.ObjectKeyFromObject(secret), got); err != nil {
			return false
		}
		newCA = got.Data[pki.KeyCert]
		return len(newCA) > 0 && !bytes.Equal(newCA, oldCA)
	})
	if bytes.Equal(publicKey(t, newCA), publicKey(t, oldCA)) {
		t.Fatalf("the new CA kept the old CA's key: no rotation")
	}
	return newCA
}

// observeRotation records in ph the first time each phase of the rotation is seen, and reports
// whether the rotation is over.
func (s *suite) observeRotation(t *testing.T, ph *rotationPhases, start time.Time, oldCA, newCA []byte) bool {
	if ph.widened == 0 && s.podsMount(t, oldCA, newCA) {
		ph.widened = time.Since(start)
	}
	if ph.swapped == 0 && trust.Verifies(newCA, e2eutil.SecretData(t, s.c, etcdNamespace, v1alpha2.ActiveServerSecretName(etcdRelease))[pki.KeyCert], time.Now()) {
		ph.swapped = time.Since(start)
	}
	if !e2eutil.RotatedTo(t, s.c, etcdNamespace, etcdRelease, newCA) {
		return false
	}
	ph.narrowed = time.Since(start)
	return true
}

// podsMount reports whether every member Pod not being deleted mounts a trust bundle holding all
// of cas on both planes, as the operator's swap gate (podsRunBundle) reads it.
func (s *suite) podsMount(t *testing.T, cas ...[]byte) bool {
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
		pod := e2eutil.Pod(t, s.c, etcdNamespace, m.Name)
		if pod == nil || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		bundle := s.trustBundle(t, pod)
		if bundle == nil {
			return false
		}
		for _, key := range []string{resources.TrustKeyClientCA, resources.TrustKeyPeerCA} {
			for _, ca := range cas {
				if have := []byte(bundle.Data[key]); !bytes.Equal(trust.Merge(have, ca), have) {
					return false
				}
			}
		}
	}
	return true
}

// trustBundle is the ConfigMap a member Pod mounts as its trust bundle, nil if none.
func (s *suite) trustBundle(t *testing.T, pod *corev1.Pod) *corev1.ConfigMap {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Name != resources.TrustVolume || v.ConfigMap == nil {
			continue
		}
		cm := &corev1.ConfigMap{}
		if err := s.c.Client.Get(context.Background(), client.ObjectKey{Namespace: pod.Namespace, Name: v.ConfigMap.Name}, cm); err != nil {
			return nil
		}
		return cm
	}
	return nil
}

// publicKey is the DER public key of a PEM certificate.
func publicKey(t *testing.T, certPEM []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(certPEM)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.RawSubjectPublicKeyInfo
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
