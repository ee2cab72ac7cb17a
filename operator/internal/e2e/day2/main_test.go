//go:build e2e

package day2

import (
	"sync"
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

var (
	operatorOnce sync.Once
	operatorErr  error
)

// cluster returns the shared local cluster with the CRDs installed and the operator's
// controllers running in this test binary.
func cluster(t *testing.T) *framework.Cluster {
	t.Helper()
	c := framework.Shared(t)
	operatorOnce.Do(func() {
		if operatorErr = e2eutil.InstallCRDs(c); operatorErr == nil {
			operatorErr = e2eutil.StartInProcess(c)
		}
	})
	if operatorErr != nil {
		t.Fatalf("operator: %v", operatorErr)
	}
	return c
}
