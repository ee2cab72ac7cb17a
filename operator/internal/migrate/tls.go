package migrate

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// translateTLS maps the legacy operator's six Secrets onto this operator's planes. This operator
// reads each plane's CA from the ca.crt of the plane's own Secret, so a CA kept only in a
// separate legacy "trusted CA" Secret cannot be carried over: members restarted later would stop
// trusting the peers or clients the legacy ones trusted. Those cases are blockers.
func translateTLS(l *legacy.EtcdCluster, secrets map[string]map[string][]byte, s *v1alpha2.EtcdClusterSpec, fs *Findings) {
	t := legacy.TLSSpec{}
	if l.Spec.Security != nil {
		t = l.Spec.Security.TLS
	}
	s.TLS = &v1alpha2.TLSSpec{}
	if t.PeerSecret == "" {
		s.TLS.Peer = &v1alpha2.PeerTLS{AutoTLS: true}
		fs.warn("spec.security.tls.peerSecret", "unset: peers run --peer-auto-tls (encrypted, unauthenticated) and keep doing so "+
			"(spec.tls.peer.autoTLS); set spec.tls.peer.secretRef or certManager afterwards to move them to peer mTLS")
	} else {
		s.TLS.Peer = &v1alpha2.PeerTLS{SecretRef: &corev1.LocalObjectReference{Name: t.PeerSecret}}
		checkTLSSecret(secrets, "spec.security.tls.peerSecret", t.PeerSecret, fs)
		sameCA(secrets, "spec.security.tls.peerTrustedCASecret", t.PeerTrustedCASecret, t.PeerSecret, fs)
	}
	if t.ServerSecret == "" {
		if t.ClientSecret != "" {
			fs.block("spec.security.tls.clientSecret", "is set without serverSecret: client certificates over plaintext cannot be carried over")
		}
		s.TLS.Client = nil
		return
	}
	s.TLS.Client = &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: t.ServerSecret}}
	checkTLSSecret(secrets, "spec.security.tls.serverSecret", t.ServerSecret, fs)
	if t.ServerTrustedCASecret != "" && !bytes.Equal(caOf(secrets[t.ServerTrustedCASecret]), caOf(secrets[t.ServerSecret])) {
		fs.warn("spec.security.tls.serverTrustedCASecret", "differs from %s's ca.crt, which the operator verifies members with from now on", t.ServerSecret)
	}
	if t.ClientSecret != "" {
		s.TLS.Client.OperatorClientSecretRef = &corev1.LocalObjectReference{Name: t.ClientSecret}
		checkTLSSecret(secrets, "spec.security.tls.clientSecret", t.ClientSecret, fs)
		if ca := caOf(secrets[t.ClientTrustedCASecret]); t.ClientTrustedCASecret != "" &&
			!bytes.Equal(ca, caOf(secrets[t.ServerSecret])) && !bytes.Equal(ca, caOf(secrets[t.ClientSecret])) {
			fs.block("spec.security.tls.clientTrustedCASecret", "its CA is neither %s's nor %s's ca.crt: members the operator restarts "+
				"would refuse the client certificates it signed", t.ServerSecret, t.ClientSecret)
		}
	}
}

// checkTLSSecret: the Secret exists with a key pair and the ca.crt the operator trusts.
func checkTLSSecret(secrets map[string]map[string][]byte, field, name string, fs *Findings) {
	data, ok := secrets[name]
	switch {
	case !ok:
		fs.block(field, "Secret %s does not exist", name)
	case len(data[pki.KeyCert]) == 0 || len(data[pki.KeyKey]) == 0:
		fs.block(field, "Secret %s has no %s and %s", name, pki.KeyCert, pki.KeyKey)
	case len(data[pki.KeyCA]) == 0:
		fs.block(field, "Secret %s has no %s: the operator takes the plane's CA from it", name, pki.KeyCA)
	}
}

// sameCA: a separate trusted-CA Secret holds the CA of the plane's own Secret.
func sameCA(secrets map[string]map[string][]byte, field, caSecret, secret string, fs *Findings) {
	if caSecret == "" || bytes.Equal(caOf(secrets[caSecret]), caOf(secrets[secret])) {
		return
	}
	fs.block(field, "Secret %s's CA differs from %s's ca.crt, the only CA the operator lets members trust on that plane", caSecret, secret)
}

// caOf is a CA Secret's certificate: ca.crt, or tls.crt where cert-manager's CA Secrets keep it.
func caOf(data map[string][]byte) []byte {
	if ca := data[pki.KeyCA]; len(ca) > 0 {
		return bytes.TrimSpace(ca)
	}
	return bytes.TrimSpace(data[pki.KeyCert])
}
