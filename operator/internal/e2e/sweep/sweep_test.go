//go:build e2e

package sweep

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// FullEnv set to 1 runs every step of every operation; unset, only the steps marked short
// (make test's budget).
const FullEnv = "SWEEP_FULL"

const (
	// crashTimeout bounds the wait from the trigger to the armed operator's exit.
	crashTimeout = 3 * time.Minute
	// convergeTimeout bounds the wait from the restart to convergence.
	convergeTimeout = 4 * time.Minute
	// setupTimeout bounds a scenario's cluster coming up before any crash.
	setupTimeout = 3 * time.Minute
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// subject is the cluster a scenario's steps act on, one step after the other.
type subject struct {
	ns, name string
	replicas int32
	// client reads etcd's member list (a TLS or logged-in client where the plane needs one).
	client func(t *testing.T) (*clientv3.Client, error)
	// gen counts the changes made to it (rollout: the CPU request; trust: the CA).
	gen int
	// state is whatever else a scenario keeps (the CA of a rotation, the root password).
	state any
}

// step is one row: the operation is triggered with the operator armed at point, and done must
// hold after the restart.
type step struct {
	point   string
	nth     int
	short   bool
	trigger func(t *testing.T, s *sweep, sub *subject)
	done    func(t *testing.T, s *sweep, sub *subject) error
}

// scenario is one operation: setup brings up its cluster converged; with fresh set, each step
// gets a cluster of its own (an operation that happens once per cluster).
type scenario struct {
	op    string
	fresh bool
	setup func(t *testing.T, s *sweep) *subject
	steps []step
}

// row is one line of the table.
type row struct {
	op, step           string
	crashed, converged time.Duration
	outcome            string
}

type sweep struct {
	c    *framework.Cluster
	op   *e2eutil.Operator
	full bool
	rows []row
}

// TestCrashPointSweep runs every scenario's steps in order, on one operator process: the crash
// points and the restarts are the operator's, so no two steps may overlap.
func TestCrashPointSweep(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	bin, err := e2eutil.CrashpointOperatorBinary(c)
	if err != nil {
		t.Fatal(err)
	}
	s := &sweep{c: c, op: e2eutil.StartOperatorFrom(t, c, bin, "--agent-image="+e2eutil.AgentImage), full: os.Getenv(FullEnv) == "1"}
	scenarios := all()
	checkCoverage(t, scenarios)
	start := time.Now()
	for _, sc := range scenarios {
		t.Run(testName(sc.op), func(t *testing.T) { s.run(t, sc) })
	}
	t.Logf("crash-point sweep (%s), %s in all:\n%s", s.mode(), time.Since(start).Round(time.Second), s.table())
}

// checkCoverage: every crash point the controllers hit has a row, so a new one cannot be left
// out of the sweep.
func checkCoverage(t *testing.T, scenarios []scenario) {
	var covered []string
	for _, sc := range scenarios {
		for _, st := range sc.steps {
			covered = append(covered, st.point)
		}
	}
	for _, p := range crashpoint.All {
		if !slices.Contains(covered, p.Name) {
			t.Errorf("crash point %s (%s) has no step in the sweep", p.Name, p.Operation)
		}
	}
}

func (s *sweep) mode() string {
	if s.full {
		return "every step, " + FullEnv + "=1"
	}
	return "short selection; " + FullEnv + "=1 runs every step"
}

// run plays a scenario's selected steps; once one fails, the later ones of a shared cluster
// would start from an unknown state and are reported as not run.
func (s *sweep) run(t *testing.T, sc scenario) {
	var sub *subject
	broken := ""
	for _, st := range sc.steps {
		r := row{op: sc.op, step: spec(st)}
		switch {
		case !s.full && !st.short:
			r.outcome = "not in the short run"
		case broken != "":
			r.outcome = "not run: " + broken + " failed"
		default:
			if sub == nil || sc.fresh {
				sub = sc.setup(t, s)
			}
			ok := t.Run(testName(r.step), func(t *testing.T) { s.crashAndConverge(t, sub, st, &r) })
			if !ok && !sc.fresh {
				broken = r.step
			}
		}
		s.rows = append(s.rows, r)
	}
}

// testName is a subtest name without the separators -run splits on.
func testName(s string) string { return strings.NewReplacer(" ", "-", "/", "-").Replace(s) }

func spec(st step) string {
	return crashpoint.Spec{Name: st.point, Nth: st.nth}.String()
}

// crashAndConverge is one row: arm, trigger, see the process exit at the point, restart
// unarmed, wait for done.
func (s *sweep) crashAndConverge(t *testing.T, sub *subject, st step, r *row) {
	r.outcome = "FAILED"
	s.op.Arm(spec(st))
	if err := s.op.Restart(); err != nil {
		t.Fatalf("start armed at %s: %v", spec(st), err)
	}
	defer s.disarm(t)
	start := time.Now()
	st.trigger(t, s, sub)
	code, exited := s.op.WaitExit(crashTimeout)
	r.crashed = time.Since(start)
	// The armed process exits right after its line, so it ends the log (earlier rows' lines do not count).
	hit := strings.Contains(s.op.LogTail(3), "crashpoint "+st.point+" hit")
	switch {
	case !exited:
		r.outcome = "FAILED: step never reached"
		t.Fatalf("the operator did not reach %s within %s", spec(st), crashTimeout)
	case code != crashpoint.ExitCode || !hit:
		t.Fatalf("the operator exited with code %d, not at %s:\n%s", code, spec(st), s.op.LogTail(30))
	}
	s.disarm(t)
	restarted := time.Now()
	var last error
	for last = st.done(t, s, sub); last != nil; last = st.done(t, s, sub) {
		if time.Since(restarted) > convergeTimeout {
			r.outcome = "FAILED: not converged"
			e2eutil.DiagnoseOnFailure(t, s.c, s.op, sub.ns, sub.name)
			t.Fatalf("not converged %s after the restart: %v", convergeTimeout, last)
		}
		time.Sleep(e2eutil.PollInterval)
	}
	r.converged, r.outcome = time.Since(restarted), "converged"
	t.Logf("%s: crashed %s after the trigger, converged %s after the restart", spec(st),
		r.crashed.Round(100*time.Millisecond), r.converged.Round(100*time.Millisecond))
}

// disarm restarts the operator unarmed unless it already runs so.
func (s *sweep) disarm(t *testing.T) {
	if s.op.Armed() == "" && s.op.Pid() != 0 {
		if _, gone := s.op.WaitExit(0); !gone {
			return
		}
	}
	s.op.Arm("")
	if err := s.op.Restart(); err != nil {
		t.Fatalf("restart unarmed: %v", err)
	}
}

func (s *sweep) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-16s | %-34s | %-13s | %s\n", "operation", "step", "crashed after", "outcome")
	for _, r := range s.rows {
		crashed, outcome := "", r.outcome
		if r.crashed > 0 {
			crashed = fmt.Sprintf("%.1f s", r.crashed.Seconds())
		}
		if r.outcome == "converged" {
			outcome = fmt.Sprintf("converged in %.1f s", r.converged.Seconds())
		}
		fmt.Fprintf(&b, "%-16s | %-34s | %-13s | %s\n", r.op, r.step, crashed, outcome)
	}
	return b.String()
}
