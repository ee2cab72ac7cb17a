//go:build e2e

package migrate

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/migrate"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
)

// tool runs the etcd-migrate binary against the shared cluster.
type tool struct{ bin, kubeconfig string }

func newTool(t *testing.T, c *framework.Cluster) tool {
	bin := os.Getenv("LC_MIGRATE_BIN")
	if bin == "" {
		root, err := localcluster.FindModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(t.TempDir(), "etcd-migrate")
		if err := localcluster.BuildBinary(root, "./operator/cmd/etcd-migrate", bin); err != nil {
			t.Fatal(err)
		}
	}
	return tool{bin: bin, kubeconfig: c.Kubeconfig}
}

// run returns stdout, stderr and the exit code of `etcd-migrate -n NS ARGS`.
func (k tool) run(t *testing.T, ns string, args ...string) (string, string, int) {
	t.Helper()
	return e2eutil.RunCommand(t, []string{"KUBECONFIG=" + k.kubeconfig}, "", k.bin, append([]string{"-n", ns}, args...)...)
}

// env is the tool's logic run in the test process (for the step hook), dialing in the cluster.
func env(c *framework.Cluster) migrate.Env {
	return migrate.Env{Client: c.Client, Dial: e2eutil.ClusterDialer(c)}
}

// podFacts are what must not change while a cluster is adopted: each Pod's UID and restarts.
type podFacts map[string]string

func factsOf(t *testing.T, c *framework.Cluster, ns string, names []string) podFacts {
	t.Helper()
	out := podFacts{}
	for _, n := range names {
		p := e2eutil.Pod(t, c, ns, n)
		if p == nil {
			t.Fatalf("Pod %s is gone", n)
		}
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[n] = fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	return out
}

func (want podFacts) check(t *testing.T, c *framework.Cluster, ns, when string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	got := factsOf(t, c, ns, names)
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: Pod %s was replaced or restarted: uid/restarts %s, was %s", when, n, got[n], w)
		}
	}
}

func podNames(pods []corev1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}

// memberIDs are etcd's member IDs by name.
func memberIDs(t *testing.T, cli *clientv3.Client) map[string]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, m := range resp.Members {
		out[m.Name] = m.ID
	}
	return out
}

// clientOf dials a legacy cluster through its client Service's DNS name (the name clients use).
func clientOf(t *testing.T, c *framework.Cluster, l *legacy.EtcdCluster, tlsCfg func(*clientv3.Config)) *clientv3.Client {
	t.Helper()
	scheme := "http://"
	if legacy.ServerTLS(l) {
		scheme = "https://"
	}
	cfg := e2eutil.ClientConfig(c, scheme+legacy.ClientServiceName(l)+"."+l.Namespace+".svc:2379")
	if tlsCfg != nil {
		tlsCfg(&cfg)
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// legacyGone: the StatefulSet, the legacy object and its ConfigMap are gone; the Services stay,
// controlled by the EtcdCluster.
func legacyGone(t *testing.T, c *framework.Cluster, l *legacy.EtcdCluster) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &corev1.ConfigMap{}} {
		name := legacy.StatefulSetName(l)
		if _, ok := obj.(*corev1.ConfigMap); ok {
			name = legacy.ConfigMapName(l)
		}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s still exists (err %v)", obj, name, err)
		}
	}
	ec := e2eutil.GetCluster(t, c, l.Namespace, l.Name)
	for _, name := range []string{legacy.HeadlessServiceName(l), legacy.ClientServiceName(l)} {
		svc := &corev1.Service{}
		if err := c.Client.Get(ctx, client.ObjectKey{Namespace: l.Namespace, Name: name}, svc); err != nil {
			t.Fatalf("Service %s: %v", name, err)
		}
		if ref := svc.OwnerReferences; len(ref) != 1 || ref[0].UID != ec.UID {
			t.Errorf("Service %s owners %v, want the EtcdCluster only", name, ref)
		}
	}
	if ec.Adopting() || ec.Annotations[v1alpha2.AnnotationAdoptedFrom] == "" {
		t.Errorf("EtcdCluster annotations %v: want adopted-from, not adopting", ec.Annotations)
	}
	if !strings.HasSuffix(ec.Annotations[v1alpha2.AnnotationAdoptedFrom], string(l.UID)) {
		t.Errorf("adopted-from %q does not name legacy uid %s", ec.Annotations[v1alpha2.AnnotationAdoptedFrom], l.UID)
	}
}

// probe dials names afresh (a DNS lookup through the cluster's DNS and a TCP connect) every
// 100 ms until stopped: a name clients use that stops answering at any instant is counted.
type probe struct {
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	tries  int
	failed []string
}

func startProbe(c *framework.Cluster, addrs ...string) *probe {
	p := &probe{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, a := range addrs {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				conn, err := e2eutil.ClusterDialer(c)(ctx, "tcp", a)
				cancel()
				p.mu.Lock()
				p.tries++
				if err != nil {
					p.failed = append(p.failed, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), a, err))
				} else {
					_ = conn.Close()
				}
				p.mu.Unlock()
			}
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return p
}

// Stop ends the probe and returns the dials tried and those that failed.
func (p *probe) Stop() (int, []string) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tries, p.failed
}
