//go:build e2e

package e2eutil

import (
	"strconv"
	"testing"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// PodIdentity is what a restart would change: the Pod's UID and its containers' restart counts.
type PodIdentity map[string]string

// PodIdentities are the cluster's members' Pod identities, by member.
func PodIdentities(t *testing.T, c *framework.Cluster, ns, cluster string) PodIdentity {
	t.Helper()
	out := PodIdentity{}
	for _, m := range Members(t, c, ns, cluster) {
		pod := Pod(t, c, ns, m.Name)
		if pod == nil {
			t.Fatalf("member %s has no Pod", m.Name)
		}
		id := string(pod.UID)
		for _, cs := range pod.Status.ContainerStatuses {
			id += "/" + cs.Name + "=" + strconv.Itoa(int(cs.RestartCount))
		}
		out[m.Name] = id
	}
	return out
}

// AssertNoRestart fails for each member whose Pod was replaced or restarted a container since before.
func AssertNoRestart(t *testing.T, c *framework.Cluster, ns, cluster string, before PodIdentity) {
	t.Helper()
	after := PodIdentities(t, c, ns, cluster)
	for name, id := range before {
		if after[name] != id {
			t.Errorf("member %s restarted: %s -> %q", name, id, after[name])
		}
	}
	if len(after) != len(before) {
		t.Errorf("members changed: %v -> %v", before, after)
	}
}
