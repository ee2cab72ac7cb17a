package etcd

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// RequestDuration is the latency of the operator's unary calls to a cluster's etcd, by gRPC
// method (e.g. etcdserverpb.Maintenance/Status); a call that failed counts too. Clients built
// for a cluster (a Target with a Key) record it; the metrics package registers it.
var RequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: "etcd_operator_etcd_request_duration_seconds",
	Help: "Latency of the operator's calls to a cluster's etcd, by gRPC method, failed calls included.",
	// Few buckets: the series are per cluster and method, and tenants are many.
	Buckets: []float64{.005, .025, .1, .5, 2.5, 10},
}, []string{"namespace", "cluster", "method"})

// timed is a unary interceptor that observes RequestDuration for the cluster key names.
func timed(key string) grpc.UnaryClientInterceptor {
	ns, cluster, _ := strings.Cut(key, "/")
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		RequestDuration.WithLabelValues(ns, cluster, strings.TrimPrefix(method, "/")).Observe(time.Since(start).Seconds())
		return err
	}
}

// ForgetRequests drops a deleted cluster's series.
func ForgetRequests(key string) {
	ns, cluster, _ := strings.Cut(key, "/")
	RequestDuration.DeletePartialMatch(prometheus.Labels{"namespace": ns, "cluster": cluster})
}
