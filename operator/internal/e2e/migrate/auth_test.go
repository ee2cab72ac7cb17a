//go:build e2e

package migrate

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// enableLegacyAuth does what the legacy operator does for spec.security.enableAuth, through a
// client whose certificate has CN root: role root, user root without a password, the grant,
// then AuthEnable. Clients then act as root by that certificate.
func enableLegacyAuth(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cli.RoleAdd(ctx, v1alpha2.RootRole); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserAddWithOptions(ctx, v1alpha2.RootUser, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, v1alpha2.RootUser, v1alpha2.RootRole); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	// An anonymous request is refused now; a put by the certificate is root's.
	if _, err := cli.Put(ctx, "/auth-probe", "root by certificate"); err != nil {
		t.Fatalf("a put as root by certificate after AuthEnable: %v", err)
	}
}

// authWatch polls etcd's auth status while the adoption runs: auth must never be seen off.
type authWatch struct {
	want    bool
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	polls   int
	offSeen int
}

func watchAuth(cli *clientv3.Client, want bool) *authWatch {
	w := &authWatch{want: want, stop: make(chan struct{})}
	if !want {
		return w
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				w.poll(cli)
			}
		}
	}()
	return w
}

func (w *authWatch) poll(cli *clientv3.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := cli.AuthStatus(ctx)
	if err != nil {
		return // a dial hiccup says nothing about auth
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.polls++
	if !resp.Enabled {
		w.offSeen++
	}
}

// check stops the watch and fails the test if auth was ever seen off (or never seen at all).
func (w *authWatch) check(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.done.Wait()
	if !w.want {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.polls == 0 || w.offSeen > 0 {
		t.Errorf("auth during the adoption: off in %d of %d polls, want always on", w.offSeen, w.polls)
		return
	}
	t.Logf("auth during the adoption: on in all %d polls", w.polls)
}

// checkOperatorUser: under the operator, auth is still on and the operator made its own user
// with the root role (acting as root by its CN-root certificate: root has no password).
func checkOperatorUser(t *testing.T, cli *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := cli.AuthStatus(ctx)
	if err != nil || !st.Enabled {
		t.Fatalf("auth status under the operator: %v %v", st, err)
	}
	u, err := cli.UserGet(ctx, v1alpha2.OperatorUser)
	if err != nil || !slices.Contains(u.Roles, v1alpha2.RootRole) {
		t.Fatalf("the operator's etcd user: %v %v", u, err)
	}
	t.Logf("auth on; the operator's user %s has roles %v", v1alpha2.OperatorUser, u.Roles)
}
