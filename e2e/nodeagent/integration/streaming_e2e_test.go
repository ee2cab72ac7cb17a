//go:build e2e

package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node/api"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/agent"
)

// bufferIO is an api.AttachIO collecting the command's output.
type bufferIO struct {
	stdin  io.Reader
	stdout nopCloser
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func (b *bufferIO) Stdin() io.Reader            { return b.stdin }
func (b *bufferIO) Stdout() io.WriteCloser      { return b.stdout }
func (b *bufferIO) Stderr() io.WriteCloser      { return b.stdout }
func (b *bufferIO) TTY() bool                   { return false }
func (b *bufferIO) Resize() <-chan api.TermSize { return nil }
func newBufferIO(stdin string) *bufferIO {
	return &bufferIO{stdin: strings.NewReader(stdin), stdout: nopCloser{&bytes.Buffer{}}}
}
func (b *bufferIO) output() string { return b.stdout.String() }

var _ api.AttachIO = (*bufferIO)(nil)

// checkKubeletAPI calls the agent's kubelet API over TLS as the apiserver would for kubectl logs.
func checkKubeletAPI(t *testing.T, pki testPKI, pod string) {
	url := "https://" + nodeIP + ":10250/containerLogs/" + namespace + "/" + pod + "/etcd?tailLines=1"
	withCert := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}}}}
	resp, err := withCert.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), "\n") != 1 {
		t.Fatalf("GET %s: %d %q", url, resp.StatusCode, body)
	}
	anonymous := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pki.pool}}}
	if resp, err := anonymous.Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("a client without certificate got %d", resp.StatusCode)
	}
}

// checkStreaming exercises what kubectl logs / exec / port-forward reach through the kubelet API.
func checkStreaming(t *testing.T, a *agent.Agent, pod string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t.Run("logs with tail", func(t *testing.T) {
		r, err := a.Provider.GetContainerLogs(ctx, namespace, pod, "etcd", api.ContainerLogOpts{Tail: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		data, _ := io.ReadAll(r)
		if lines := strings.Count(string(data), "\n"); lines != 2 || !strings.Contains(string(data), `"level"`) {
			t.Fatalf("tail 2 gave %d lines: %q", lines, data)
		}
	})
	t.Run("exec runs in the container", func(t *testing.T) {
		io := newBufferIO("from-stdin")
		err := a.Provider.RunInContainer(ctx, namespace, pod, "etcd", []string{"sh", "-c", "cat; echo; id -u; hostname; etcdctl put k v"}, io)
		if err != nil {
			t.Fatalf("%v: %s", err, io.output())
		}
		if out := io.output(); !strings.Contains(out, "from-stdin\n65532\n"+pod+"\nOK") {
			t.Fatalf("exec output %q", out)
		}
		failing := newBufferIO("")
		if err := a.Provider.RunInContainer(ctx, namespace, pod, "etcd", []string{"sh", "-c", "exit 3"}, failing); err == nil || !strings.Contains(err.Error(), "exit code 3") {
			t.Fatalf("want exit code 3, got %v", err)
		}
	})
	t.Run("port-forward reaches the pod port", func(t *testing.T) {
		client, server := net.Pipe()
		go func() { _ = a.Provider.PortForward(ctx, namespace, pod, 2379, server) }()
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := client.Write([]byte("GET /health HTTP/1.0\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(client)
		if !strings.Contains(string(data), `"health":"true"`) {
			t.Fatalf("port-forward got %q", data)
		}
	})
}
