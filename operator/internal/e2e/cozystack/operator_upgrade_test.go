//go:build e2e

package cozystack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil/helmrelease"
)

// What Cozystack's own operator package runs (testdata/cozystack-etcd-operator stands in for it).
const (
	replacedDeployment = "etcd-operator-controller-manager"
	replacedLease      = "aa20b3a9.etcd-operator.cozystack.io"
)

// replaceCozystackOperator installs the stand-in of Cozystack's operator package as the release
// etcd-operator, waits for it to lead, and upgrades the release to packages/system/etcd-operator as
// the platform would (only _cluster as values). Helm creates the new Deployment before it deletes
// the old one; the Leases of the namespace are followed throughout, and at no moment may a replica of
// each operator lead (hold a Lease it renewed within the Lease's duration).
func replaceCozystackOperator(t *testing.T, c *framework.Cluster, values map[string]any) {
	rel := helmrelease.New(t, c, operatorRelease, systemNamespace)
	took := rel.Install(t, "testdata/cozystack-etcd-operator", values)
	t.Logf("helm install %s (stand-in of Cozystack's operator package): %s", operatorRelease, took.Round(time.Millisecond))
	leaders := watchLeaders(t, c)
	took = e2eutil.WaitSeen(t, 3*time.Minute, "the replaced operator leading", func() (bool, string) {
		old, ours := leaders.now()
		return len(old) == 1 && len(ours) == 0, fmt.Sprintf("leading: replaced %v, ours %v", old, ours)
	})
	t.Logf("the replaced operator leads through the Lease %s: %s", replacedLease, took.Round(time.Millisecond))

	took = rel.Upgrade(t, helmrelease.RepoPath(t, "packages/system/etcd-operator"), values)
	t.Logf("helm upgrade %s to packages/system/etcd-operator: %s", operatorRelease, took.Round(time.Millisecond))
	took = e2eutil.WaitSeen(t, 3*time.Minute, "the package's operator leading, the replaced one gone", func() (bool, string) {
		old, ours := leaders.now()
		_, err := c.Kube.AppsV1().Deployments(systemNamespace).Get(context.Background(), replacedDeployment, metav1.GetOptions{})
		return len(old) == 0 && len(ours) == 1 && apierrors.IsNotFound(err),
			fmt.Sprintf("leading: replaced %v, ours %v; Deployment %s: %v", old, ours, replacedDeployment, err)
	})
	t.Logf("the package's operator leads, %s is gone: %s after the upgrade", replacedDeployment, took.Round(time.Millisecond))
	if both := leaders.overlaps(); len(both) > 0 {
		t.Errorf("both operators led at once: %v", both)
	}
}

// leaderWatch follows the Leases of the system namespace. A replica leads while it holds a Lease
// renewed within the Lease's duration; the replaced operator's replicas are the Pods of its
// Deployment (controller-runtime's identity is <hostname = Pod name>_<uuid>).
type leaderWatch struct {
	mu     sync.Mutex
	leases map[string]coordinationv1.LeaseSpec
	both   []string
}

func watchLeaders(t *testing.T, c *framework.Cluster) *leaderWatch {
	t.Helper()
	l := &leaderWatch{leases: map[string]coordinationv1.LeaseSpec{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			w, err := c.Kube.CoordinationV1().Leases(systemNamespace).Watch(ctx, metav1.ListOptions{})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
				continue
			}
			for ev := range w.ResultChan() {
				if lease, ok := ev.Object.(*coordinationv1.Lease); ok {
					l.see(lease, ev.Type == watch.Deleted)
				}
			}
			w.Stop()
		}
	}()
	return l
}

func (l *leaderWatch) see(lease *coordinationv1.Lease, deleted bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if deleted {
		delete(l.leases, lease.Name)
	} else {
		l.leases[lease.Name] = lease.Spec
	}
	if old, ours := l.leadingLocked(); len(old) > 0 && len(ours) > 0 {
		l.both = append(l.both, fmt.Sprintf("%s: replaced %v, ours %v", time.Now().Format(time.RFC3339Nano), old, ours))
	}
}

// now is who leads: the replaced operator's replicas and the package's, as "<lease>: <holder>".
func (l *leaderWatch) now() (old, ours []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leadingLocked()
}

func (l *leaderWatch) leadingLocked() (old, ours []string) {
	for name, s := range l.leases {
		if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil ||
			time.Since(s.RenewTime.Time) > time.Duration(*s.LeaseDurationSeconds)*time.Second {
			continue
		}
		who := name + ": " + *s.HolderIdentity
		if strings.HasPrefix(*s.HolderIdentity, replacedDeployment+"-") {
			old = append(old, who)
		} else {
			ours = append(ours, who)
		}
	}
	return old, ours
}

func (l *leaderWatch) overlaps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.both
}
