package tlsmaterial

import (
	"context"
	"net"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/pki"
	"github.com/cozystack/etcd-operator/operator/internal/pki/pkitest"
)

// A new member is registered under the FQDN when its certificates cover it, under the short
// .svc form when they name only that (Cozystack's), and not at all when they cover neither; a
// registered member is checked for the form it was registered with.
func TestRegistrationHost(t *testing.T) {
	const domain = "cozy.local"
	short := v1alpha2.MemberHost("etcd-abcde", "etcd", "ns")
	fqdn := short + "." + domain
	ours := pki.ServerNames(pki.ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: domain})
	ca := pkitest.NewCA(t, "etcd-ca")
	issue := func(dns ...string) map[string][]byte {
		return ca.SecretData(t, dns, []net.IP{pki.LoopbackIP}, both...)
	}
	// Cozystack's are RSA (4096 bits there; 2048 here, for speed) with PKCS#1 keys.
	cozystack := pkitest.NewRSACA(t, "etcd-ca", 2048).SecretData(t,
		[]string{"etcd", "etcd.ns.svc", "*.etcd.ns.svc", "*.etcd-headless.ns.svc", "localhost"}, []net.IP{pki.LoopbackIP}, both...)
	cl := newClient(t,
		secret("ours", ca.SecretData(t, ours.DNS, ours.IPs, both...)),
		secret("cozystack", cozystack),
		secret("fqdn-only", issue("*.etcd.ns.svc."+domain)),
		secret("other-namespace", issue("*.etcd.other.svc", "etcd", "etcd.other.svc")))
	src := NewSource(cl, nil)
	planes := func(name string) *v1alpha2.MemberTLS {
		ref := &corev1.LocalObjectReference{Name: name}
		return &v1alpha2.MemberTLS{ClientServerSecretRef: ref, PeerSecretRef: ref, ClientMTLS: true, TrustBundle: "etcd-trust-1"}
	}
	for _, tc := range []struct {
		name     string
		tls      *v1alpha2.MemberTLS
		want     string // the host, or "" for an error naming the short form
		fitShort bool   // the certificates fit a member registered under the short form
	}{
		{"plaintext", nil, fqdn, true},
		{"issued by this operator", planes("ours"), fqdn, true},
		{"Cozystack's short .svc names", planes("cozystack"), short, true},
		{"FQDN wildcard only", planes("fqdn-only"), fqdn, false},
		{"another namespace's", planes("other-namespace"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := member(tc.tls)
			got, err := src.RegistrationHost(context.Background(), m, domain)
			switch {
			case tc.want == "" && (err == nil || !strings.Contains(err.Error(), `does not cover "`+short+`"`)):
				t.Errorf("RegistrationHost = %q, %v; want an error naming %s", got, err, short)
			case tc.want != "" && (err != nil || got != tc.want):
				t.Errorf("RegistrationHost = %q, %v; want %s", got, err, tc.want)
			}
			// Before registration CheckMember agrees; after it, it checks the registered form.
			if err := src.CheckMember(context.Background(), m, domain); (err == nil) != (tc.want != "") {
				t.Errorf("CheckMember before registration: %v", err)
			}
			m.Spec.InitialCluster = "etcd-abcde=https://" + short + ":2380"
			if err := src.CheckMember(context.Background(), m, domain); (err == nil) != tc.fitShort {
				t.Errorf("CheckMember registered as %s: %v, want fit=%t", short, err, tc.fitShort)
			}
		})
	}
}
