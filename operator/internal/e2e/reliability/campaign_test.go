//go:build e2e

package reliability

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const convergeTimeout = 4 * time.Minute

// faultsEnv sets how many faults every campaign injects; unset, each injects its short count
// (what `make test` runs). `make soak` sets it to 50.
const faultsEnv = "RELIABILITY_FAULTS"

// seedEnv replays a campaign's random moments and victims: each campaign logs its seed.
const seedEnv = "RELIABILITY_SEED"

// faultKind is what a campaign does to the cluster at a random moment.
type faultKind int

const (
	killLeader faultKind = iota
	killFollower
	restartOperator
	partitionLeader
	restartFollowerNode
	faultKinds // how many there are
)

func (k faultKind) String() string {
	return [...]string{"SIGKILL of the leader", "SIGKILL of a follower", "operator SIGKILLed and restarted",
		"the leader cut off the network for 2–6 s", "a follower's node stopped for 5–15 s and started"}[k]
}

// campaign is one fault campaign's bookkeeping: the operator it can kill, its workload (a
// fresh history per round, so that a long campaign's linearizability check stays small; the
// rounds use distinct keys, and each history ends with a read of every key), the faults
// injected and the slowest convergence. Its row goes into the table TestMain prints.
type campaign struct {
	t           *testing.T
	c           *framework.Cluster
	op          *e2eutil.Operator
	ns, cluster string
	r           *rand.Rand
	// faults is how many the campaign is asked to inject.
	faults int
	// pick names the leader or a follower; by default it asks etcd, a TLS campaign reads status.
	pick func(leader bool) string
	// pickNode names the member whose node a node fault stops: by default a follower. A node
	// stop wipes its members' tmpfs, so a tmpfs campaign already missing one member's data picks
	// the replacement (two of three members' data lost at once is a quorum loss, which the
	// default quorumLoss policy Wait reports and leaves to the user).
	pickNode func() string
	// whileFull, when set, checks a follower's volume the full-volume fault just filled.
	whileFull func(victim string)

	cli *clientv3.Client
	// h is the running round's history; prev the one before, until it is checked.
	h, prev *e2eutil.History
	rounds  int
	row     row
}

// newCampaign starts the operator binary for this test (so that it can be killed), with
// operatorFlags after the defaults, and a namespace; short is the campaign's fault count unless
// $RELIABILITY_FAULTS says otherwise.
func newCampaign(t *testing.T, title, cluster string, short int, operatorFlags ...string) *campaign {
	c := framework.Shared(t)
	taintRealNodes(t, c) // before any campaign's cluster: only the real-node campaign's members go there
	cp := &campaign{t: t, c: c, op: e2eutil.StartSuiteOperator(t, c, 300, operatorFlags...), ns: e2eutil.NewNamespace(t, c), cluster: cluster,
		faults: faultsWanted(t, short), row: row{Campaign: title, Linearizable: true}}
	seed := campaignSeed(t)
	t.Logf("campaign %q: %d faults, seed %d (%s=%d replays its random moments)", title, cp.faults, seed, seedEnv, seed)
	cp.r = rand.New(rand.NewPCG(seed, seed))
	e2eutil.DiagnoseOnFailure(t, c, cp.op, cp.ns, cluster)
	cp.pick = func(leader bool) string { return member(t, c, cp.ns, cluster, leader) }
	cp.pickNode = func() string { return cp.pick(false) }
	t.Cleanup(func() {
		for _, h := range []*e2eutil.History{cp.prev, cp.h} {
			if h != nil {
				h.Stop() // a campaign that failed before its end leaves no client running
			}
		}
		results.add(cp.row)
	})
	return cp
}

// campaignSeed is $RELIABILITY_SEED, or the clock.
func campaignSeed(t *testing.T) uint64 {
	s := os.Getenv(seedEnv)
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	seed, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", seedEnv, err)
	}
	return seed
}

// faultsWanted is $RELIABILITY_FAULTS, or short.
func faultsWanted(t *testing.T, short int) int {
	s := os.Getenv(faultsEnv)
	if s == "" {
		return short
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", faultsEnv, s)
	}
	return n
}

// kind is the fault of round i: each kind in turn.
func (cp *campaign) kind(i int) faultKind { return faultKind(i) % faultKinds }

