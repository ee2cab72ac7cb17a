package migrate

import (
	"crypto/x509"
	"encoding/pem"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// translateAuth carries etcd auth over as it is, with no moment in which auth is off: the
// legacy operator's root has no password and is reached by a client certificate whose CN is
// root, which is spec.auth.passwordlessRoot. The operator acts as root with that certificate
// (the legacy clientSecret) to create its own etcd user on its first pass. Auth being on is
// latched in status, so the operator never dials anonymously.
func translateAuth(l *legacy.EtcdCluster, in Input, c *v1alpha2.EtcdCluster, fs *Findings) {
	if !in.Live.AuthEnabled && !legacy.AuthEnabled(l) {
		return
	}
	if !in.Live.AuthEnabled {
		fs.warn("spec.security.enableAuth", "is true but etcd has auth off: the operator enables it (root without a password) once it takes over")
	}
	client := c.Spec.TLS.Client
	if client == nil || client.OperatorClientSecretRef == nil {
		fs.block("spec.security.enableAuth", "auth is on but there is no client certificate (spec.security.tls.clientSecret): "+
			"the legacy root has no password, so only a certificate with CN root can act as it")
		return
	}
	name := client.OperatorClientSecretRef.Name
	if cn, ok := commonName(in.Secrets[name][pki.KeyCert]); ok && cn != v1alpha2.RootUser {
		fs.block("spec.security.tls.clientSecret", "Secret %s's certificate has CN %q: with auth on the operator acts as root "+
			"through it, which needs CN %q", name, cn, v1alpha2.RootUser)
		return
	}
	c.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, PasswordlessRoot: true}
	c.Status.AuthEnabled = in.Live.AuthEnabled
}

// commonName is the CN of a PEM certificate; ok is false when there is none to read (a missing
// Secret is already a blocker of its own).
func commonName(certPEM []byte) (string, bool) {
	b, _ := pem.Decode(certPEM)
	if b == nil {
		return "", false
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return "", false
	}
	return cert.Subject.CommonName, true
}
