package etcdcluster

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

func TestInitialClusterComesFromEtcd(t *testing.T) {
	m := &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "c-new"}}
	list := []etcd.Member{
		{ID: 2, Name: "c-b", PeerURLs: []string{"http://c-b.c.ns.svc:2380"}},
		{ID: 1, Name: "legacy-0", PeerURLs: []string{"http://legacy-0.legacy.ns.svc.cluster.local:2380"}}, // adopted: verbatim
		{ID: 3, PeerURLs: []string{"http://c-new.c.ns.svc:2380"}},                                         // not started: no name yet
	}
	got := initialCluster(nil, m, 3, list)
	want := "c-b=http://c-b.c.ns.svc:2380,c-new=http://c-new.c.ns.svc:2380,legacy-0=http://legacy-0.legacy.ns.svc.cluster.local:2380"
	if got != want {
		t.Errorf("initialCluster =\n %s\nwant\n %s", got, want)
	}
}
