package tlsmaterial

import (
	"context"
	"fmt"
	"net/url"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
)

// MemberRequirements are what a member's server and peer certificates must satisfy for the
// host it is registered with (before registration: the short form). A zero Requirement (empty
// What) means the plane has no TLS.
func MemberRequirements(m *v1alpha2.EtcdMember, clusterDomain string) (server, peer pki.Requirement) {
	host, _ := registeredHost(m)
	return requirementsAt(m, clusterDomain, host)
}

// registeredHost is the host of the member's registered peer URL, which its client URL shares;
// the short form before registration.
func registeredHost(m *v1alpha2.EtcdMember) (string, bool) {
	if peerURL, ok := v1alpha2.RegisteredPeerURL(m); ok {
		if u, err := url.Parse(peerURL); err == nil && u.Hostname() != "" {
			return u.Hostname(), true
		}
	}
	return v1alpha2.MemberHostOf(m), false
}

// requirementsAt: both certificates cover host, which the member advertises on both planes (the
// operator dials its client URL, peers its peer URL); the peer certificate is also accepted by
// peers as a client (pki.PeerClient). Both carry server auth, and client auth where etcd
// presents them as a client: always on the peer plane, on the client plane under mTLS (etcd's
// gateway dials its own listener with it).
func requirementsAt(m *v1alpha2.EtcdMember, clusterDomain, host string) (server, peer pki.Requirement) {
	t := m.Spec.TLS
	if t == nil {
		return
	}
	if t.ClientServerSecretRef != nil {
		usages := []pki.Usage{pki.UsageServerAuth}
		if t.ClientMTLS {
			usages = append(usages, pki.UsageClientAuth)
		}
		server = pki.Requirement{
			What:  fmt.Sprintf("server certificate (Secret %q) for member %s", t.ClientServerSecretRef.Name, m.Name),
			Names: pki.DialedNames(host), Usages: usages,
		}
	}
	if t.PeerSecretRef != nil {
		ref := pki.ClusterRef{Name: m.Spec.ClusterName, Namespace: m.Namespace, ClusterDomain: clusterDomain, Layout: m.Spec.Layout}
		client := pki.PeerClientNames(ref, m.Name)
		peer = pki.Requirement{
			What:       fmt.Sprintf("peer certificate (Secret %q) for member %s", t.PeerSecretRef.Name, m.Name),
			Names:      pki.DialedNames(host),
			PeerClient: &client,
			Usages:     []pki.Usage{pki.UsageServerAuth, pki.UsageClientAuth},
		}
	}
	return server, peer
}

// CheckMember validates the Secrets a member's Pod would mount, for the host it is registered
// with (before registration: for either form it may be registered with). It returns nil when
// they are fit; a *MissingSecretError when one does not exist yet; a *pki.ValidationError naming
// what is wrong (missing SANs, usages, chain, validity); or an API error.
func (s *Source) CheckMember(ctx context.Context, m *v1alpha2.EtcdMember, clusterDomain string) error {
	if host, ok := registeredHost(m); ok {
		return s.checkAt(ctx, m, clusterDomain, host)
	}
	_, err := s.RegistrationHost(ctx, m, clusterDomain)
	return err
}

// RegistrationHost is the form of its name a new member is registered with (the seed's initial
// cluster, MemberAddAsLearner), once its certificates are checked for it: the FQDN, which a
// starting member resolves from its own /etc/hosts, unless the certificates cover only the short
// .svc form, as those made for the public operator's members do. When neither fits, the error is
// the short form's: the least a certificate must cover.
func (s *Source) RegistrationHost(ctx context.Context, m *v1alpha2.EtcdMember, clusterDomain string) (string, error) {
	fqdn := v1alpha2.MemberFQDN(m, clusterDomain)
	err := s.checkAt(ctx, m, clusterDomain, fqdn)
	if v, invalid := pki.AsValidationError(err); !invalid || !v.Has(pki.ProblemMissingSAN) {
		return fqdn, err
	}
	short := v1alpha2.MemberHostOf(m)
	if err := s.checkAt(ctx, m, clusterDomain, short); err != nil {
		return "", err
	}
	return short, nil
}

func (s *Source) checkAt(ctx context.Context, m *v1alpha2.EtcdMember, clusterDomain, host string) error {
	if t := m.Spec.TLS; t != nil && (t.ClientServerSecretRef != nil || t.PeerSecretRef != nil) && t.TrustBundle == "" {
		return &MissingSecretError{Pending: "the operator has not prepared the cluster's trust bundle yet (a TLS Secret is not issued)"}
	}
	server, peer := requirementsAt(m, clusterDomain, host)
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
