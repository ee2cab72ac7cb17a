package pki

import (
	"net"
	"slices"
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestServerNames(t *testing.T) {
	tests := []struct {
		name string
		ref  ClusterRef
		dns  []string
	}{{
		name: "cluster domain set",
		ref:  ClusterRef{Name: "etcd", Namespace: "tenant-a", ClusterDomain: "cozy.local"},
		dns: []string{
			"*.etcd.tenant-a.svc", "*.etcd.tenant-a.svc.cozy.local",
			"etcd", "etcd.tenant-a", "etcd.tenant-a.svc", "etcd.tenant-a.svc.cozy.local",
			"etcd-client", "etcd-client.tenant-a", "etcd-client.tenant-a.svc", "etcd-client.tenant-a.svc.cozy.local",
			"localhost",
		},
	}, {
		name: "empty domain means cluster.local",
		ref:  ClusterRef{Name: "kv", Namespace: "ns"},
		dns: []string{
			"*.kv.ns.svc", "*.kv.ns.svc.cluster.local",
			"kv", "kv.ns", "kv.ns.svc", "kv.ns.svc.cluster.local",
			"kv-client", "kv-client.ns", "kv-client.ns.svc", "kv-client.ns.svc.cluster.local",
			"localhost",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ServerNames(tt.ref)
			if !slices.Equal(got.DNS, tt.dns) {
				t.Errorf("DNS SANs\n got %q\nwant %q", got.DNS, tt.dns)
			}
			if want := []string{"127.0.0.1"}; !slices.Equal(got.IPStrings(), want) {
				t.Errorf("IP SANs = %q, want %q", got.IPStrings(), want)
			}
			if peer := PeerNames(tt.ref); !slices.Equal(peer.DNS, got.DNS) {
				t.Errorf("peer SANs %q differ from server SANs", peer.DNS)
			}
		})
	}
}

func TestPeerClientNames(t *testing.T) {
	got := PeerClientNames(ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cozy.local"}, "etcd-7xk2p")
	want := PeerClient{Reverse: "etcd-7xk2p.etcd.ns.svc.cozy.local", Resolving: []string{
		"etcd-7xk2p.etcd", "etcd-7xk2p.etcd.ns", "etcd-7xk2p.etcd.ns.svc", "etcd-7xk2p.etcd.ns.svc.cozy.local",
		"etcd", "etcd.ns", "etcd.ns.svc", "etcd.ns.svc.cozy.local",
	}}
	if got.Reverse != want.Reverse || !slices.Equal(got.Resolving, want.Resolving) {
		t.Errorf("PeerClientNames = %+v\nwant %+v", got, want)
	}
	legacy := PeerClientNames(ClusterRef{Name: "etcd", Namespace: "ns", Layout: &v1alpha2.Layout{HeadlessServiceName: "etcd-headless"}}, "etcd-0")
	if legacy.Reverse != "etcd-0.etcd-headless.ns.svc.cluster.local" || !slices.Contains(legacy.Resolving, "etcd-headless.ns.svc") {
		t.Errorf("an adopted layout's member is found through its headless Service: %+v", legacy)
	}
}

// What a member's certificates must carry, for each SAN set met in the field and each form
// of the member's name it can be registered with. A member registered under the short form
// (the public operator's members, and new ones whose certificates name only that form) must be
// covered in the short form; peers must accept the peer certificate as a client.
func TestMemberCertificateSANSets(t *testing.T) {
	ref := ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cozy.local"}
	const member = "etcd-abcde"
	short, fqdn := "etcd-abcde.etcd.ns.svc", "etcd-abcde.etcd.ns.svc.cozy.local"
	ours := ServerNames(ref)
	ca := newCA(t, "etcd-ca")
	tests := []struct {
		name string
		dns  []string
		ips  []net.IP
		// whether the server and the peer certificate fit a member registered under the short
		// and under the FQDN form
		serverShort, serverFQDN, peerShort, peerFQDN bool
	}{{
		name: "issued by this operator",
		dns:  ours.DNS, ips: ours.IPs,
		serverShort: true, serverFQDN: true, peerShort: true, peerFQDN: true,
	}, {
		// Cozystack's etcd app: short .svc names only, no cluster domain. Peers accept the
		// peer certificate through "etcd", the headless Service, which resolves to every member.
		name: "Cozystack's (short .svc names only)",
		dns:  []string{"etcd", "etcd.ns.svc", "*.etcd.ns.svc", "*.etcd-headless.ns.svc", "localhost"}, ips: []net.IP{LoopbackIP},
		serverShort: true, peerShort: true,
	}, {
		name:       "FQDN wildcard only",
		dns:        []string{"*.etcd.ns.svc.cozy.local"},
		serverFQDN: true, peerFQDN: true,
	}, {
		// The short wildcard covers the name peers dial, but etcd matches a client
		// certificate's wildcards against the reverse name only, which has the cluster domain.
		name:        "short wildcard only",
		dns:         []string{"*.etcd.ns.svc"},
		serverShort: true,
	}, {
		name:        "enumerated, this member included",
		dns:         []string{"etcd-abcde.etcd.ns.svc", "etcd-fghij.etcd.ns.svc"},
		serverShort: true, peerShort: true,
	}, {
		name: "enumerated, this member not included",
		dns:  []string{"etcd-0.etcd.ns.svc", "etcd-1.etcd.ns.svc", "etcd", "etcd.ns.svc"},
	}, {
		name: "loopback only",
		dns:  []string{"localhost"}, ips: []net.IP{LoopbackIP},
	}}
	client := PeerClientNames(ref, member)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leaf := issue(t, leafSpec{cn: "leaf", dns: tt.dns, ips: tt.ips, usages: bothUsages}, &ca)
			for _, c := range []struct {
				plane, host string
				peer, want  bool
			}{
				{"server", short, false, tt.serverShort}, {"server", fqdn, false, tt.serverFQDN},
				{"peer", short, true, tt.peerShort}, {"peer", fqdn, true, tt.peerFQDN},
			} {
				r := Requirement{What: c.plane, Names: DialedNames(c.host), Usages: []Usage{UsageServerAuth, UsageClientAuth}, Now: testNow}
				if c.peer {
					r.PeerClient = &client
				}
				if err := Validate(leaf.pem, ca.pem, r); (err == nil) != c.want {
					t.Errorf("%s certificate registered as %s: fits=%t, want %t (%v)", c.plane, c.host, err == nil, c.want, err)
				}
			}
		})
	}
}

