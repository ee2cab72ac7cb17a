//go:build e2e

package cozystack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/internal/dryrun"
	"github.com/cozystack/etcd-operator/internal/testenv"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// clusterDomain is Cozystack's default DNS domain (networking.clusterDomain of its platform).
const clusterDomain = "cozy.local"

// Where Cozystack installs the system packages (packages/README.md), and the tenants of the e2e.
const (
	systemNamespace = "cozy-etcd-operator"
	crdsRelease     = "etcd-operator-crds"
	operatorRelease = "etcd-operator"
	// operatorReplicas is the system package's default.
	operatorReplicas = 2

	appRelease = "etcd" // the only name the tenant app accepts
	// freshTenant gets packages/extra/etcd from the start, upgradedTenant Cozystack's current app first.
	freshTenant    = "tenant-root"
	upgradedTenant = "tenant-upgrade"
	replicas       = 3
)

func TestMain(m *testing.M) {
	bin, err := e2eutil.BuildOperatorBinary(localcluster.DefaultStateRoot)
	if err != nil {
		fmt.Fprintln(os.Stderr, "operator binary:", err)
		os.Exit(1)
	}
	framework.Main(m, framework.Options{OperatorBin: bin, ClusterDomain: clusterDomain, Scheme: e2eutil.Scheme})
}

// clusterValues is the _cluster Cozystack merges into every package's values from the
// cozystack-values Secret: the platform's settings (the keys the packages read).
func clusterValues() map[string]any {
	return map[string]any{"cluster-domain": clusterDomain, "root-host": "example.org", "bundle-name": "paas-full",
		"cpu-allocation-ratio": 10, "memory-allocation-ratio": 1}
}

// tenantValues is what Cozystack merges into a tenant app's values besides the app's own spec.
func tenantValues(ns string) map[string]any {
	return map[string]any{"_cluster": clusterValues(), "_namespace": map[string]any{"etcd": ns, "host": ns + ".example.org"}}
}

// TestCozystack installs the packages as Cozystack does and runs the user's paths on them: every
// step needs the system packages, the apiserver the fresh tenant, the upgrade neither tenant.
func TestCozystack(t *testing.T) {
	c := framework.Shared(t)
	start := time.Now()
	framework.StartCertManager(t, c)
	installPlatformCRDs(t, c)
	t.Logf("cert-manager and the platform's CRDs: %s", time.Since(start).Round(time.Millisecond))
	if !t.Run("system packages", func(t *testing.T) { installSystemPackages(t, c) }) {
		logOperatorPods(t, c)
		return
	}
	t.Run("operator gets the cluster domain from _cluster", func(t *testing.T) { checkOperatorClusterDomain(t, c) })
	if t.Run("tenant app Available with TLS in "+clusterDomain, func(t *testing.T) { installTenantApp(t, c) }) {
		t.Run("kube-apiserver through the DataStore", func(t *testing.T) { apiserverThroughDataStore(t, c) })
	}
	t.Run("upgrade from Cozystack's current app", func(t *testing.T) { upgradeFromCozystackApp(t, c) })
	if t.Failed() {
		logOperatorPods(t, c)
	}
}

// installPlatformCRDs installs the CRDs of what a Cozystack platform runs besides cert-manager,
// whose objects the packages render by default: VPA, VictoriaMetrics, Kamaji (its real CRDs when
// ../shared has them), monitoring, and the stand-in WorkloadMonitor of testdata/crds. Our own CRDs
// come from the etcd-operator-crds package.
func installPlatformCRDs(t *testing.T, c *framework.Cluster) {
	t.Helper()
	paths, err := dryrun.PlatformCRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	paths = slices.DeleteFunc(paths, func(p string) bool { return p == testenv.FixtureCRDDir("kamaji") })
	paths = append(paths, e2eutil.KamajiCRDDir(), "testdata/crds")
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
}

// installSystemPackages installs the CRDs package, then the operator package, each with only
// _cluster as values, and waits for the operator's Pods. The operator package comes as it comes to
// a running platform: as the upgrade of Cozystack's own operator package, which it replaces.
func installSystemPackages(t *testing.T, c *framework.Cluster) {
	values := map[string]any{"_cluster": clusterValues()}
	took := helmrelease.New(t, c, crdsRelease, systemNamespace).
		Install(t, helmrelease.RepoPath(t, "packages/system/etcd-operator-crds"), values)
	t.Logf("helm install %s: %s", crdsRelease, took.Round(time.Millisecond))
	replaceCozystackOperator(t, c, values)
	took = e2eutil.WaitSeen(t, 3*time.Minute, "the operator Deployment's Pods ready", func() (bool, string) {
		return e2eutil.DeploymentReady(c, systemNamespace, operatorRelease, operatorReplicas)
	})
	t.Logf("operator Deployment ready (%d Pods): %s", operatorReplicas, took.Round(time.Millisecond))
}

// checkOperatorClusterDomain: Cozystack hands the platform's domain to the operator package as
// _cluster.cluster-domain, and its own operator package passes it on as --cluster-domain. Without
// the flag the operator reads the domain from its Pod's resolv.conf, which also says cozy.local on
// this cluster; the check is that the package passes what the platform gave it.
func checkOperatorClusterDomain(t *testing.T, c *framework.Cluster) {
	t.Helper()
	for _, p := range operatorPods(t, c) {
		args := p.Spec.Containers[0].Args
		if !slices.Contains(args, "--cluster-domain="+clusterDomain) {
			t.Errorf("operator Pod %s runs with %v: no --cluster-domain=%s from _cluster.cluster-domain (it falls back to the Pod's resolv.conf)",
				p.Name, args, clusterDomain)
		}
	}
}

func operatorPods(t *testing.T, c *framework.Cluster) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := c.Client.List(context.Background(), &pods, client.InNamespace(systemNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "etcd-operator"}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// logOperatorPods logs the end of every operator Pod's log (the node agents' files), after a
// failed step.
func logOperatorPods(t *testing.T, c *framework.Cluster) {
	for _, p := range operatorPods(t, c) {
		dir, _, err := c.PodDir(context.Background(), systemNamespace, p.Name)
		if err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join(dir, "manager.log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("operator Pod %s, last lines:\n%s", p.Name, strings.Join(lines[max(0, len(lines)-60):], "\n"))
	}
}
