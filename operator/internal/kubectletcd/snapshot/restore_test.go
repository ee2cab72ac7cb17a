package snapshot

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/cozystack/etcd-operator/internal/namecheck"
)

// The EtcdRestore `kubectl etcd restore` creates gets a name the EtcdRestore CRD admits (the API
// server generates it from generateName) for every cluster name the EtcdCluster CRD admits.
func TestRestoreNameFitsForTheLongestCluster(t *testing.T) {
	longest := validation.DNS1123SubdomainMaxLength
	if max, ok := namecheck.CRDNameCaps()["EtcdCluster"]; ok {
		longest = max
	}
	var tally namecheck.Tally
	for l := 1; l <= longest; l++ {
		for _, f := range namecheck.Object("kubectl etcd restore", "EtcdRestore", newRestore("ns", "c"+strings.Repeat("x", l-1), "snap")) {
			tally.Add("EtcdCluster", l, f)
		}
	}
	for _, line := range tally.Lines() {
		t.Error(line)
	}
}
