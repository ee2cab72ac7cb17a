//go:build e2e

package helm

import (
	"context"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// putGet writes a key through the cluster's client Service (a ClusterIP, reached inside the
// cluster netns via kube-proxy), reads it back linearizably, and checks etcd lists every member
// as a voter. It retries the write for a while: the Service's endpoints may lag the status.
func putGet(t *testing.T, c *framework.Cluster, ns, name, key, value string) time.Duration {
	t.Helper()
	start := time.Now()
	endpoint := "http://" + name + "-client." + ns + ".svc." + localcluster.ClusterDomain + ":2379"
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return c.DialContext(ctx, "tcp", addr)
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	var putErr error
	waitFor(t, time.Minute, "a write through "+endpoint, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, putErr = cli.Put(ctx, key, value)
		return putErr == nil, "put: " + errString(putErr)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != value {
		t.Fatalf("get %s: %v %v, want %q", key, err, resp, value)
	}
	list, err := cli.MemberList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	voters := 0
	for _, m := range list.Members {
		if !m.IsLearner {
			voters++
		}
	}
	if voters != etcdReplicas || len(list.Members) != etcdReplicas {
		t.Errorf("etcd lists %d members (%d voters), want %d voters", len(list.Members), voters, etcdReplicas)
	}
	return time.Since(start)
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
