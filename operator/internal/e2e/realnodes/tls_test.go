//go:build e2e

package realnodes

import (
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// servingTimeout bounds the way of a re-issued Secret to every member's listener on a real
// kubelet. Left alone, it rewrites a Secret volume at the Pod's next sync (syncFrequency, 1 min
// by default, plus jitter): members served a renewal 60–87 s after cert-manager wrote it. The
// operator changes the Pods' tls-hash annotation when it copies the renewal, which makes the
// kubelet sync them at once; 45 s leaves room for a loaded machine and fails the periodic sync.
const servingTimeout = 45 * time.Second

// rotateServerLeaf has cert-manager re-issue the chart's server certificate (as cmctl renew
// does): the operator copies it into the active Secret and annotates the member Pods, the
// kubelet updates their Secret volume and every member serves the new leaf on its client port
// without a restart, while a client keeps writing.
func (s *suite) rotateServerLeaf(t *testing.T) {
	const prefix = "/e2e/real/tls"
	before := e2eutil.PodIdentities(t, s.c, etcdNamespace, etcdRelease)
	old := e2eutil.LeafSerial(t, s.c, etcdNamespace, etcdServerSecret)
	w := s.startWriter(t, prefix)
	e2eutil.TriggerRenewal(t, s.c, etcdNamespace, etcdRelease+"-server")
	issued := e2eutil.WaitFor(t, 2*time.Minute, "cert-manager re-issuing "+etcdServerSecret, func() bool {
		return e2eutil.LeafSerial(t, s.c, etcdNamespace, etcdServerSecret).Cmp(old) != 0
	})
	serial, served := e2eutil.WaitServed(t, s.c, etcdNamespace, etcdRelease, servingTimeout, v1alpha2.ClientPort, s.clientTLS, etcdServerSecret)
	t.Logf("server leaf re-issued in %s; every member served serial %x %s later", issued.Round(time.Millisecond), serial, served.Round(time.Millisecond))
	s.stopWriter(t, w, prefix, true)
	e2eutil.AssertNoRestart(t, s.c, etcdNamespace, etcdRelease, before)
}
