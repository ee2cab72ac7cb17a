// Package topology holds what both lifecycle controllers know about a cluster's members: which
// EtcdMembers belong to it, how to reach them, and how etcd's member list maps onto them.
package topology

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// Key is the pool key of a cluster.
func Key(namespace, cluster string) string {
	return types.NamespacedName{Namespace: namespace, Name: cluster}.String()
}

// ListMembers returns the EtcdMembers labelled for a cluster, oldest first. When clusterUID is
// set, members controlled by another incarnation of a same-named cluster are left out.
func ListMembers(ctx context.Context, c client.Reader, namespace, cluster string, clusterUID types.UID) ([]v1alpha2.EtcdMember, error) {
	var list v1alpha2.EtcdMemberList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{v1alpha2.LabelCluster: cluster}); err != nil {
		return nil, err
	}
	members := slices.DeleteFunc(list.Items, func(m v1alpha2.EtcdMember) bool {
		if clusterUID == "" {
			return false
		}
		owner := controllerUID(&m)
		return owner != "" && owner != clusterUID
	})
	slices.SortFunc(members, func(a, b v1alpha2.EtcdMember) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmpString(a.Name, b.Name)
	})
	return members, nil
}

func controllerUID(m *v1alpha2.EtcdMember) types.UID {
	for _, ref := range m.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return ref.UID
		}
	}
	return ""
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Registered: the member has been added to etcd (it has an initial cluster) and is not parked.
func Registered(m *v1alpha2.EtcdMember) bool {
	return m.Spec.InitialCluster != "" && !m.Spec.Dormant
}

// Endpoints are the client URLs of the registered members, sorted. Both controllers compute the
// same list, so they share one pooled client per cluster.
func Endpoints(members []v1alpha2.EtcdMember) []string {
	var eps []string
	for i := range members {
		if Registered(&members[i]) {
			eps = append(eps, resources.ClientURL(&members[i]))
		}
	}
	slices.Sort(eps)
	return eps
}

// FindInList finds a member in etcd's member list: by the recorded ID, else by peer URL in any
// form (a learner not started yet has no name), else by name.
func FindInList(m *v1alpha2.EtcdMember, list []etcd.Member) (etcd.Member, bool) {
	id := etcd.ParseID(m.Status.MemberID)
	for _, match := range []func(etcd.Member) bool{
		func(e etcd.Member) bool { return id != 0 && e.ID == id },
		func(e etcd.Member) bool {
			return slices.ContainsFunc(e.PeerURLs, func(u string) bool { return resources.IsMemberPeerURL(m, u) })
		},
		func(e etcd.Member) bool { return e.Name != "" && e.Name == m.Name },
	} {
		if i := slices.IndexFunc(list, match); i >= 0 {
			return list[i], true
		}
	}
	return etcd.Member{}, false
}

// DialsTLS reports whether the operator dials a cluster's members with TLS: spec.tls.client
// is set and every member serves TLS, as latched in status.clientTLSServing, or as every
// member's spec says (TLS only: a cluster created with TLS, or latched by an operator that has
// not written the status yet). While spec.tls.client is being added to a running cluster the
// members serve plaintext too, and the operator keeps dialing plaintext until the latch.
func DialsTLS(tls *v1alpha2.TLSSpec, latched bool, members []v1alpha2.EtcdMember) bool {
	if tls == nil || tls.Client == nil {
		return false
	}
	return latched || AllServeTLSOnly(members)
}

// AllServeTLSOnly: every member that is not leaving is specified with client TLS and without
// the plaintext listener (vacuously true without members: a new cluster).
func AllServeTLSOnly(members []v1alpha2.EtcdMember) bool {
	for i := range members {
		m := &members[i]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if t := m.Spec.TLS; t == nil || t.ClientServerSecretRef == nil || t.ClientPlaintext {
			return false
		}
	}
	return true
}
