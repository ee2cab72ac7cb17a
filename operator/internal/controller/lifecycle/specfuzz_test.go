package lifecycle

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/rollout"
)

// mutationsEnv sets how many mutations TestRandomSpecMutations applies; seedEnv replays a run.
const (
	mutationsEnv     = "SPEC_MUTATIONS"
	mutationsSeedEnv = "SPEC_MUTATIONS_SEED"
	defaultMutations = 100
)

// TestRandomSpecMutations: random mutations of a running cluster's spec, accepted or refused by
// the API server, never panic a controller, and after each accepted one the cluster controller
// reports on the new generation: status.observedGeneration and the Available, Progressing and
// Degraded conditions catch up. controller-runtime recovers a reconciler's panic (and retries),
// so panics are caught through its panic handlers (recordPanics), not by a crash.
func TestRandomSpecMutations(t *testing.T) {
	n, seed := mutationsWanted(t)
	t.Logf("%d mutations, seed %d (%s=%d replays it)", n, seed, mutationsSeedEnv, seed)
	r := rand.New(rand.NewPCG(seed, seed))
	ns := newNamespace(t)
	newCluster(t, ns, fuzzCluster, 3)
	waitFor(t, ns, "3 members converged", converged(t, ns, fuzzCluster, 3))
	panicsBefore := recordedPanics.count()
	accepted, refused := 0, 0
	for i := range n {
		what, set := specMutations[r.IntN(len(specMutations))](r)
		err := mutateSpec(ns, fuzzCluster, set)
		switch {
		case apierrors.IsInvalid(err):
			refused++
			t.Logf("%d: %s: refused", i, what)
			continue
		case err != nil:
			t.Fatalf("%d: %s: %v", i, what, err)
		}
		accepted++
		t.Logf("%d: %s: accepted", i, what)
		waitFor(t, ns, fmt.Sprintf("mutation %d (%s) reported on", i, what), reportedOn(t, ns, fuzzCluster))
		if p := recordedPanics.since(panicsBefore); len(p) > 0 {
			t.Fatalf("a controller panicked after mutation %d (%s):\n%s", i, what, p[0])
		}
	}
	t.Logf("%d mutations accepted, %d refused", accepted, refused)
	if accepted == 0 {
		t.Fatal("no mutation was accepted: the generator tests nothing but the schema")
	}
	create(t, serverSecret(t, ns, fuzzCluster))
	create(t, rootSecret(ns, fuzzRootSecret, "fuzz"))
	if err := mutateSpec(ns, fuzzCluster, healSpec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "the status lists the members' versions", func() bool {
		return len(runningVersions(getCluster(t, ns, fuzzCluster))) > 0
	})
	if err := mutateSpec(ns, fuzzCluster, func(s *v1alpha2.EtcdClusterSpec) {
		s.Version = healVersion(getCluster(t, ns, fuzzCluster))
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "converged at 3 after the spec was healed", converged(t, ns, fuzzCluster, 3))
	if p := recordedPanics.since(panicsBefore); len(p) > 0 {
		t.Fatalf("a controller panicked:\n%s", p[0])
	}
}

const fuzzCluster = "fuzz"

// healVersion is a version the API accepts from spec.version (one minor away at most) that every
// member can be rolled to in one step: the spec's own, one a member runs, or another supported one.
// Two accepted edits can together skip a minor before the first rollout ended (3.6.16 → 3.7.3,
// then 3.8.0 while members still run 3.6; the CEL rule judges each edit against the member
// versions in the status, which may list none at that moment, so the heal waits until it lists
// them): the operator then refuses to roll and asks for one minor above 3.6, as the heal sets.
func healVersion(c *v1alpha2.EtcdCluster) string {
	running := runningVersions(c)
	candidates := append(append([]string{c.Spec.Version}, running...), "3.5.35", "3.6.16", "3.7.3")
	for _, v := range candidates {
		if minorsApart(c.Spec.Version, v) <= 1 && rollout.VersionSkew(v, running, "") == "" {
			return v
		}
	}
	return c.Spec.Version
}

// minorsApart is how many minors two 3.x versions are apart.
func minorsApart(a, b string) int {
	minor := func(v string) int {
		parts := strings.Split(v, ".")
		if len(parts) < 2 {
			return -100
		}
		n, _ := strconv.Atoi(parts[1])
		return n
	}
	d := minor(a) - minor(b)
	if d < 0 {
		d = -d
	}
	return d
}

// runningVersions are the etcd versions the status says the members run.
func runningVersions(c *v1alpha2.EtcdCluster) []string {
	var running []string
	for _, m := range c.Status.Members {
		if m.Version != "" {
			running = append(running, m.Version)
		}
	}
	return running
}

// mutationsWanted is $SPEC_MUTATIONS (default 100) and $SPEC_MUTATIONS_SEED (default the clock).
func mutationsWanted(t *testing.T) (int, uint64) {
	n, seed := defaultMutations, uint64(time.Now().UnixNano())
	var err error
	if s := os.Getenv(mutationsEnv); s != "" {
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("%s: %v", mutationsEnv, err)
		}
	}
	if s := os.Getenv(mutationsSeedEnv); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s: %v", mutationsSeedEnv, err)
		}
	}
	return n, seed
}

// mutateSpec applies set to the cluster's spec with an update, re-reading it on conflict (the
// operator writes the cluster's status and finalizers meanwhile).
func mutateSpec(ns, name string, set func(*v1alpha2.EtcdClusterSpec)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &v1alpha2.EtcdCluster{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		set(&c.Spec)
		return k8s.Update(context.Background(), c)
	})
}

// reportedOn: status.observedGeneration is the cluster's generation and so is each condition's.
func reportedOn(t *testing.T, ns, name string) func() bool {
	return func() bool {
		c := getCluster(t, ns, name)
		if c.Status.ObservedGeneration != c.Generation {
			return false
		}
		for _, typ := range []string{v1alpha2.ConditionAvailable, v1alpha2.ConditionProgressing, v1alpha2.ConditionDegraded} {
			if cond := meta.FindStatusCondition(c.Status.Conditions, typ); cond == nil || cond.ObservedGeneration != c.Generation || cond.Reason == "" {
				return false
			}
		}
		return true
	}
}

// panicRecorder keeps every panic a reconciler raised, with its stack; startManager installs
// it among apimachinery's panic handlers, which controller-runtime calls when it recovers one.
type panicRecorder struct {
	mu     sync.Mutex
	panics []string
}

var recordedPanics panicRecorder

func (p *panicRecorder) record(_ context.Context, r any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.panics = append(p.panics, fmt.Sprintf("%v\n%s", r, debug.Stack()))
}

func (p *panicRecorder) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.panics)
}

// since is the panics recorded after the first n.
func (p *panicRecorder) since(n int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.panics[n:]...)
}
