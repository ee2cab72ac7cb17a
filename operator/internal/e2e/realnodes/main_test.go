//go:build e2e

package realnodes

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// The releases and namespaces of the suite; both namespaces enforce the Restricted standard.
const (
	realNodes         = 3
	operatorRelease   = "etcd-operator"
	operatorNamespace = "etcd-operator-system"
	etcdRelease       = "etcd"
	etcdNamespace     = "tenant-real"
	etcdReplicas      = 3
)

// The Secrets charts/etcd's default TLS has cert-manager fill.
const (
	etcdServerSecret = etcdRelease + "-server-tls"
	etcdClientSecret = etcdRelease + "-client-tls"
)

func TestMain(m *testing.M) {
	// No node agents: every Pod, the operator's included, runs on a real kubelet.
	framework.Main(m, framework.Options{Nodes: -1, RealNodes: realNodes, Scheme: e2eutil.Scheme})
}

// suite is what the steps share.
type suite struct {
	c        *framework.Cluster
	op, etcd *helmrelease.Release
	// clientTLS is the tenant's client of the etcd release: the chart's CA and client certificate.
	clientTLS *tls.Config
	// operatorImage is the image the operator chart installs with no values.
	operatorImage string
	// etcdValues are the tenant release's values set so far (none at install).
	etcdValues map[string]any
}

type step struct {
	name string
	run  func(t *testing.T)
}

// TestRealNodes installs both charts on real nodes and walks the steps in order; a failed step
// ends the walk (each needs the state the one before left). The durations are logged as a
// table at the end, to keep the suite inside CI's budget.
func TestRealNodes(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	s := &suite{c: c, op: helmrelease.New(t, c, operatorRelease, operatorNamespace), etcd: helmrelease.New(t, c, etcdRelease, etcdNamespace)}
	steps := []step{
		{"bootstrap", s.bootstrap},
		{"scale 3-5-3 under writes", s.scaleUnderWrites},
		{"member Pod deleted", s.podLoss},
		{"etcd container killed by the runtime", s.containerKill},
		{"etcd version rolled under writes", s.upgradeVersion},
		{"server certificate re-issued and served", s.rotateServerLeaf},
		{"CA rotated under writes", s.rotateCA},
		{"snapshot to S3, restored into a new release", s.snapshotRestore},
		{"tmpfs members, data guard after a power cycle", s.tmpfsMembers},
		{"kubectl etcd and kubectl debug", s.kubectlTools},
		{"node powered off, member moved", s.nodeLoss},
	}
	var report []string
	defer func() { t.Logf("step durations:\n%s", strings.Join(report, "\n")) }()
	for _, st := range steps {
		start := time.Now()
		ok := t.Run(st.name, st.run)
		report = append(report, fmt.Sprintf("  %-45s %8s %s", st.name, time.Since(start).Round(100*time.Millisecond), map[bool]string{true: "ok", false: "FAIL"}[ok]))
		if !ok {
			s.diagnose(t)
			return
		}
	}
}
