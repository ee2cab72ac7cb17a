package etcdcluster

import (
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

func TestMinorRecord(t *testing.T) {
	member := func(name, version string) v1alpha2.EtcdMember {
		m := v1alpha2.EtcdMember{}
		m.Name, m.Status.Version = name, version
		return m
	}
	pass := func(index uint64, versions ...string) *clusterState {
		st := &clusterState{}
		st.etcd.statuses = map[uint64]etcd.EndpointStatus{1: {RaftIndex: index}}
		for i, v := range versions {
			st.members = append(st.members, member(string(rune('a'+i)), v))
		}
		return st
	}
	rec := minorRecord(nil, pass(10, "3.5.35", "3.5.35"))
	if rec == nil || rec.Version != "3.5" || rec.RaftIndex != 10 || rec.Upgraded {
		t.Fatalf("first record %+v", rec)
	}
	if got := minorRecord(rec, pass(20, "3.5.35", "3.6.16")); got != rec {
		t.Errorf("mid-rollout: %+v, want it unchanged", got)
	}
	if got := minorRecord(rec, pass(30, "3.5.35", "")); got != rec {
		t.Errorf("a member not reported yet: %+v, want it unchanged", got)
	}
	up := minorRecord(rec, pass(40, "3.6.16", "3.6.16"))
	if up == nil || up.Version != "3.6" || up.RaftIndex != 40 || !up.Upgraded {
		t.Fatalf("after the upgrade %+v", up)
	}
	if got := minorRecord(up, pass(90, "3.6.17", "3.6.17")); got != up {
		t.Errorf("a patch: %+v, want it unchanged", got)
	}
	if got := minorRecord(nil, pass(0, "3.6.16")); got != nil {
		t.Errorf("etcd did not answer: %+v, want nothing recorded", got)
	}
}
