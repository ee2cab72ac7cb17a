//go:build e2e

package lifecycle

import (
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(crzap.New())
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// cluster is the shared local cluster with the operator running in this test binary.
func cluster(t *testing.T) *framework.Cluster { return e2eutil.InProcessCluster(t) }
