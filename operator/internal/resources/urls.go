package resources

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// NewPeerURL is the peer URL a member is registered with in etcd (MemberAddAsLearner, or the
// seed's initial cluster) under host, the form of its name its certificates cover
// (tlsmaterial.Source.RegistrationHost); every later use reads it back from spec.initialCluster.
func NewPeerURL(m *v1alpha2.EtcdMember, host string) string {
	return fmt.Sprintf("%s://%s:%d", peerScheme(m.Spec.TLS), host, v1alpha2.PeerPort)
}

// PeerURL is the URL a member advertises to its peers: the one it was registered with (its
// own entry of spec.initialCluster), so members registered in another form (short names by
// earlier versions, the public operator's, adopted clusters) keep theirs. Before registration it
// is the short form.
func PeerURL(m *v1alpha2.EtcdMember) string {
	if u, ok := v1alpha2.RegisteredPeerURL(m); ok {
		return u
	}
	return NewPeerURL(m, v1alpha2.MemberHostOf(m))
}

// ClientURL is the URL a member advertises to clients: its peer URL's host on the client port.
func ClientURL(m *v1alpha2.EtcdMember) string {
	host := v1alpha2.MemberHostOf(m)
	if u, err := url.Parse(PeerURL(m)); err == nil && u.Hostname() != "" {
		host = u.Hostname()
	}
	return fmt.Sprintf("%s://%s:%d", clientScheme(m.Spec.TLS), host, v1alpha2.ClientPort)
}

// IsMemberPeerURL reports whether u names the member, in the short or the FQDN form.
func IsMemberPeerURL(m *v1alpha2.EtcdMember, u string) bool {
	parsed, err := url.Parse(u)
	if err != nil {
		return false
	}
	short := v1alpha2.MemberHostOf(m)
	return parsed.Hostname() == short || strings.HasPrefix(parsed.Hostname(), short+".")
}

func peerScheme(t *v1alpha2.MemberTLS) string {
	if t != nil && (t.PeerSecretRef != nil || t.PeerAutoTLS) {
		return "https"
	}
	return "http"
}

func clientScheme(t *v1alpha2.MemberTLS) string {
	if t != nil && t.ClientServerSecretRef != nil {
		return "https"
	}
	return "http"
}
