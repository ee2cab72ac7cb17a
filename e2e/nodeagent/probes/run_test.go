package probes

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestHTTPAndTCPProbes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	host, portText, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portText)
	target := Target{PodIP: host, Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: int32(port)}}}
	cases := []struct {
		name  string
		probe corev1.Probe
		ok    bool
	}{
		{"http ok by name", corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("client")}}}, true},
		{"http 503", corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt32(int32(port))}}}, false},
		{"tcp ok", corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}}, true},
		{"unknown named port", corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("peer")}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := Run(context.Background(), &tc.probe, target); (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestNsenterArgs(t *testing.T) {
	got := NsenterArgs(42, 65532, 65532, []string{"etcdctl", "endpoint", "health"})
	want := []string{"-t", "42", "-m", "-n", "-u", "-w", "-S", "65532", "-G", "65532", "--", "etcdctl", "endpoint", "health"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q", got)
	}
	if got := NsenterArgs(1, -1, -1, []string{"true"}); len(got) != 8 {
		t.Fatalf("root: got %q", got)
	}
}
