package etcd

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A member's address answered by a server that is not etcd's gRPC server (HTTP/2, status 200,
// no gRPC headers: what an etcd whose gRPC server stopped under a kept-open connection sends)
// leaves a pooled client on a connection gRPC thinks healthy. The pool drops that client at the
// first such answer, so the next caller dials again and reaches the member where it now runs.
func TestPoolDropsClientAnsweredByForeignServer(t *testing.T) {
	ep := startEtcd(t)
	real, err := url.Parse(ep)
	if err != nil {
		t.Fatal(err)
	}
	foreign := foreignServer(t)
	var toForeign atomic.Bool
	toForeign.Store(true)
	pool := NewPool()
	defer pool.Close()
	var d net.Dialer
	pool.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
		if toForeign.Load() {
			return d.DialContext(ctx, network, foreign)
		}
		return d.DialContext(ctx, network, real.Host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	target := Target{Key: "ns/moved", Endpoints: []string{"http://m1.moved.ns.svc:2379"}}
	cli, err := pool.Client(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.MemberList(ctx); !IsForeignAnswer(err) {
		t.Fatalf("MemberList through the foreign server: %v, want a foreign answer", err)
	}
	if n := pool.Len(); n != 0 {
		t.Fatalf("the pool kept the client answered by a foreign server (%d pooled)", n)
	}
	toForeign.Store(false) // the member is back where the dialer finds it
	list := eventually(t, ctx, func() (MemberList, error) {
		cli, err := pool.Client(ctx, target)
		if err != nil {
			return MemberList{}, err
		}
		return cli.MemberList(ctx)
	})
	if len(list.Members) != 1 {
		t.Fatalf("member list %+v", list)
	}
}

// foreignServer answers every HTTP/2 request with 200 and an empty body, as net/http does for a
// handler that writes nothing (gRPC's ServeHTTP on a stopped server). Its address is returned.
func foreignServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Protocols: new(http.Protocols)}
	srv.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

func TestIsForeignAnswer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.DeadlineExceeded, false},
		{status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: connection refused\""), false},
		{status.Error(codes.Unknown, "unexpected HTTP status code received from server: 200 (OK); malformed header: missing HTTP content-type"), true},
		{status.Error(codes.Internal, "transport: received unexpected content-type \"text/plain\""), true},
	} {
		if got := IsForeignAnswer(tc.err); got != tc.want {
			t.Errorf("IsForeignAnswer(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
