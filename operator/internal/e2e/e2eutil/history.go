//go:build e2e

package e2eutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/internal/kvcheck"
)

// History is a workload that records what it did for a linearizability check: concurrent
// clients issue puts, gets, deletes and compare-and-swaps on a small key space, every written
// value unique, each operation with its invocation and response time on one monotonic clock.
// An operation without an answer (timeout, cut connection) is recorded with an unknown outcome.
type History struct {
	cli    *clientv3.Client
	prefix string
	keys   int
	// clients is how many write; the final reads come from one more.
	clients int
	start   time.Time
	stop    chan struct{}
	wg      sync.WaitGroup

	mu  sync.Mutex
	ops []kvcheck.Op
}

// StartHistory runs clients goroutines against cli over keys keys until Stop.
func StartHistory(cli *clientv3.Client, prefix string, clients, keys int) *History {
	h := &History{cli: cli, prefix: prefix, keys: keys, clients: clients, start: time.Now(), stop: make(chan struct{})}
	for c := range clients {
		h.wg.Add(1)
		go h.client(cli, prefix, c, keys)
	}
	return h
}

func (h *History) client(cli *clientv3.Client, prefix string, id, keys int) {
	defer h.wg.Done()
	r := rand.New(rand.NewPCG(uint64(id), uint64(h.start.UnixNano())))
	last := map[string]string{} // the last value this client saw per key, for its CAS
	for n := 0; ; n++ {
		select {
		case <-h.stop:
			return
		default:
		}
		key := fmt.Sprintf("%s/%d", prefix, r.IntN(keys))
		in := kvcheck.Input{Key: key, Value: fmt.Sprintf("c%d-%d", id, n)}
		switch p := r.IntN(10); {
		case p < 4:
			in.Kind = kvcheck.Put
		case p < 8:
			in.Kind = kvcheck.Get
		case p < 9:
			in.Kind = kvcheck.Delete
		default:
			in.Kind, in.Expect = kvcheck.CAS, last[key]
		}
		op := h.do(cli, id, in)
		if in.Kind == kvcheck.Get && op.Output.Found {
			last[key] = op.Output.Value
		}
		if op.Output.Unknown {
			time.Sleep(50 * time.Millisecond) // a client backs off a little
		}
	}
}

// do runs one operation and records it.
func (h *History) do(cli *clientv3.Client, id int, in kvcheck.Input) kvcheck.Op {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	op := kvcheck.Op{Client: id, Input: in, Call: time.Since(h.start).Nanoseconds()}
	var err error
	switch in.Kind {
	case kvcheck.Put:
		_, err = cli.Put(ctx, in.Key, in.Value)
	case kvcheck.Delete:
		_, err = cli.Delete(ctx, in.Key)
	case kvcheck.Get:
		var resp *clientv3.GetResponse
		if resp, err = cli.Get(ctx, in.Key); err == nil && len(resp.Kvs) > 0 {
			op.Output.Found, op.Output.Value = true, string(resp.Kvs[0].Value)
		}
	case kvcheck.CAS:
		cmp := clientv3.Compare(clientv3.Value(in.Key), "=", in.Expect)
		var resp *clientv3.TxnResponse
		if resp, err = cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(in.Key, in.Value)).Commit(); err == nil {
			op.Output.OK = resp.Succeeded
		}
	}
	op.Return = time.Since(h.start).Nanoseconds()
	// Any error may hide an applied write (the answer was lost): unknown, which the model
	// treats as either. A read that failed changed nothing either way.
	op.Output.Unknown = err != nil
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
	return op
}

// HistoryReport is what a campaign reports of its workload.
type HistoryReport struct {
	Ops, Unknown, Writes int
	// Lost counts acknowledged writes a later read contradicts (kvcheck.LostWrites); the final
	// read of every key makes one lost at the end show too.
	Lost          int
	Linearizable  bool
	Visualization string
}

// StopAndCheck stops the clients, reads every key once more (so a write lost at the end shows),
// and checks the history; a history that is not linearizable fails the test, with porcupine's
// visualization written under dir.
func (h *History) StopAndCheck(t testing.TB, dir string) HistoryReport {
	t.Helper()
	h.Stop()
	for k := range h.keys {
		WaitNoError(t, time.Minute, "a final read", func() error {
			if op := h.do(h.cli, h.clients, kvcheck.Input{Kind: kvcheck.Get, Key: fmt.Sprintf("%s/%d", h.prefix, k)}); op.Output.Unknown {
				return fmt.Errorf("read of %s failed", op.Input.Key)
			}
			return nil
		})
	}
	rep := HistoryReport{Ops: len(h.ops)}
	for _, op := range h.ops {
		if op.Output.Unknown {
			rep.Unknown++
		}
		if op.Input.Kind != kvcheck.Get {
			rep.Writes++
		}
	}
	res, err := kvcheck.Check(h.ops, 5*time.Minute, filepath.Join(dir, t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	rep.Linearizable, rep.Visualization = res.Linearizable, res.Visualization
	rep.Lost = kvcheck.LostWrites(h.ops)
	t.Logf("history: %d operations (%d writes), %d with unknown outcome; linearizable %v; %d acknowledged writes lost",
		rep.Ops, rep.Writes, rep.Unknown, rep.Linearizable, rep.Lost)
	if rep.Lost > 0 {
		t.Errorf("%d acknowledged writes lost", rep.Lost)
	}
	switch {
	case res.TimedOut:
		t.Errorf("the linearizability check timed out on %d operations", rep.Ops)
	case !res.Linearizable:
		t.Errorf("history not linearizable; visualization: %s", res.Visualization)
	}
	return rep
}

// Stop stops the clients without a check: for a campaign that ends before its history is checked.
func (h *History) Stop() {
	close(h.stop)
	h.wg.Wait()
}

// Len is how many operations have been recorded so far.
func (h *History) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}