// watch starts the workload through cli.
func (cp *campaign) watch(cli *clientv3.Client) {
	cp.cli = cli
	cp.nextRound()
}

// nextRound starts a fresh history on fresh keys, waits until it is going, then checks the
// previous round's: the workload never stops while the campaign runs.
func (cp *campaign) nextRound() {
	cp.rounds++
	cp.prev, cp.h = cp.h, e2eutil.StartHistory(cp.cli, fmt.Sprintf("/campaign/%d", cp.rounds), 4, 6)
	e2eutil.WaitFor(cp.t, time.Minute, "the workload going", func() bool { return cp.h.Len() > 50 })
	if cp.prev != nil {
		cp.check(&cp.prev)
	}
}

// check stops and checks *hp (and forgets it: it is stopped whatever the check finds).
func (cp *campaign) check(hp **e2eutil.History) {
	h := *hp
	*hp = nil
	rep := h.StopAndCheck(cp.t, cp.t.TempDir())
	cp.row.Ops += rep.Ops
	cp.row.Unknown += rep.Unknown
	cp.row.Lost += rep.Lost
	cp.row.Linearizable = cp.row.Linearizable && rep.Linearizable
	cp.row.Checked = true
}

// finish checks the last round's history.
func (cp *campaign) finish() {
	cp.check(&cp.h)
	cp.row.Complete = true
	cp.t.Logf("campaign %q: %s", cp.row.Campaign, cp.row)
}

// inject does a fault now and returns the condition of its being over (the killed container
// restarted, or its Pod gone or replaced); a convergence is awaited with it.
func (cp *campaign) inject(k faultKind) (over func() bool) {
	cp.t.Helper()
	cp.row.Faults++
	switch k {
	case restartOperator:
		if err := cp.op.Kill(); err != nil {
			cp.t.Fatal(err)
		}
		if err := cp.op.Start(); err != nil {
			cp.t.Fatal(err)
		}
		cp.t.Logf("fault %d: %s", cp.row.Faults, k)
		return func() bool { return true }
	case partitionLeader:
		cp.onVictim(func() string { return cp.pick(true) }, cp.partition)
		return func() bool { return true }
	case restartFollowerNode:
		cp.onVictim(cp.pickNode, cp.restartNodeOf)
		return func() bool { return true }
	}
	var victim string
	var before *corev1.Pod
	cp.onVictim(func() string { return cp.pick(k == killLeader) }, func(name string) error {
		victim, before = name, e2eutil.Pod(cp.t, cp.c, cp.ns, name)
		return cp.c.KillContainer(context.Background(), cp.ns, name, "etcd")
	})
	cp.t.Logf("fault %d: %s (%s)", cp.row.Faults, k, victim)
	return func() bool {
		p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
		return p == nil || before == nil || p.UID != before.UID || restarts(p) > restarts(before) // a rollout may replace the Pod
	}
}

// onVictim picks a member and does the fault to it. A member whose Pod or container is not
// there right now (the operator is replacing or restarting it: a rollout's step, or the
// previous fault) is picked again: the fault lands on a running member.
func (cp *campaign) onVictim(pick func() string, fault func(name string) error) {
	cp.t.Helper()
	e2eutil.WaitNoError(cp.t, time.Minute, "a running member to fault", func() error {
		name := pick()
		err := fault(name)
		if apierrors.IsNotFound(err) || errors.Is(err, fs.ErrNotExist) {
			cp.t.Logf("member %s has no running Pod right now (%v); picking again", name, err)
		} else if err != nil {
			cp.t.Fatal(err)
		}
		return err
	})
}

// partition cuts victim off the network for a random 2–6 s, then heals it (a Pod deleted
// meanwhile, whose link went with it, needs no healing).
func (cp *campaign) partition(victim string) error {
	cp.t.Helper()
	ctx := context.Background()
	if err := cp.c.Partition(ctx, cp.ns, victim); err != nil {
		return err
	}
	heal := func() error { return client.IgnoreNotFound(cp.c.Heal(ctx, cp.ns, victim)) }
	cp.t.Cleanup(func() { _ = heal() }) // the network back whatever fails first
	cp.t.Logf("fault %d: the leader %s cut off the network", cp.row.Faults, victim)
	time.Sleep(time.Duration(2000+cp.r.IntN(4000)) * time.Millisecond) // the partition's length: the fault itself
	if err := heal(); err != nil {
		cp.t.Fatal(err)
	}
	cp.t.Logf("%s healed", victim)
	return nil
}

