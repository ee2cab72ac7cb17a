//go:build e2e

package helm

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// helmTimeout bounds one Helm action; the waits that follow have their own timeouts.
const helmTimeout = 2 * time.Minute

// release is one Helm release in one namespace of the local cluster, driven with the Helm SDK
// the way `helm install/uninstall --kubeconfig <c.Kubeconfig> -n <namespace>` would.
type release struct {
	name, namespace string
	cfg             *action.Configuration
}

func newRelease(t *testing.T, c *framework.Cluster, name, namespace string) *release {
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
	return &release{name: name, namespace: namespace, cfg: cfg}
}

// install loads the chart folder and installs it (creating the namespace, CRDs first) without
// Helm's own wait: the callers wait for the conditions they prove, with clearer messages.
func (r *release) install(t *testing.T, chartDir string, values map[string]any) time.Duration {
	t.Helper()
	start := time.Now()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	in := action.NewInstall(r.cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = r.name, r.namespace, true
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, helmTimeout
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	if _, err := in.RunWithContext(ctx, ch, values); err != nil {
		t.Fatalf("helm install %s -n %s %s: %v", r.name, r.namespace, chartDir, err)
	}
	return time.Since(start)
}

// uninstall deletes the release's objects (Helm keeps a chart's crds/ by design) and returns
// at once; the callers wait for what the deletion cascades to.
func (r *release) uninstall(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	un := action.NewUninstall(r.cfg)
	un.WaitStrategy, un.Timeout = kube.HookOnlyStrategy, helmTimeout
	resp, err := un.Run(r.name)
	if err != nil {
		t.Fatalf("helm uninstall %s -n %s: %v", r.name, r.namespace, err)
	}
	if resp != nil && resp.Info != "" {
		t.Logf("helm uninstall %s: %s", r.name, resp.Info)
	}
	return time.Since(start)
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
