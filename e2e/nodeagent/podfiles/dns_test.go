package podfiles

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func testPod(mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", Namespace: "lc"}}
	if mutate != nil {
		mutate(p)
	}
	return p
}

func TestResolvConf(t *testing.T) {
	dns := DNS{Nameserver: "10.244.0.1", Domain: "cluster.local"}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{name: "cluster first", pod: testPod(nil),
			want: "nameserver 10.244.0.1\nsearch lc.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"},
		{name: "host network falls back to host", pod: testPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			want: "nameserver 1.1.1.1\n"},
		{name: "dnsConfig overrides ndots and adds search", pod: testPod(func(p *corev1.Pod) {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"etcd.lc.svc.cluster.local"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}}
		}), want: "nameserver 10.244.0.1\nsearch lc.svc.cluster.local svc.cluster.local cluster.local etcd.lc.svc.cluster.local\noptions ndots:2 edns0\n"},
		{name: "none", pod: testPod(func(p *corev1.Pod) {
			p.Spec.DNSPolicy = corev1.DNSNone
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
		}), want: "nameserver 10.0.0.10\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ResolvConf(tc.pod, dns, "nameserver 1.1.1.1\n"); got != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestHosts(t *testing.T) {
	cases := []struct {
		name, wantLine string
		pod            *corev1.Pod
	}{
		{name: "plain", pod: testPod(nil), wantLine: "10.244.1.2\tetcd-0\n"},
		{name: "subdomain", pod: testPod(func(p *corev1.Pod) { p.Spec.Hostname = "m0"; p.Spec.Subdomain = "etcd" }),
			wantLine: "10.244.1.2\tm0.etcd.lc.svc.cluster.local\tm0\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Hosts(tc.pod, "10.244.1.2", "cluster.local")
			if !contains(got, "127.0.0.1\tlocalhost\n") || !contains(got, tc.wantLine) {
				t.Fatalf("got\n%s", got)
			}
		})
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
