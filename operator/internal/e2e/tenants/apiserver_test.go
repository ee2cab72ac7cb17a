//go:build e2e

package tenants

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// tenantClient writes ConfigMaps through the tenant apiserver one after another and probes its
// /readyz, counting per phase, as a tenant's workload would see its control plane.
type tenantClient struct {
	cs   *kubernetes.Clientset
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	phase  string
	acked  []string
	counts map[string]*phaseCounts
	phases []string
}

type phaseCounts struct {
	writes, failed, probes, unready int
	lastErr                         string
}

func startTenantClient(cs *kubernetes.Clientset, phase string) *tenantClient {
	w := &tenantClient{cs: cs, stop: make(chan struct{}), counts: map[string]*phaseCounts{}}
	w.setPhase(phase)
	w.wg.Add(2)
	go w.write()
	go w.probe()
	return w
}

func (w *tenantClient) setPhase(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = p
	if w.counts[p] == nil {
		w.counts[p] = &phaseCounts{}
		w.phases = append(w.phases, p)
	}
}

func (w *tenantClient) acknowledged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

func (w *tenantClient) record(f func(*phaseCounts)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.counts[w.phase])
}

func (w *tenantClient) write() {
	defer w.wg.Done()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		name := fmt.Sprintf("w-%06d", n)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"n": fmt.Sprint(n)}}, metav1.CreateOptions{})
		cancel()
		w.record(func(p *phaseCounts) {
			p.writes++
			if err != nil {
				p.failed++
				p.lastErr = err.Error()
			}
		})
		if err == nil {
			w.mu.Lock()
			w.acked = append(w.acked, name)
			w.mu.Unlock()
		} else {
			time.Sleep(200 * time.Millisecond) // a client backs off a little
		}
	}
}

func (w *tenantClient) probe() {
	defer w.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		err := e2eutil.Readyz(context.Background(), w.cs)
		w.record(func(p *phaseCounts) {
			p.probes++
			if err != nil {
				p.unready++
			}
		})
	}
}

// finish stops the client, logs the table, and checks that every acknowledged ConfigMap is there.
func (w *tenantClient) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	t.Logf("%-28s %8s %8s %10s", "phase", "writes", "failed", "readyz ok")
	for _, p := range w.phases {
		c := w.counts[p]
		t.Logf("%-28s %8d %8d %6d/%-4d %s", p, c.writes, c.failed, c.probes-c.unready, c.probes, c.lastErr)
	}
	var list *corev1.ConfigMapList
	e2eutil.WaitNoError(t, time.Minute, "listing the tenant's ConfigMaps", func() error {
		var err error
		list, err = w.cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		return err
	})
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	lost := 0
	for _, name := range w.acked {
		if !have[name] {
			lost++
		}
	}
	t.Logf("%d ConfigMaps acknowledged by the tenant apiserver, %d lost", len(w.acked), lost)
	if lost > 0 || len(w.acked) == 0 {
		t.Errorf("%d of %d acknowledged ConfigMaps lost", lost, len(w.acked))
	}
}
