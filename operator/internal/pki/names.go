// Package pki holds the pure TLS logic of the operator: which names an etcd member's
// certificates must cover, whether a given certificate does (with messages that name what is
// wrong), and the cert-manager Certificates the operator emits. Nothing here talks to the API
// server; controllers feed it Secret bytes and cluster specs.
package pki

import (
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// DefaultClusterDomain is the Kubernetes DNS domain when none is configured.
const DefaultClusterDomain = "cluster.local"

// LocalhostName is a SAN of every server and peer certificate: etcd's grpc-gateway, in-Pod
// probes and etcdctl dial the member itself.
const LocalhostName = "localhost"

// LoopbackIP is the IP SAN of every server and peer certificate, for the same reason.
var LoopbackIP = net.IPv4(127, 0, 0, 1)

// Names are the subject alternative names a certificate must carry (or covers).
type Names struct {
	DNS []string
	IPs []net.IP
}

// IPStrings are the IP SANs in the text form cert-manager's API takes.
func (n Names) IPStrings() []string {
	out := make([]string, 0, len(n.IPs))
	for _, ip := range n.IPs {
		out = append(out, ip.String())
	}
	return out
}

// ClusterRef identifies a cluster for naming: its name, namespace and the DNS domain the
// cluster's Services live under.
type ClusterRef struct {
	Name, Namespace, ClusterDomain string
	// Layout is the cluster's spec.layout (the Service names of an adopted cluster).
	Layout *v1alpha2.Layout
}

func (r ClusterRef) headless() string { return v1alpha2.HeadlessServiceName(r.Name, r.Layout) }
func (r ClusterRef) client() string   { return v1alpha2.ClientServiceName(r.Name, r.Layout) }

func (r ClusterRef) domain() string {
	if r.ClusterDomain == "" {
		return DefaultClusterDomain
	}
	return r.ClusterDomain
}

// serviceForms are the names a client may dial a Service by: the short name (same namespace),
// <svc>.<ns>, <svc>.<ns>.svc and the FQDN with the cluster domain.
func (r ClusterRef) serviceForms(svc string) []string {
	return []string{
		svc,
		fmt.Sprintf("%s.%s", svc, r.Namespace),
		fmt.Sprintf("%s.%s.svc", svc, r.Namespace),
		fmt.Sprintf("%s.%s.svc.%s", svc, r.Namespace, r.domain()),
	}
}

// memberWildcards cover every member's DNS name through the headless Service. Members are
// not ordinal (a replacement gets a new name), so a wildcard is the only SAN set that keeps
// covering the cluster as it is healed and scaled. The FQDN form is needed because peers
// verify each other by the name a reverse lookup returns, which carries the cluster domain.
func (r ClusterRef) memberWildcards() []string {
	h := r.headless()
	return []string{
		fmt.Sprintf("*.%s.%s.svc", h, r.Namespace),
		fmt.Sprintf("*.%s.%s.svc.%s", h, r.Namespace, r.domain()),
	}
}

// ServerNames are the SANs of the client-plane (server) certificate: every member through the
// headless Service, both Services in every form, and loopback.
func ServerNames(r ClusterRef) Names {
	dns := r.memberWildcards()
	dns = append(dns, r.serviceForms(r.headless())...)
	dns = append(dns, r.serviceForms(r.client())...)
	dns = append(dns, LocalhostName)
	return Names{DNS: dedupe(dns), IPs: []net.IP{LoopbackIP}}
}

// PeerNames are the SANs of the peer certificate. Peers dial each other only by member name,
// but the certificate doubles as a client certificate towards peers and is also presented on
// loopback by some tooling, so it carries the same set as the server certificate: a BYO
// Secret may then serve both planes.
func PeerNames(r ClusterRef) Names { return ServerNames(r) }

// DialedNames are the names a member's certificate must cover as a server on either plane: the
// host of the URL the member advertises there (its registered peer URL's host, which its client
// URL shares). It is the one name the operator, its agents and the peers dial; a BYO certificate
// that enumerates members instead of using a wildcard is accepted exactly when it covers the
// member about to start. Which other names clients dial (the Services, localhost) only their own
// configuration says: the certificates the operator issues cover them all (ServerNames), and a
// certificate that omits them is not refused for it.
func DialedNames(host string) Names { return Names{DNS: []string{host}} }

// PeerClient is what a member's peer certificate must carry to be accepted when the member
// presents it to a peer as a client. Every etcd peer listener checks a client certificate that
// has SANs against the connection's remote IP (go.etcd.io/etcd/client/pkg/transport,
// checkCertSAN): it passes when an IP SAN equals the IP, when a DNS SAN equals the name a
// reverse lookup of the IP returns (a wildcard "*.x" when that name ends in ".x"), or when a DNS
// SAN that is not a wildcard resolves to the IP. A Pod's IP is not known before it starts; its
// reverse name and the names that resolve to it are.
type PeerClient struct {
	// Reverse is the name a reverse lookup of the member's Pod IP returns: the FQDN of its
	// hostname under the headless Service, with the cluster domain.
	Reverse string
	// Resolving are the names that resolve to the member's Pod IP from a peer's Pod: the
	// member's own name in each form the peer's search path completes, and the headless
	// Service's (it publishes every member, ready or not).
	Resolving []string
}

// PeerClientNames is PeerClient for a member of the cluster. The FQDN wildcard the operator
// issues matches the reverse name; certificates that name only the short .svc forms (as
// Cozystack's do) pass through the headless Service's name, which resolves to every member.
func PeerClientNames(r ClusterRef, member string) PeerClient {
	h := r.headless()
	host := v1alpha2.MemberHost(member, h, r.Namespace)
	fqdn := host + "." + r.domain()
	resolving := []string{member + "." + h, fmt.Sprintf("%s.%s.%s", member, h, r.Namespace), host, fqdn}
	return PeerClient{Reverse: fqdn, Resolving: append(resolving, r.serviceForms(h)...)}
}

// accepts applies etcd's check to the certificate's SANs, with the Pod IP unknown.
func (p PeerClient) accepts(c *x509.Certificate) bool {
	if len(c.DNSNames) == 0 {
		return len(c.IPAddresses) == 0 // no SAN at all: etcd does not check
	}
	for _, san := range c.DNSNames {
		if suffix, wild := strings.CutPrefix(san, "*"); wild {
			if strings.HasPrefix(suffix, ".") && strings.HasSuffix(p.Reverse, suffix) {
				return true
			}
			continue
		}
		if san == p.Reverse || slices.Contains(p.Resolving, san) {
			return true
		}
	}
	return false
}

// problem says what the certificate lacks for peers to accept it.
func (p PeerClient) problem() string {
	return fmt.Sprintf("is refused by peers when the member presents it as a client: etcd matches it with the member's Pod IP, "+
		"so a SAN must be %q (what a reverse lookup of the Pod IP returns; a wildcard it ends in counts) or, without a wildcard, "+
		"a name that resolves to the Pod: %s", p.Reverse, quoteAll(p.Resolving))
}

func dedupe(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
