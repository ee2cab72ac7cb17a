package etcd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// etcdBinary finds etcd in the tools cache (make tools); the test needs a real server.
func etcdBinary(t *testing.T) string {
	dir := os.Getenv("ETCD_OPERATOR_TOOLS")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "etcd-operator-tools")
	}
	bin := filepath.Join(dir, "etcd-v3.7.3", "etcd")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("no etcd at %s: run make tools", bin)
	}
	return bin
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startEtcd runs a one-member etcd on loopback and returns its client URL.
func startEtcd(t *testing.T) string {
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	peer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.Command(etcdBinary(t), "--name=m1", "--data-dir="+t.TempDir(),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=m1="+peer, "--initial-cluster-state=new", "--log-level=error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return client
}

// TestPoolAgainstRealEtcd drives the real client through the calls the controllers make and
// checks that etcd's refusals are classified as the controllers expect.
func TestPoolAgainstRealEtcd(t *testing.T) {
	ep := startEtcd(t)
	pool := NewPool()
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cli, err := pool.Client(ctx, Target{Key: "ns/c", Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	list := eventually(t, ctx, func() (MemberList, error) { return cli.MemberList(ctx) })
	if len(list.Members) != 1 || list.Members[0].Name != "m1" || list.ClusterID == 0 {
		t.Fatalf("member list %+v", list)
	}
	st := eventually(t, ctx, func() (EndpointStatus, error) { return cli.Status(ctx, ep) })
	if st.Leader != list.Members[0].ID || st.Version == "" {
		t.Fatalf("status %+v", st)
	}

	learnerPeer := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	learner := eventually(t, ctx, func() (Member, error) {
		m, err := cli.MemberAddAsLearner(ctx, learnerPeer)
		if err != nil && !IsRetryable(err) {
			t.Fatalf("MemberAddAsLearner: unexpected %v", err)
		}
		return m, err
	})
	if _, err := cli.MemberAddAsLearner(ctx, learnerPeer); !IsAlreadyRegistered(err) {
		t.Errorf("second add of the same peer URL: %v, want already registered", err)
	}
	// The learner never starts, so it can never catch up: etcd must refuse the promotion with
	// the error the cluster controller retries on.
	if err := cli.MemberPromote(ctx, learner.ID); !IsLearnerNotInSync(err) || !IsRetryable(err) {
		t.Errorf("promote of a learner that never started: %v, want not-in-sync", err)
	}
	eventually(t, ctx, func() (struct{}, error) { return struct{}{}, cli.MemberRemove(ctx, learner.ID) })
	if err := cli.MemberRemove(ctx, learner.ID); !IsMemberNotFound(err) {
		t.Errorf("second remove: %v, want member not found", err)
	}

	same, _ := pool.Client(ctx, Target{Key: "ns/c", Endpoints: []string{ep}})
	if same.(*remote).c != cli.(*remote).c || pool.Len() != 1 {
		t.Error("the same endpoints must reuse the pooled client")
	}
	other, _ := pool.Client(ctx, Target{Key: "ns/c", Endpoints: []string{ep, "http://127.0.0.1:1"}})
	if other.(*remote).c == cli.(*remote).c || pool.Len() != 1 {
		t.Error("new endpoints must rebuild the cluster's client")
	}
	pool.Forget("ns/c")
	if pool.Len() != 0 {
		t.Error("Forget must drop the client")
	}
}

// eventually retries fn until it succeeds; etcd refuses reconfiguration for ~5 s after start.
func eventually[T any](t *testing.T, ctx context.Context, fn func() (T, error)) T {
	t.Helper()
	for {
		v, err := fn()
		if err == nil {
			return v
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestPoolAuthAgainstRealEtcd: the calls that enable auth, etcd's refusals once it is on (an
// anonymous admin call, a wrong password), and a client rebuilt when the password changes.
func TestPoolAuthAgainstRealEtcd(t *testing.T) {
	ep := startEtcd(t)
	pool := NewPool()
	defer pool.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	anon, err := pool.Client(ctx, Target{Key: "ns/a", Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	on := eventually(t, ctx, func() (bool, error) { return anon.AuthStatus(ctx) })
	if on {
		t.Fatal("a new etcd has auth on")
	}
	for _, u := range []string{"root", "op"} {
		if err := anon.UserAdd(ctx, u, u+"-pw"); err != nil {
			t.Fatal(err)
		}
		if err := anon.UserGrantRole(ctx, u, "root"); err != nil {
			t.Fatal(err)
		}
	}
	if err := anon.UserAdd(ctx, "root", "x"); !IsUserExists(err) {
		t.Errorf("second UserAdd: %v, want user exists", err)
	}
	if err := anon.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	if on, err := anon.AuthStatus(ctx); err != nil || !on {
		t.Errorf("AuthStatus without credentials after enabling: %v %v, want true (it is open to all)", on, err)
	}
	if _, err := anon.MemberAddAsLearner(ctx, "http://127.0.0.1:9"); !IsAuthRequired(err) {
		t.Errorf("anonymous MemberAdd with auth on: %v, want auth required", err)
	}
	if _, err := anon.Status(ctx, ep); !IsAuthRequired(err) {
		t.Errorf("anonymous Status with auth on: %v, want auth required", err)
	}
	if _, err := pool.Client(ctx, Target{Key: "ns/a", Endpoints: []string{ep}, Username: "op", Password: "wrong"}); !IsAuthFailed(err) {
		t.Errorf("wrong password: %v, want auth failed", err)
	}
	op, err := pool.Client(ctx, Target{Key: "ns/a", Endpoints: []string{ep}, Username: "op", Password: "op-pw"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := op.Status(ctx, ep); err != nil {
		t.Fatalf("Status as op: %v", err)
	}
	// The operator's user rotates root's password without knowing the old one.
	if err := op.UserChangePassword(ctx, "root", "root-pw-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Client(ctx, Target{Key: "ns/r", Endpoints: []string{ep}, Username: "root", Password: "root-pw"}); !IsAuthFailed(err) {
		t.Errorf("root's old password after rotation: %v, want auth failed", err)
	}
	root, err := pool.Client(ctx, Target{Key: "ns/r", Endpoints: []string{ep}, Username: "root", Password: "root-pw-2"})
	if err != nil {
		t.Fatalf("root's new password: %v", err)
	}
	if _, err := root.MemberList(ctx); err != nil {
		t.Fatal(err)
	}
	again, _ := pool.Client(ctx, Target{Key: "ns/r", Endpoints: []string{ep}, Username: "root", Password: "root-pw-2"})
	if again.(*remote).c != root.(*remote).c {
		t.Error("the same credentials must reuse the pooled client")
	}
}

// silentListener accepts connections and never answers, like a member that hangs; accepted
// gets a value for every connection.
func silentListener(t *testing.T) (addr string, accepted <-chan struct{}) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String(), ch
}

// A client with credentials logs in while it is built; while one cluster's login hangs, the
// pool must still hand out other clusters' clients.
func TestPoolDoesNotHoldOtherClustersBehindALogin(t *testing.T) {
	addr, accepted := silentListener(t)
	pool := NewPool()
	defer pool.Close()
	loginDone := make(chan struct{})
	go func() {
		defer close(loginDone)
		_, _ = pool.Client(context.Background(), Target{Key: "ns/hung", Endpoints: []string{"http://" + addr},
			Username: "root", Password: "pw"})
	}()
	<-accepted // the hung cluster's login is under way
	if _, err := pool.Client(context.Background(), Target{Key: "ns/other", Endpoints: []string{"http://127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-loginDone:
		t.Fatal("another cluster's client was handed out only after the hung login gave up")
	default:
	}
	<-loginDone
}
