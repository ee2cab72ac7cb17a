package etcd

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

const (
	dialTimeout = 5 * time.Second
	rpcTimeout  = 10 * time.Second
)

// Pool keeps one clientv3 client per cluster and rebuilds it when the cluster's endpoints or
// credentials change. It is safe for concurrent use by many reconcile workers.
type Pool struct {
	mu      sync.Mutex
	clients map[string]*pooled
	// Dial, when set, opens every connection (topology.PodDialer; in tests also into the cluster's
	// network namespace).
	Dial DialFunc
}

type pooled struct {
	fingerprint string
	client      *clientv3.Client
}

var _ Factory = (*Pool)(nil)

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{clients: map[string]*pooled{}} }

// Client returns the cluster's pooled client. Closing the returned Client is a no-op; the pool
// owns it until Forget or Close. A new client is built outside the pool's lock: with
// credentials, clientv3 logs in while it is built, and a cluster that is down must not hold
// every other cluster's workers for its dial timeout.
func (p *Pool) Client(_ context.Context, target Target) (Client, error) {
	if len(target.Endpoints) == 0 {
		return nil, fmt.Errorf("etcd cluster %s: no endpoints", target.Key)
	}
	fp := fingerprint(target)
	if c := p.reuse(target.Key, fp); c != nil {
		return &remote{c: c, target: target, pool: p, dial: p.Dial}, nil
	}
	c, err := clientv3.New(p.config(target, target.Endpoints))
	if err != nil {
		return nil, fmt.Errorf("etcd cluster %s: %w", target.Key, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if have, ok := p.clients[target.Key]; ok {
		if have.fingerprint == fp { // another worker built the same client meanwhile: keep one
			_ = c.Close()
			return &remote{c: have.client, target: target, pool: p, dial: p.Dial}, nil
		}
		closeLater(have.client)
	}
	p.clients[target.Key] = &pooled{fingerprint: fp, client: c}
	return &remote{c: c, target: target, pool: p, dial: p.Dial}, nil
}

// reuse is the cluster's client when its fingerprint is fp; a stale one is dropped.
func (p *Pool) reuse(key, fp string) *clientv3.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[key]
	switch {
	case !ok:
		return nil
	case c.fingerprint == fp:
		return c.client
	}
	closeLater(c.client)
	delete(p.clients, key)
	return nil
}

// DialFunc opens a connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (p *Pool) config(t Target, endpoints []string) clientv3.Config {
	cfg := config(t, endpoints, p.Dial)
	cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(p.dropOnForeignAnswer(t.Key)))
	return cfg
}

// dropOnForeignAnswer drops the pooled client whose call was answered by something other than
// etcd's gRPC server (IsForeignAnswer). Its connection looks healthy to gRPC, which therefore
// never dials again, and every later call on it fails the same way; the next caller dials anew,
// reaching the member where its Pod is now.
func (p *Pool) dropOnForeignAnswer(key string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := invoker(ctx, method, req, reply, cc, opts...)
		if IsForeignAnswer(err) {
			p.forgetConn(key, cc)
		}
		return err
	}
}

// forgetConn drops the cluster's client if it is still the one on connection cc.
func (p *Pool) forgetConn(key string, cc *grpc.ClientConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[key]; ok && c.client.ActiveConnection() == cc {
		closeLater(c.client)
		delete(p.clients, key)
	}
}

func config(t Target, endpoints []string, dial DialFunc) clientv3.Config {
	eps := make([]string, len(endpoints))
	for i, ep := range endpoints {
		eps[i] = t.url(ep)
	}
	cfg := clientv3.Config{
		Endpoints: eps, DialTimeout: dialTimeout, Logger: zap.NewNop(),
		TLS: t.TLS, Username: t.Username, Password: t.Password,
	}
	cfg.DialOptions = []grpc.DialOption{grpc.WithConnectParams(reconnect)}
	if t.Key != "" {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithChainUnaryInterceptor(timed(t.Key)))
	}
	if dial != nil {
		cfg.DialOptions = append(cfg.DialOptions, grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, "tcp", addr)
		}))
	}
	return cfg
}

// reconnect replaces gRPC's default reconnection back-off (1 s growing to 2 min): a client made
// while a member's Pod or DNS name is still coming up must not sit out seconds after it appears.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
	MinConnectTimeout: dialTimeout,
}

// Forget closes and drops a cluster's client, e.g. when the cluster is deleted.
func (p *Pool) Forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.clients[key]; ok {
		closeLater(c.client)
		delete(p.clients, key)
	}
}

// closeLater closes a client once calls that other workers may still be making are over.
func closeLater(c *clientv3.Client) {
	time.AfterFunc(2*rpcTimeout, func() { _ = c.Close() })
}

// Close closes every pooled client.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.clients {
		_ = c.client.Close()
		delete(p.clients, k)
	}
}

// Len is the number of pooled clients.
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.clients)
}

// fingerprint changes whenever a new client is needed. The TLS config is compared by identity,
// so callers cache it per Secret version. The password enters only as a hash, so the pool
// holds it nowhere but in the client itself.
func fingerprint(t Target) string {
	eps := slices.Clone(t.Endpoints)
	slices.Sort(eps)
	pw := sha256.Sum256([]byte(t.Password))
	return fmt.Sprintf("%s|%p|%s|%x", strings.Join(eps, ","), t.TLS, t.Username, pw)
}
