// Package pki holds the pure TLS logic of the operator: which names an etcd member's
// certificates must cover, whether a given certificate does (with messages that name what is
// wrong), and the cert-manager Certificates the operator emits. Nothing here talks to the API
// server; controllers feed it Secret bytes and cluster specs.
package pki

import (
	"fmt"
	"net"
	"slices"

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

// MemberServerNames are the names a given member's client-plane certificate must cover:
// its own DNS name (short and FQDN), both Services in every form (clients reach it through
// them), localhost and 127.0.0.1. Validation checks these rather than the wildcard, so a BYO
// certificate that enumerates members instead of using a wildcard is accepted exactly when it
// covers the member about to start.
func MemberServerNames(r ClusterRef, member string) Names {
	dns := r.memberHostForms(member)
	dns = append(dns, r.serviceForms(r.headless())...)
	dns = append(dns, r.serviceForms(r.client())...)
	dns = append(dns, LocalhostName)
	return Names{DNS: dedupe(dns), IPs: []net.IP{LoopbackIP}}
}

// MemberPeerNames are the names a given member's peer certificate must cover: its own DNS
// name as peers dial it (short) and as they verify it after a reverse lookup (FQDN).
func MemberPeerNames(r ClusterRef, member string) Names {
	return Names{DNS: r.memberHostForms(member)}
}

func (r ClusterRef) memberHostForms(member string) []string {
	host := v1alpha2.MemberHost(member, r.headless(), r.Namespace)
	return []string{host, host + "." + r.domain()}
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
