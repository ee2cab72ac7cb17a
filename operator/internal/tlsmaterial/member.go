package tlsmaterial

import (
	"context"
	"fmt"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// MemberRequirements are what a member's server and peer certificates must satisfy: cover the
// member's own names (and, for the server, both Services and loopback), carry server auth,
// and client auth where etcd presents the certificate as a client (always on the peer plane;
// on the client plane under mTLS, where etcd's gateway dials its own listener with it).
// A zero Requirement (empty What) means the plane has no TLS.
func MemberRequirements(m *v1alpha2.EtcdMember, clusterDomain string) (server, peer pki.Requirement) {
	t := m.Spec.TLS
	if t == nil {
		return
	}
	ref := pki.ClusterRef{Name: m.Spec.ClusterName, Namespace: m.Namespace, ClusterDomain: clusterDomain, Layout: m.Spec.Layout}
	if t.ClientServerSecretRef != nil {
		usages := []pki.Usage{pki.UsageServerAuth}
		if t.ClientMTLS {
			usages = append(usages, pki.UsageClientAuth)
		}
		server = pki.Requirement{
			What:  fmt.Sprintf("server certificate (Secret %q) for member %s", t.ClientServerSecretRef.Name, m.Name),
			Names: pki.MemberServerNames(ref, m.Name), Usages: usages,
		}
	}
	if t.PeerSecretRef != nil {
		peer = pki.Requirement{
			What:   fmt.Sprintf("peer certificate (Secret %q) for member %s", t.PeerSecretRef.Name, m.Name),
			Names:  pki.MemberPeerNames(ref, m.Name),
			Usages: []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth},
		}
	}
	return server, peer
}

// CheckMember validates the Secrets a member's Pod would mount. It returns nil when they are
// fit; a *MissingSecretError when one does not exist yet; a *pki.ValidationError naming what
// is wrong (missing SANs, usages, chain, validity); or an API error.
func (s *Source) CheckMember(ctx context.Context, m *v1alpha2.EtcdMember, clusterDomain string) error {
	if t := m.Spec.TLS; t != nil && (t.ClientServerSecretRef != nil || t.PeerSecretRef != nil) && t.TrustBundle == "" {
		return &MissingSecretError{Pending: "the operator has not prepared the cluster's trust bundle yet (a TLS Secret is not issued)"}
	}
	server, peer := MemberRequirements(m, clusterDomain)
	type check struct {
		secret string
		req    pki.Requirement
	}
	var checks []check
	if t := m.Spec.TLS; t != nil && t.ClientServerSecretRef != nil {
		checks = append(checks, check{t.ClientServerSecretRef.Name, server})
	}
	if t := m.Spec.TLS; t != nil && t.PeerSecretRef != nil {
		checks = append(checks, check{t.PeerSecretRef.Name, peer})
	}
	for _, ch := range checks {
		sec, err := s.Secret(ctx, m.Namespace, ch.secret)
		if err != nil {
			return err
		}
		if err := pki.ValidateSecretData(sec.Data, ch.req); err != nil {
			return err
		}
	}
	return nil
}
