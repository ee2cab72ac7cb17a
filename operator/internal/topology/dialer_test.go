package topology

import (
	"context"
	"net"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestPodDialer(t *testing.T) {
	member := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "etcd-abcde", Namespace: "tenant", Labels: map[string]string{v1alpha2.LabelCluster: "etcd"}},
		Status:     corev1.PodStatus{PodIP: "10.244.1.7"},
	}
	noIP := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-new", Namespace: "tenant", Labels: map[string]string{v1alpha2.LabelCluster: "etcd"}}}
	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "tenant"},
		Status:     corev1.PodStatus{PodIP: "10.244.2.9"},
	}
	pods := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(member, noIP, other).Build()
	var dialed string
	dial := PodDialer(pods, func(_ context.Context, _, addr string) (net.Conn, error) { dialed = addr; return nil, nil })
	for addr, want := range map[string]string{
		"etcd-abcde.etcd.tenant.svc:2379":               "10.244.1.7:2379",
		"etcd-abcde.etcd.tenant.svc.cluster.local:2380": "10.244.1.7:2380",
		"etcd-new.etcd.tenant.svc.cluster.local:2380":   "etcd-new.etcd.tenant.svc.cluster.local:2380", // no IP yet: DNS
		"web.etcd.tenant.svc:2379":                      "web.etcd.tenant.svc:2379",                    // not a member of etcd
		"etcd-abcde.other.tenant.svc:2379":              "etcd-abcde.other.tenant.svc:2379",            // another cluster's name
		"etcd-client.tenant.svc:2379":                   "etcd-client.tenant.svc:2379",                 // a Service
		"127.0.0.1:2379":                                "127.0.0.1:2379",
	} {
		if _, err := dial(context.Background(), "tcp", addr); err != nil {
			t.Fatal(err)
		}
		if dialed != want {
			t.Errorf("dial %s went to %s, want %s", addr, dialed, want)
		}
	}
}
