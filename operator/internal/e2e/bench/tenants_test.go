//go:build e2e && bench

package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

// idleTenants is how many idle TenantControlPlanes the tenant bench serves (BENCH_IDLE_TENANTS).
func idleTenants() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH_IDLE_TENANTS")); err == nil && n >= 0 {
		return n
	}
	return 50
}

// TestBenchTenants: a TCP created → its etcd Available → a tenant kube-apiserver ready on it;
// then the operator (with the tenant controller) serving many idle tenants: its API writes and RSS.
func TestBenchTenants(t *testing.T) {
	c := framework.Shared(t)
	framework.StartCertManager(t, c)
	e2eutil.InstallKamajiCRDs(t, c)
	template := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(template, []byte("replicas: 3\nversion: "+e2eutil.EtcdVersion()+"\nstorage: {size: 1Gi}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	op := e2eutil.StartOperator(t, c, "--enable-tenant-controller", "--tenant-etcd-template="+template)
	var tb table
	defer tb.print()

	ns := e2eutil.NewNamespace(t, c)
	start := time.Now()
	tcp := e2eutil.CreateTCP(t, c, ns, "k8s", nil)
	e2eutil.WaitTenantState(t, c, tcp, v1alpha2.TenantStateReady, timeout)
	tb.add("TCP created -> tenant etcd Available (3 members, TLS)", secs(time.Since(start)), "")
	root, err := e2eutil.DataStoreClient(t, c, e2eutil.DataStore(t, c, specs.NamesOf(ns, "k8s").DataStore), nil)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitConvergedWith(t, c, ns, specs.NamesOf(ns, "k8s").Cluster, 3, root, timeout)
	tb.add("TCP created -> tenant etcd converged at 3 members", secs(time.Since(start)), "")
	creds := e2eutil.PlayKamaji(t, c, specs.NamesOf(ns, "k8s").DataStore, string(tcp.UID), string(tcp.UID))
	e2eutil.StartTenantAPIServer(t, c, ns, string(tcp.UID), creds)
	tb.add("TCP created -> tenant kube-apiserver ready (Kamaji's etcd setup played)", secs(time.Since(start)), "")

	n := idleTenants()
	idle := e2eutil.NewNamespace(t, c)
	one := `{"replicas": 1}`
	start = time.Now()
	for i := range n {
		e2eutil.CreateTCP(t, c, idle, fmt.Sprintf("idle-%03d", i), &one)
	}
	e2eutil.WaitFor(t, 30*time.Minute, fmt.Sprintf("%d idle tenants Ready", n), func() bool {
		var list kamaji.TenantControlPlaneList
		if err := c.Client.List(context.Background(), &list, client.InNamespace(idle)); err != nil {
			return false
		}
		ready := 0
		for _, tcp := range list.Items {
			if tcp.Annotations[v1alpha2.AnnotationTenantEtcdState] == v1alpha2.TenantStateReady {
				ready++
			}
		}
		return ready == n
	})
	tb.add(fmt.Sprintf("%d TCPs created at once -> all tenant etcds Available (1 member each)", n), secs(time.Since(start)), "")
	writes := idleWrites(t, op)
	tb.add(fmt.Sprintf("operator API writes per idle tenant-minute (%d tenants + 1, 60 s)", n), fmt.Sprintf("%.2f", writes/float64(n+1)), "0")
	rss, err := op.RSSBytes()
	if err != nil {
		t.Fatal(err)
	}
	tb.add(fmt.Sprintf("operator RSS with %d idle tenants", n+1), fmt.Sprintf("%.0f MiB", float64(rss)/(1<<20)), "")
}