// A peer certificate peers would refuse says why, and which names would do.
func TestPeerClientProblemNamesTheFix(t *testing.T) {
	ca := newCA(t, "etcd-ca")
	leaf := issue(t, leafSpec{cn: "leaf", dns: []string{"*.etcd.ns.svc"}, usages: bothUsages}, &ca)
	client := PeerClientNames(ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cozy.local"}, "etcd-0")
	err := Validate(leaf.pem, ca.pem, Requirement{What: `peer certificate (Secret "etcd-peer-tls") for member etcd-0`,
		Names: DialedNames("etcd-0.etcd.ns.svc"), PeerClient: &client, Now: testNow})
	v, ok := AsValidationError(err)
	if !ok || !v.Has(ProblemMissingSAN) {
		t.Fatalf("want a missing-SAN problem, got %v", err)
	}
	want := `peer certificate (Secret "etcd-peer-tls") for member etcd-0: is refused by peers when the member presents it as a client: ` +
		`etcd matches it with the member's Pod IP, so a SAN must be "etcd-0.etcd.ns.svc.cozy.local" (what a reverse lookup of the Pod IP ` +
		`returns; a wildcard it ends in counts) or, without a wildcard, a name that resolves to the Pod: "etcd-0.etcd", "etcd-0.etcd.ns", ` +
		`"etcd-0.etcd.ns.svc", "etcd-0.etcd.ns.svc.cozy.local", "etcd", "etcd.ns", "etcd.ns.svc", "etcd.ns.svc.cozy.local" (certificate SANs: *.etcd.ns.svc)`
	if err.Error() != want {
		t.Errorf("message\n got %s\nwant %s", err, want)
	}
}

// A certificate with the cluster's SANs covers every member, in either registered form,
// including ones created later with names nobody could enumerate in advance: the property that
// keeps a replaced member from being an outage.
func TestClusterNamesCoverAnyMember(t *testing.T) {
	ref := ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cluster.local"}
	ca := newCA(t, "etcd-ca")
	names := ServerNames(ref)
	leaf := issue(t, leafSpec{cn: "etcd-server", dns: names.DNS, ips: names.IPs, usages: bothUsages}, &ca)
	for _, member := range []string{"etcd-0", "etcd-abcde", "etcd-zz9q1"} {
		client := PeerClientNames(ref, member)
		host := v1alpha2.MemberHost(member, "etcd", "ns")
		for _, h := range []string{host, host + ".cluster.local"} {
			r := Requirement{What: member, Names: DialedNames(h), PeerClient: &client, Usages: []Usage{UsageServerAuth, UsageClientAuth}, Now: testNow}
			if err := Validate(leaf.pem, ca.pem, r); err != nil {
				t.Errorf("member %s as %s: %v", member, h, err)
			}
		}
	}
	// ...and no member of another namespace. (Peers there would accept it as a client through
	// the short name "etcd", as etcd resolves it in their own namespace: the CA is what keeps
	// clusters apart.)
	other := Requirement{What: "other", Names: DialedNames("etcd-0.etcd.other.svc"), Now: testNow}
	if err := Validate(leaf.pem, ca.pem, other); err == nil {
		t.Error("a certificate of namespace ns validated for namespace other")
	}
}
