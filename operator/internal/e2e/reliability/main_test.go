//go:build e2e

package reliability

import (
	"fmt"
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestMain runs the campaigns on one local cluster, then prints their table.
func TestMain(m *testing.M) {
	ctrl.SetLogger(crzap.New())
	code := framework.Run(m, framework.Options{Scheme: e2eutil.Scheme, RealNodes: realNodes})
	if err := results.report(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
