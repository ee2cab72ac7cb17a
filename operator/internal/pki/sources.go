package pki

import "github.com/cozystack/etcd-operator/operator/api/v1alpha2"

// SecretNames are the Secrets a cluster's TLS material is read from, whatever their source
// (BYO or emitted); empty when the plane or the operator-client source is absent.
type SecretNames struct {
	Server, OperatorClient, Peer string
}

// SecretsOf resolves a cluster's TLS Secrets.
func SecretsOf(c *v1alpha2.EtcdCluster) SecretNames {
	var n SecretNames
	if c.Spec.TLS == nil {
		return n
	}
	if cl := c.Spec.TLS.Client; cl != nil {
		switch {
		case cl.ServerSecretRef != nil:
			n.Server = cl.ServerSecretRef.Name
		case cl.CertManager != nil:
			n.Server = v1alpha2.ServerSecretName(c.Name)
		}
		switch {
		case cl.OperatorClientSecretRef != nil:
			n.OperatorClient = cl.OperatorClientSecretRef.Name
		case cl.CertManager != nil && cl.CertManager.OperatorClientIssuerRef != nil:
			n.OperatorClient = v1alpha2.OperatorClientSecretName(c.Name)
		}
	}
	if p := c.Spec.TLS.Peer; p != nil {
		switch {
		case p.SecretRef != nil:
			n.Peer = p.SecretRef.Name
		case p.CertManager != nil:
			n.Peer = v1alpha2.PeerSecretName(c.Name)
		}
	}
	return n
}
