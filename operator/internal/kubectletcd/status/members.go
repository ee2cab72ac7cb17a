package status

import (
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Entry is one row of `kubectl etcd members`: etcd's member list joined with the EtcdMembers.
// A row with no EtcdMember is a member etcd has that the operator does not manage; one with
// no ID is an EtcdMember not registered in etcd (yet, or any more).
type Entry struct {
	ID         string   `json:"id,omitempty"`
	Name       string   `json:"name,omitempty"`
	Learner    bool     `json:"learner"`
	PeerURLs   []string `json:"peerURLs"`
	ClientURLs []string `json:"clientURLs"`
	EtcdMember string   `json:"etcdMember,omitempty"`
	Pod        string   `json:"pod,omitempty"`
	Ready      bool     `json:"ready"`
}

// Entries joins the list and the objects; it is pure.
func Entries(list etcd.MemberList, members []v1alpha2.EtcdMember) []Entry {
	out := []Entry{}
	claimed := map[uint64]bool{}
	for i := range members {
		m := &members[i]
		e := Entry{EtcdMember: m.Name, Pod: m.Status.PodName, Ready: topology.MemberReady(m), PeerURLs: []string{}, ClientURLs: []string{}}
		if em, ok := topology.FindInList(m, list.Members); ok {
			claimed[em.ID] = true
			e.ID, e.Name, e.Learner = etcd.FormatID(em.ID), em.Name, em.IsLearner
			e.PeerURLs, e.ClientURLs = nonNil(em.PeerURLs), nonNil(em.ClientURLs)
		}
		out = append(out, e)
	}
	for _, em := range list.Members {
		if !claimed[em.ID] {
			out = append(out, Entry{ID: etcd.FormatID(em.ID), Name: em.Name, Learner: em.IsLearner,
				PeerURLs: nonNil(em.PeerURLs), ClientURLs: nonNil(em.ClientURLs)})
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