// restartNodeOf stops the node victim runs on (its agent and every Pod on it die, as when a
// machine goes down) for a random 5–15 s, then starts it again; it waits for the Node Ready.
func (cp *campaign) restartNodeOf(victim string) error {
	cp.t.Helper()
	p := e2eutil.Pod(cp.t, cp.c, cp.ns, victim)
	if p == nil || p.Spec.NodeName == "" { // not created or not scheduled yet: no node to stop
		return apierrors.NewNotFound(corev1.Resource("pods"), victim)
	}
	node, err := cp.c.NodeIndex(p.Spec.NodeName)
	if err != nil {
		cp.t.Fatal(err)
	}
	if err := cp.c.StopNode(node); err != nil {
		cp.t.Fatal(err)
	}
	cp.t.Cleanup(func() { _ = cp.c.StartNode(node) }) // the node back whatever fails first
	cp.t.Logf("fault %d: node %d of follower %s stopped", cp.row.Faults, node, victim)
	time.Sleep(time.Duration(5000+cp.r.IntN(10000)) * time.Millisecond) // the outage's length: the fault itself
	if err := cp.c.StartNode(node); err != nil {
		cp.t.Fatal(err)
	}
	cp.t.Logf("node %d started", node)
	return nil
}

// injectSoon does a fault at a random moment of the next 3 s: of an operation just started.
func (cp *campaign) injectSoon(k faultKind) (over func() bool) {
	cp.t.Helper()
	time.Sleep(time.Duration(cp.r.IntN(3000)) * time.Millisecond) // a random moment of the change: the point of the campaign
	return cp.inject(k)
}

// converge waits for cond (and the fault being over), counting from start, and keeps the slowest.
func (cp *campaign) converge(start time.Time, what string, timeout time.Duration, over, cond func() bool) {
	cp.t.Helper()
	e2eutil.WaitFor(cp.t, timeout, what, func() bool { return over() && cond() })
	took := time.Since(start)
	cp.t.Logf("%s: %s", what, took.Round(100*time.Millisecond)) // which change was the slowest
	cp.row.Slowest = max(cp.row.Slowest, took)
}

// converged is the campaign's cluster converged at n members.
func (cp *campaign) converged(n int) func() bool {
	return func() bool { return e2eutil.Converged(cp.t, cp.c, cp.ns, cp.cluster, n) }
}

// statusPick names the leader or a follower from the cluster's status: it needs no etcd
// client, so it works whatever TLS the cluster has.
func (cp *campaign) statusPick(leader bool) string {
	var victim string
	e2eutil.WaitFor(cp.t, time.Minute, "a member of that role in the cluster's status", func() bool {
		for _, m := range e2eutil.GetCluster(cp.t, cp.c, cp.ns, cp.cluster).Status.Members {
			if m.Role == map[bool]string{true: "Leader", false: "Follower"}[leader] {
				victim = m.Name
				return true
			}
		}
		return false
	})
	return victim
}

// restarts is how often a Pod's etcd container restarted (0 for no Pod).
func restarts(p *corev1.Pod) int32 {
	if p == nil {
		return 0
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == "etcd" {
			return s.RestartCount
		}
	}
	return 0
}

// onVersion: every member runs v and the cluster converged at n.
func (cp *campaign) onVersion(v string, n int) func() bool {
	return func() bool {
		for _, m := range e2eutil.Members(cp.t, cp.c, cp.ns, cp.cluster) {
			if m.Status.Version != v {
				return false
			}
		}
		return e2eutil.Converged(cp.t, cp.c, cp.ns, cp.cluster, n)
	}
}

// setVersion edits the cluster's spec.version.
func (cp *campaign) setVersion(v string) {
	cp.t.Helper()
	ec := e2eutil.GetCluster(cp.t, cp.c, cp.ns, cp.cluster)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = v
	if err := cp.c.Client.Patch(context.Background(), ec, patch); err != nil {
		cp.t.Fatal(err)
	}
}
