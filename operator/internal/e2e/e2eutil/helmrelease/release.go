//go:build e2e

// Package helmrelease drives Helm releases on the local cluster with the Helm SDK
// (helm.sh/helm/v4 pkg/action), the way `helm install/upgrade/uninstall --kubeconfig
// <c.Kubeconfig> -n <namespace>` would, for the suites that install the charts and packages of
// this repository. It is a package of its own so that only those suites link Helm.
package helmrelease

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// Timeout bounds one Helm action; the waits that follow have their own timeouts.
const Timeout = 2 * time.Minute

// Release is one Helm release in one namespace of the local cluster.
type Release struct {
	Name, Namespace string
	cfg             *action.Configuration
}

// New is the release name in namespace of cluster c (Helm's storage: Secrets).
func New(t *testing.T, c *framework.Cluster, name, namespace string) *Release {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &c.Kubeconfig
	flags.Namespace = &namespace
	cacheDir := t.TempDir() // discovery cache: not the developer's ~/.kube/cache
	flags.CacheDir = &cacheDir
	cfg := action.NewConfiguration(action.ConfigurationSetLogger(testLogHandler(t)))
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatalf("helm init for %s/%s: %v", namespace, name, err)
	}
	return &Release{Name: name, Namespace: namespace, cfg: cfg}
}

// RepoPath is a folder of this repository (a chart: "charts/etcd", a package: "packages/extra/etcd").
func RepoPath(tb testing.TB, rel string) string {
	tb.Helper()
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// Install loads the chart folder and installs it (creating the namespace, CRDs first) without
// Helm's own wait: the callers wait for the conditions they prove, with clearer messages.
func (r *Release) Install(t *testing.T, chartDir string, values map[string]any) time.Duration {
	t.Helper()
	start := time.Now()
	in := action.NewInstall(r.cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = r.Name, r.Namespace, true
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, Timeout
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if _, err := in.RunWithContext(ctx, load(t, chartDir), values); err != nil {
		t.Fatalf("helm install %s -n %s %s: %v", r.Name, r.Namespace, chartDir, err)
	}
	return time.Since(start)
}

// Upgrade upgrades the release to the chart folder with exactly values (the release's old values
// reset, as Flux's helm-controller upgrades: the caller passes what the platform would), without
// Helm's wait.
func (r *Release) Upgrade(t *testing.T, chartDir string, values map[string]any) time.Duration {
	t.Helper()
	start := time.Now()
	up := action.NewUpgrade(r.cfg)
	up.Namespace, up.ResetValues = r.Namespace, true
	up.WaitStrategy, up.Timeout = kube.HookOnlyStrategy, Timeout
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if _, err := up.RunWithContext(ctx, r.Name, load(t, chartDir), values); err != nil {
		t.Fatalf("helm upgrade %s -n %s %s: %v", r.Name, r.Namespace, chartDir, err)
	}
	return time.Since(start)
}

// Uninstall deletes the release's objects (Helm keeps a chart's crds/ by design) and returns
// at once; the callers wait for what the deletion cascades to.
func (r *Release) Uninstall(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	un := action.NewUninstall(r.cfg)
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, Timeout
	resp, err := un.Run(r.Name)
	if err != nil {
		t.Fatalf("helm uninstall %s -n %s: %v", r.Name, r.Namespace, err)
	}
	if resp != nil && resp.Info != "" {
		t.Logf("helm uninstall %s: %s", r.Name, resp.Info)
	}
	return time.Since(start)
}

func load(t *testing.T, chartDir string) chart.Charter {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	return ch
}

// testLogHandler sends Helm's warnings and errors to the test log; its debug chatter is dropped.
func testLogHandler(t *testing.T) slog.Handler {
	return slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log("helm: " + strings.TrimSpace(string(p)))
	return len(p), nil
}
