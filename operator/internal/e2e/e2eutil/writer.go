//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Writer writes keys one after another, as a client of the cluster would during a disruptive
// change: a failed attempt is retried until it succeeds, and every acknowledged write must be
// readable afterwards.
type Writer struct {
	cli    *clientv3.Client
	prefix string
	stop   chan struct{}
	done   chan struct{}

	mu       sync.Mutex
	acked    int
	failed   int
	refused  int
	trust    int
	lastErrs []string
}

// trustFailures are what a client sees when a member or the client distrusts the other's
// certificate ("x509: certificate signed by unknown authority", the alerts "tls: bad
// certificate", "tls: unknown certificate authority"): the failures a CA rotation must never
// cause. A handshake cut short by a member that is restarting ("handshake failed: EOF") is
// not one: it is a restart, which any rollout causes.
var trustFailures = []string{"x509", "certificate"}

// leaderChangeRefusals are etcd's answers to a proposal made while leadership moves: the write
// was refused before it reached the log (nothing applied), so a client retries it safely.
var leaderChangeRefusals = []string{"raft proposal dropped", "etcdserver: leader changed"}

// StartWriter writes prefix/<n> through cli until Stop.
func StartWriter(cli *clientv3.Client, prefix string) *Writer {
	w := &Writer{cli: cli, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *Writer) run() {
	defer close(w.done)
	for n := 0; ; {
		select {
		case <-w.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.cli.Put(ctx, fmt.Sprintf("%s/%08d", w.prefix, n), "v")
		cancel()
		w.mu.Lock()
		if err != nil {
			w.failed++
			if containsAny(err, leaderChangeRefusals) {
				w.refused++
			}
			if containsAny(err, trustFailures) {
				w.trust++
			}
			w.lastErrs = append(w.lastErrs[max(0, len(w.lastErrs)-4):], fmt.Sprintf("%s %v", time.Now().Format("15:04:05.000"), err))
		} else {
			w.acked++
			n++
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(50 * time.Millisecond) // a client's retry back-off, not a wait for state
		}
	}
}

// Stop ends the writes and returns the acknowledged writes, the failed attempts and the last
// errors seen.
func (w *Writer) Stop() (acked, failed int, lastErrs []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, w.failed, w.lastErrs
}

// Failed is how many attempts failed so far.
func (w *Writer) Failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}

// Refused is how many failed attempts etcd refused because leadership was moving.
func (w *Writer) Refused() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

// TrustFailures is how many failed attempts were certificate or handshake errors.
func (w *Writer) TrustFailures() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.trust
}

func containsAny(err error, subs []string) bool {
	for _, s := range subs {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// Acked is the number of acknowledged writes so far.
func (w *Writer) Acked() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

// VerifyWrites fails unless every acknowledged key under prefix is readable.
func VerifyWrites(t testing.TB, cli *clientv3.Client, prefix string, acked int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("count %s/: %v", prefix, err)
	}
	if int(resp.Count) < acked {
		t.Fatalf("%d of %d acknowledged writes under %s/ are readable: writes were lost", resp.Count, acked, prefix)
	}
}
