package etcdcluster

import (
	"slices"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// TestAlarmsOf: the alarms come from the members' Status answers, as etcd words them, each once.
func TestAlarmsOf(t *testing.T) {
	answered := map[uint64]etcd.EndpointStatus{
		1: {Errors: []string{"memberID:8211f1d0f64f3269 alarm:NOSPACE "}},
		2: {Errors: []string{"etcdserver: no leader", "memberID:91bc3c398fb3c146 alarm:NOSPACE ", "memberID:91bc3c398fb3c146 alarm:CORRUPT "}},
		3: {},
	}
	if got, want := alarmsOf(answered), []string{"CORRUPT", "NOSPACE"}; !slices.Equal(got, want) {
		t.Errorf("alarms %v, want %v", got, want)
	}
	if got := alarmsOf(map[uint64]etcd.EndpointStatus{1: {Errors: []string{"etcdserver: no leader"}}}); len(got) != 0 {
		t.Errorf("alarms %v from a status without any", got)
	}
}
