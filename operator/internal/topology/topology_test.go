package topology

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

func member(name, ic, id string, dormant bool) v1alpha2.EtcdMember {
	return v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec:   v1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: ic, Dormant: dormant},
		Status: v1alpha2.EtcdMemberStatus{MemberID: id}}
}

func TestEndpointsOnlyRegisteredRunningMembers(t *testing.T) {
	ms := []v1alpha2.EtcdMember{member("c-b", "x", "", false), member("c-a", "x", "", false),
		member("c-pending", "", "", false), member("c-parked", "x", "", true)}
	got := Endpoints(ms)
	want := []string{"http://c-a.c.ns.svc:2379", "http://c-b.c.ns.svc:2379"}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Endpoints = %v, want %v (sorted, no pending or dormant)", got, want)
	}
}

func TestFindInList(t *testing.T) {
	list := []etcd.Member{
		{ID: 1, Name: "c-a", PeerURLs: []string{"http://c-a.c.ns.svc:2380"}},
		{ID: 2, PeerURLs: []string{"http://c-new.c.ns.svc:2380"}}, // learner not started: no name
		{ID: 3, Name: "legacy", PeerURLs: []string{"http://legacy.other:2380"}},
	}
	cases := []struct {
		m      v1alpha2.EtcdMember
		wantID uint64
		ok     bool
	}{
		{member("c-a", "x", "", false), 1, true},
		{member("c-new", "", "", false), 2, true},
		{member("legacy", "x", "", false), 3, true},
		{member("c-renamed", "x", etcd.FormatID(3), false), 3, true},
		{member("c-gone", "x", etcd.FormatID(9), false), 0, false},
	}
	for _, tc := range cases {
		got, ok := FindInList(&tc.m, list)
		if ok != tc.ok || got.ID != tc.wantID {
			t.Errorf("%s: got %d %v, want %d %v", tc.m.Name, got.ID, ok, tc.wantID, tc.ok)
		}
	}
}

// The operator dials TLS only once every member serves it: latched, or every member specified
// TLS-only (a cluster created with TLS); a member still plaintext or with its plaintext
// listener keeps it on plaintext. A member being deleted does not count.
func TestDialsTLS(t *testing.T) {
	secret := &corev1.LocalObjectReference{Name: "srv"}
	withTLS := func(name string, tls *v1alpha2.MemberTLS) v1alpha2.EtcdMember {
		m := member(name, "x", "", false)
		m.Spec.TLS = tls
		return m
	}
	tlsOnly := withTLS("c-a", &v1alpha2.MemberTLS{ClientServerSecretRef: secret})
	both := withTLS("c-b", &v1alpha2.MemberTLS{ClientServerSecretRef: secret, ClientPlaintext: true})
	plain := withTLS("c-c", nil)
	leaving := plain
	leaving.DeletionTimestamp = ptrNow()
	spec := &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: secret}}
	for _, tc := range []struct {
		name    string
		spec    *v1alpha2.TLSSpec
		latched bool
		members []v1alpha2.EtcdMember
		want    bool
	}{
		{"no client TLS", nil, true, []v1alpha2.EtcdMember{tlsOnly}, false},
		{"peer TLS only", &v1alpha2.TLSSpec{Peer: &v1alpha2.PeerTLS{SecretRef: secret}}, false, []v1alpha2.EtcdMember{tlsOnly}, false},
		{"new cluster", spec, false, nil, true},
		{"created with TLS", spec, false, []v1alpha2.EtcdMember{tlsOnly, tlsOnly}, true},
		{"a member still plaintext", spec, false, []v1alpha2.EtcdMember{tlsOnly, plain}, false},
		{"a member serving both", spec, false, []v1alpha2.EtcdMember{tlsOnly, both}, false},
		{"latched while members drop plaintext", spec, true, []v1alpha2.EtcdMember{tlsOnly, both}, true},
		{"a plaintext member leaving", spec, false, []v1alpha2.EtcdMember{tlsOnly, leaving}, true},
	} {
		if got := DialsTLS(tc.spec, tc.latched, tc.members); got != tc.want {
			t.Errorf("%s: DialsTLS = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func ptrNow() *metav1.Time {
	now := metav1.Now()
	return &now
}
