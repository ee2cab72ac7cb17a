package pki

import (
	"net"
	"slices"
	"testing"
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

func TestMemberNames(t *testing.T) {
	ref := ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cozy.local"}
	server := MemberServerNames(ref, "etcd-7xk2p")
	wantServer := []string{
		"etcd-7xk2p.etcd.ns.svc", "etcd-7xk2p.etcd.ns.svc.cozy.local",
		"etcd", "etcd.ns", "etcd.ns.svc", "etcd.ns.svc.cozy.local",
		"etcd-client", "etcd-client.ns", "etcd-client.ns.svc", "etcd-client.ns.svc.cozy.local",
		"localhost",
	}
	if !slices.Equal(server.DNS, wantServer) || !slices.EqualFunc(server.IPs, []net.IP{LoopbackIP}, net.IP.Equal) {
		t.Errorf("MemberServerNames = %q %v, want %q [127.0.0.1]", server.DNS, server.IPs, wantServer)
	}
	peer := MemberPeerNames(ref, "etcd-7xk2p")
	if want := []string{"etcd-7xk2p.etcd.ns.svc", "etcd-7xk2p.etcd.ns.svc.cozy.local"}; !slices.Equal(peer.DNS, want) || len(peer.IPs) != 0 {
		t.Errorf("MemberPeerNames = %q %v, want %q", peer.DNS, peer.IPs, want)
	}
}

// A certificate with the cluster's SANs covers every member, including ones created later
// with names nobody could enumerate in advance: the property that keeps a replaced member
// from being an outage.
func TestClusterNamesCoverAnyMember(t *testing.T) {
	ref := ClusterRef{Name: "etcd", Namespace: "ns", ClusterDomain: "cluster.local"}
	ca := newCA(t, "etcd-ca")
	names := ServerNames(ref)
	leaf := issue(t, leafSpec{cn: "etcd-server", dns: names.DNS, ips: names.IPs, usages: bothUsages}, &ca)
	for _, member := range []string{"etcd-0", "etcd-abcde", "etcd-zz9q1"} {
		for _, want := range []Names{MemberServerNames(ref, member), MemberPeerNames(ref, member)} {
			r := Requirement{What: member, Names: want, Usages: []Usage{UsageServerAuth, UsageClientAuth}, Now: testNow}
			if err := Validate(leaf.pem, ca.pem, r); err != nil {
				t.Errorf("member %s: %v", member, err)
			}
		}
	}
	// ...and nothing of another cluster or namespace.
	other := MemberServerNames(ClusterRef{Name: "etcd", Namespace: "other"}, "etcd-0")
	if err := Validate(leaf.pem, ca.pem, Requirement{What: "other", Names: other, Now: testNow}); err == nil {
		t.Error("a certificate of namespace ns validated for namespace other")
	}
}
