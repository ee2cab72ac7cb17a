//go:build e2e

package realnodes

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// rolloutTimeout bounds a rolling replacement of 3 members on real nodes.
const rolloutTimeout = 5 * time.Minute

// upgradeVersion bumps the release's etcd to the newest supported minor through the chart: the
// operator rolls the members one at a time onto the built image of that version while a client
// writes, and no acknowledged write is lost.
func (s *suite) upgradeVersion(t *testing.T) {
	const prefix = "/e2e/real/rollout"
	target := e2eutil.EtcdVersions[len(e2eutil.EtcdVersions)-1]
	w := s.startWriter(t, prefix)
	s.upgradeEtcd(t, map[string]any{"version": target})
	took := e2eutil.WaitSeen(t, rolloutTimeout, "every member on etcd "+target, func() (bool, string) {
		return s.membersOn(t, target)
	})
	t.Logf("3 members rolled to etcd %s: %s", target, took.Round(time.Millisecond))
	s.waitAvailable(t, etcdReplicas, 2*time.Minute)
	// A rolling restart closes each member's connections once: those attempts fail and are
	// retried; what must hold is that no acknowledged write is lost.
	s.stopWriter(t, w, prefix, false)
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
		checkRanBuiltEtcd(t, e2eutil.Pod(t, s.c, etcdNamespace, m.Name), "etcd", target)
	}
}

// membersOn reports whether every member reports etcd version and its Pod is Ready.
func (s *suite) membersOn(t *testing.T, version string) (bool, string) {
	var seen []string
	ok := true
	for _, m := range e2eutil.Members(t, s.c, etcdNamespace, etcdRelease) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, m.Name)
		ready := p != nil && e2eutil.PodReady(p) && p.Spec.Containers[0].Image == v1alpha2.DefaultImageRepository+":v"+version
		ok = ok && ready && m.Status.Version == version
		seen = append(seen, fmt.Sprintf("%s=%s(ready on it: %t)", m.Name, m.Status.Version, ready))
	}
	return ok, strings.Join(seen, " ")
}
