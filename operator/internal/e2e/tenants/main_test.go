//go:build e2e

package tenants

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

var scheme = func() *runtime.Scheme {
	s := e2eutil.Scheme
	_ = kamaji.AddToScheme(s)
	return s
}()

func TestMain(m *testing.M) {
	ctrl.SetLogger(crzap.New())
	framework.Main(m, framework.Options{Scheme: scheme})
}
