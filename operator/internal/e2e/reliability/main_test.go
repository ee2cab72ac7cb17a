//go:build e2e

package reliability

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
