package topology

import (
	"context"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc = etcd.DialFunc

// PodDialer dials a member's DNS name at its Pod's IP, read from the Pod cache, and every other
// address through next (a plain dialer when nil). Cluster DNS answers for a member's name only
// once the headless Service's endpoints list its Pod, and a lookup made before that (etcd's
// leader and the operator make one right after MemberAddAsLearner) is cached as missing for
// seconds; the Pod's IP is in the cache as soon as it runs. TLS still verifies the certificate
// against the name, which the gRPC target keeps.
func PodDialer(pods client.Reader, next DialFunc) DialFunc {
	if next == nil {
		var d net.Dialer
		next = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil {
			if ip := memberPodIP(ctx, pods, host); ip != "" {
				addr = net.JoinHostPort(ip, port)
			}
		}
		return next(ctx, network, addr)
	}
}

// memberPodIP is the IP of the member Pod a host names, or "" when the host is not a member's
// or its Pod has no IP.
func memberPodIP(ctx context.Context, pods client.Reader, host string) string {
	key, cluster, ok := MemberPodOfHost(host)
	if !ok {
		return ""
	}
	pod := &corev1.Pod{}
	if err := pods.Get(ctx, key, pod); err != nil {
		return ""
	}
	if !pod.DeletionTimestamp.IsZero() || pod.Labels[v1alpha2.LabelCluster] != cluster {
		return ""
	}
	return pod.Status.PodIP
}

// MemberPodOfHost reads a member's DNS name (<pod>.<cluster>.<namespace>.svc, with or without
// the cluster domain): the Pod it names and its cluster's headless Service name.
func MemberPodOfHost(host string) (pod client.ObjectKey, headless string, ok bool) {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) < 4 || labels[3] != "svc" {
		return client.ObjectKey{}, "", false
	}
	return client.ObjectKey{Namespace: labels[2], Name: labels[0]}, labels[1], true
}
