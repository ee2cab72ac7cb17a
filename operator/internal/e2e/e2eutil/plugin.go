//go:build e2e

package e2eutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// KubectlPlugin is the tools cache's kubectl on the cluster's host kubeconfig, with
// kubectl-etcd ($LC_PLUGIN_BIN, or this tree's build) and the tools cache's etcdctl of one
// etcd version first on PATH, as a user who installed the plugin has them.
type KubectlPlugin struct {
	// Bin is kubectl; Dir the PATH folder holding kubectl-etcd and etcdctl.
	Bin, Dir   string
	kubeconfig string
}

// NewKubectlPlugin puts kubectl-etcd and etcdctl of etcdVersion into a PATH folder of their own.
func NewKubectlPlugin(t testing.TB, c *framework.Cluster, etcdVersion string) KubectlPlugin {
	t.Helper()
	kubectlBin, err := localcluster.ResolveKubectl(localcluster.Options{Name: c.Name})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pluginBin := os.Getenv("LC_PLUGIN_BIN")
	if pluginBin == "" {
		root, err := localcluster.FindModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		pluginBin = filepath.Join(dir, "build", "kubectl-etcd")
		if err := localcluster.BuildBinary(root, "./operator/cmd/kubectl-etcd", pluginBin); err != nil {
			t.Fatal(err)
		}
	}
	etcdctl := filepath.Join(filepath.Dir(filepath.Dir(kubectlBin)), "etcd-v"+etcdVersion, "etcdctl")
	for name, target := range map[string]string{"kubectl-etcd": pluginBin, "etcdctl": etcdctl} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return KubectlPlugin{Bin: kubectlBin, Dir: dir, kubeconfig: c.Kubeconfig}
}

// Env is what kubectl runs with: the kubeconfig, and the plugin's folder first on PATH.
func (k KubectlPlugin) Env() []string {
	return []string{"KUBECONFIG=" + k.kubeconfig, "PATH=" + k.Dir + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// Run runs kubectl with args and stdin and returns its stdout, stderr and exit code.
func (k KubectlPlugin) Run(t testing.TB, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return RunCommand(t, k.Env(), stdin, k.Bin, args...)
}
