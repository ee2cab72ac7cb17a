package kubectletcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Forwarder reaches member Pods through the API server, as `kubectl port-forward` does: each
// (Pod, port) gets one forward on a loopback listener, opened on first use and kept until
// Close. It needs nothing but a kubeconfig allowed to create pods/portforward.
type Forwarder struct {
	config *rest.Config
	pods   rest.Interface

	mu      sync.Mutex
	tunnels map[string]*tunnel
}

type tunnel struct {
	local int
	stop  chan struct{}
	done  chan struct{}
}

// NewForwarder forwards through the API server cfg points at.
func NewForwarder(cfg *rest.Config) (*Forwarder, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Forwarder{config: cfg, pods: cs.CoreV1().RESTClient(), tunnels: map[string]*tunnel{}}, nil
}

// Dial connects to a member's DNS name (<pod>.<cluster>.<namespace>.svc[.<domain>]:<port>)
// through a forward to its Pod: the etcd client's dialer. The TLS handshake above it still
// verifies the member's certificate against that name.
func (f *Forwarder) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pod, _, ok := topology.MemberPodOfHost(host)
	p, perr := strconv.Atoi(port)
	if !ok || perr != nil {
		return nil, fmt.Errorf("%s names no member Pod: the plugin reaches etcd only through port-forwards to member Pods", addr)
	}
	local, err := f.Local(ctx, pod.Namespace, pod.Name, p)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(local)))
}

// Local is the loopback port forwarded to the Pod's port, opening the forward first.
func (f *Forwarder) Local(ctx context.Context, namespace, pod string, port int) (int, error) {
	key := fmt.Sprintf("%s/%s:%d", namespace, pod, port)
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.tunnels[key]; ok {
		select {
		case <-t.done: // the Pod went away or the stream broke: open a new one
		default:
			return t.local, nil
		}
	}
	t, err := f.open(ctx, namespace, pod, port)
	if err != nil {
		return 0, err
	}
	f.tunnels[key] = t
	return t.local, nil
}

// Close ends every forward.
func (f *Forwarder) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, t := range f.tunnels {
		close(t.stop)
		<-t.done
		delete(f.tunnels, k)
	}
}

func (f *Forwarder) open(ctx context.Context, namespace, pod string, port int) (*tunnel, error) {
	dialer, err := f.dialer(namespace, pod)
	if err != nil {
		return nil, err
	}
	t := &tunnel{stop: make(chan struct{}), done: make(chan struct{})}
	ready := make(chan struct{})
	fw, err := portforward.NewOnAddressesForStreaming(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)},
		t.stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	var runErr error
	go func() { runErr = fw.ForwardPorts(); close(t.done) }()
	select {
	case <-ready:
	case <-t.done:
		return nil, fmt.Errorf("port-forward to Pod %s/%s: %w", namespace, pod, runErr)
	case <-ctx.Done():
		close(t.stop)
		<-t.done
		return nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		close(t.stop)
		<-t.done
		return nil, errors.Join(errors.New("port-forward opened no local port"), err)
	}
	t.local = int(ports[0].Local)
	return t, nil
}

// dialer speaks the port-forward protocol to the Pod's portforward subresource: WebSockets
// first, SPDY where the API server does not upgrade to them (what kubectl does).
func (f *Forwarder) dialer(namespace, pod string) (httpstream.Dialer, error) {
	u := f.pods.Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(f.config)
	if err != nil {
		return nil, err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, f.config)
	if err != nil {
		return nil, err
	}
	return portforward.NewFallbackDialerForStreaming(ws, spdyDialer, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}
