package charts_test

import (
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/cozystack/etcd-operator/internal/chartrender"
)

// TestHelmLintStrict runs Helm's own linter the way `helm lint --strict` does (warnings fail), so
// `go test` catches what `make lint` would, without the helm binary from the tools cache.
func TestHelmLintStrict(t *testing.T) {
	kv, err := common.ParseKubeVersion(chartrender.DefaultKubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	// The Cozystack packages are charts too (their Makefiles' lint target runs the same lint).
	packages := []string{"../packages/system/etcd-operator-crds", "../packages/system/etcd-operator",
		"../packages/extra/etcd", "../packages/system/etcd-rd"}
	for _, chart := range append([]string{etcdChart, operatorChart}, packages...) {
		t.Run(chart, func(t *testing.T) {
			res := lint.RunAll(chart, nil, "ns", lint.WithKubeVersion(kv))
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("%s", m)
				}
			}
		})
	}
}
