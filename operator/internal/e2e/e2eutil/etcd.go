//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// EtcdClient talks to the cluster's client Service from the test; it is closed with the test.
func EtcdClient(t testing.TB, c *framework.Cluster, ns, name string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(ClientConfig(c, "http://"+name+"-client."+ns+".svc:2379"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// ClientConfig is an etcd client's configuration for endpoints inside the cluster's network. It
// keeps alive like kube-apiserver's (30s, 10s): a connection to a member that vanished without a
// word (its Pod's network gone, as in a rollback) is found dead and redialled through the Service
// instead of hanging until TCP gives up, minutes later.
func ClientConfig(c *framework.Cluster, endpoints ...string) clientv3.Config {
	dial := ClusterDialer(c)
	return clientv3.Config{
		Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialKeepAliveTime: 30 * time.Second, DialKeepAliveTimeout: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) { return dial(ctx, "tcp", a) })},
	}
}

// MemberList asks etcd itself who its members are.
func MemberList(t testing.TB, c *framework.Cluster, ns, name string) (*clientv3.MemberListResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return EtcdClient(t, c, ns, name).MemberList(ctx)
}

// PutGet writes a key and reads it back.
func PutGet(t testing.TB, c *framework.Cluster, ns, name, key, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := EtcdClient(t, c, ns, name).Put(ctx, key, value); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	AssertKey(t, c, ns, name, key, value)
}

// PutEventually retries a write until it succeeds or the timeout passes, as a client would
// through a leader election.
func PutEventually(t testing.TB, c *framework.Cluster, ns, name, key, value string, timeout time.Duration) {
	t.Helper()
	cli := EtcdClient(t, c, ns, name)
	var lastErr error
	WaitFor(t, timeout, "a successful write of "+key, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, lastErr = cli.Put(ctx, key, value)
		if lastErr != nil {
			t.Logf("put %s: %v (retrying)", key, lastErr)
		}
		return lastErr == nil
	})
	AssertKey(t, c, ns, name, key, value)
}

// AssertKey fails unless key holds want (a linearizable read).
func AssertKey(t testing.TB, c *framework.Cluster, ns, name, key, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := EtcdClient(t, c, ns, name).Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != want {
		t.Fatalf("get %s: %v %v, want %s", key, err, resp, want)
	}
}

// MemberClient talks to one member's etcd only (its own client URL); close it after use.
func MemberClient(c *framework.Cluster, ns, cluster, member string) (*clientv3.Client, error) {
	cfg := ClientConfig(c, "http://"+member+"."+cluster+"."+ns+".svc:2379")
	cfg.DialTimeout = 2 * time.Second
	return clientv3.New(cfg)
}

// Fingerprint is what one step of a scale-up changes: the EtcdMembers (with whether each has
// recorded its initial cluster and its member ID), the Pods, and etcd's own member list.
func Fingerprint(t testing.TB, c *framework.Cluster, ns, name string) string {
	var parts []string
	for _, m := range Members(t, c, ns, name) {
		pod := "nopod"
		if p := Pod(t, c, ns, m.Name); p != nil {
			pod = "pod:" + string(p.Status.Phase)
			if PodReady(p) {
				pod += "/ready"
			}
		}
		parts = append(parts, fmt.Sprintf("member %s init=%t id=%s %s", m.Name, m.Spec.InitialCluster != "", m.Status.MemberID, pod))
	}
	if list, err := MemberList(t, c, ns, name); err == nil {
		for _, m := range list.Members {
			parts = append(parts, fmt.Sprintf("etcd %x learner=%t", m.ID, m.IsLearner))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

// Timeline logs every change of Fingerprint, with the time since start, until done returns.
func Timeline(t testing.TB, c *framework.Cluster, ns, name string, start time.Time, done func() bool) {
	last := ""
	WaitFor(t, 10*time.Minute, "timeline of "+name, func() bool {
		if fp := Fingerprint(t, c, ns, name); fp != last {
			t.Logf("+%5.1fs %s", time.Since(start).Seconds(), fp)
			last = fp
		}
		return done()
	})
}

// PodReady reports the Pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
