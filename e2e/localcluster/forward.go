package localcluster

import (
	"context"
	"io"
	"net"
	"sync"
	"time"
)

// forwarder accepts on a host loopback port and pipes each connection to target
// inside the cluster netns: the host reaches the apiserver without any host route.
type forwarder struct {
	ln     net.Listener
	dialer Dialer
	target string
	wg     sync.WaitGroup
}

func startForwarder(listenAddr string, d Dialer, target string) (*forwarder, error) {
	ln, err := net.Listen("tcp", listenAddr)
	if err != nil {
		return nil, err
	}
	f := &forwarder{ln: ln, dialer: d, target: target}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// Port is the host port the forwarder listens on.
func (f *forwarder) Port() int { return f.ln.Addr().(*net.TCPAddr).Port }

func (f *forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		go f.pipe(c)
	}
}

func (f *forwarder) pipe(c net.Conn) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	up, err := f.dialer.DialContext(ctx, "tcp", f.target)
	cancel()
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

func (f *forwarder) Close() {
	_ = f.ln.Close()
}
