package agent

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// execAgent, set in a child's environment, makes the test binary run that subcommand instead
// of the tests: the benchmark measures an agent as its own process.
const execAgent = "AGENT_TEST_EXEC"

func TestMain(m *testing.M) {
	if cmd := os.Getenv(execAgent); cmd != "" {
		if f := os.Getenv(benchProfileEnv); f != "" {
			if pf, err := os.Create(fmt.Sprintf("%s.%s.%d", f, cmd, os.Getpid())); err == nil {
				_ = pprof.StartCPUProfile(pf)
			}
		}
		code, ok := Main(cmd, os.Args[1:])
		if !ok {
			fmt.Fprintf(os.Stderr, "%s=%s: not a subcommand\n", execAgent, cmd)
			code = 2
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(os.Stderr, "%s%d\n", goSysMarker, ms.Sys)
		pprof.StopCPUProfile()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// goSysMarker starts the child's last line: the Go runtime's memory from the OS (MemStats.Sys).
const goSysMarker = "go-runtime-sys-bytes="

// benchEnv turns the measurement on; it is off by default (it writes about 1 GiB to disk).
const benchEnv = "ETCD_AGENT_BENCH"

// benchProfileEnv, set to a path prefix, makes every agent the benchmark runs write a CPU
// profile to <prefix>.<subcommand>.<pid>; benchLogEnv logs each process's output.
const (
	benchProfileEnv = "ETCD_AGENT_BENCH_CPUPROFILE"
	benchLogEnv     = "ETCD_AGENT_BENCH_LOG"
)

// measured is one process's wall time and peak resident set.
type measured struct {
	what  string
	bytes int64
	wall  time.Duration
	// hwm is the peak RSS (VmHWM) of the process itself, in KiB; goSys the Go runtime's
	// memory from the OS at exit (agents only).
	hwm, goSys int64
	// childHWM is the largest peak of its child processes (etcdutl under the restore agent).
	childHWM int64
	// cpu is the process's own user+system time (less noisy than wall on a shared machine).
	cpu time.Duration
	// serverCPU is what the S3 server spent meanwhile (S3 rows only).
	serverCPU time.Duration
}

func (m measured) String() string {
	s := fmt.Sprintf("%-38s %7.1f MiB %6.2f s %7.1f MiB/s  cpu %5.2f s  peak RSS %6.1f MiB",
		m.what, float64(m.bytes)/(1<<20), m.wall.Seconds(), float64(m.bytes)/(1<<20)/m.wall.Seconds(), m.cpu.Seconds(), float64(m.hwm)/1024)
	if m.serverCPU > 0 {
		s += fmt.Sprintf("  S3 server cpu %5.2f s", m.serverCPU.Seconds())
	}
	if m.goSys > 0 {
		s += fmt.Sprintf("  Go runtime Sys %5.1f MiB", float64(m.goSys)/(1<<20))
	}
	if m.childHWM > 0 {
		s += fmt.Sprintf("  child peak RSS %5.1f MiB", float64(m.childHWM)/1024)
	}
	return s
}

// measure runs cmd to its end, sampling its VmHWM from /proc every few milliseconds. (Not the
// rusage of wait4: Linux carries the parent's peak into a child's ru_maxrss across a vfork and
// exec, so every child would report at least this test process's size.)
func measure(t *testing.T, what string, bytes int64, cmd *exec.Cmd) measured {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var hwm, child int64
	for tick := time.NewTicker(5 * time.Millisecond); ; {
		pid := cmd.Process.Pid
		hwm = max(hwm, vmHWM(pid))
		for _, c := range children(pid) {
			child = max(child, vmHWM(c))
		}
		select {
		case err := <-done:
			tick.Stop()
			if err != nil {
				t.Fatalf("%s: %v\n%s", what, err, out.String())
			}
			if os.Getenv(benchLogEnv) != "" {
				t.Logf("%s:\n%s", what, out.String())
			}
			m := measured{what: what, bytes: bytes, wall: time.Since(start), hwm: hwm, childHWM: child,
				cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
			if _, v, ok := strings.Cut(out.String(), goSysMarker); ok {
				m.goSys, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
			return m
		case <-tick.C:
		}
	}
}

// children are a process's child processes (each thread lists those it started).
func children(pid int) []int {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, file := range files {
		b, _ := os.ReadFile(file)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// procCPU is a running process's user+system time (clock ticks of 10 ms), 0 once it is gone.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// vmHWM is a process's peak resident set in KiB, 0 once it is gone.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// agentCmd runs this test binary as the agent subcommand with e as its whole environment.
func agentCmd(t *testing.T, sub string, e env, args ...string) *exec.Cmd {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = []string{execAgent + "=" + sub}
	if f := os.Getenv(benchProfileEnv); f != "" {
		cmd.Env = append(cmd.Env, benchProfileEnv+"="+f)
	}
	for k, v := range e {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// TestSnapshotThroughput measures the snapshot agent (to versitygw and to a directory) against
// `etcdctl snapshot save` on a ~256 MiB database, each as its own process; it logs, it does not
// assert. Run: ETCD_AGENT_BENCH=1 go test -run TestSnapshotThroughput -v ./operator/internal/agent/
// On a shared machine compare the cpu columns (the agent's own, and versitygw's meanwhile)
// rather than the wall times.
func TestSnapshotThroughput(t *testing.T) {
	if os.Getenv(benchEnv) == "" {
		t.Skipf("a measurement, not a test: set %s=1 to run it", benchEnv)
	}
	mib := 256
	e := startEtcd(t, "--quota-backend-bytes=4294967296")
	fill(t, e.URL, 1000, mib)
	st, err := e.client(t).Status(context.Background(), e.URL)
	if err != nil {
		t.Fatal(err)
	}
	s := startS3(t)
	s.createBucket(t, "snapshots")
	dir := t.TempDir()
	logFile := filepath.Join(dir, "termination-log")

	// The binary's own footprint, for scale: the agents are this binary doing more.
	rows := []measured{measure(t, "baseline (install-tools)", 0, agentCmd(t, snapshot.CommandInstallTools, env{}, t.TempDir()))}
	agent := func(what string, e env) {
		server := procCPU(s.cmd.Process.Pid)
		m := measure(t, what, 0, agentCmd(t, snapshot.CommandSnapshotAgent, e.with(snapshot.EnvTerminationLog, logFile)))
		line, _ := os.ReadFile(logFile)
		r, err := snapshot.ParseSnapshot(string(line))
		if err != nil || r.Phase != snapshot.PhaseComplete {
			t.Fatalf("%s: %v %s", what, err, line)
		}
		m.bytes = r.SizeBytes
		if e[snapshot.EnvSnapshotDest] == snapshot.DestS3 {
			m.serverCPU = procCPU(s.cmd.Process.Pid) - server
		}
		rows = append(rows, m)
	}
	agent("snapshot-agent -> S3 (versitygw)", s3Env(e, s, "snapshots", "bench.db", "uid-bench"))
	agent("snapshot-agent -> directory", pvcEnv(e, filepath.Join(dir, "pvc"), "uid-bench"))
	file := filepath.Join(dir, "etcdctl.db")
	ctl := exec.Command(tool(t, "etcd-"+testEtcdVersion, "etcdctl"), "--endpoints="+e.URL, "snapshot", "save", file)
	m := measure(t, "etcdctl snapshot save -> file", 0, ctl)
	if fi, err := os.Stat(file); err == nil {
		m.bytes = fi.Size()
	}
	rows = append(rows, m)

	restoreDir := t.TempDir()
	re := restoreEnv(t, restoreDir, peerURL(t)).with(snapshot.EnvRestoreSource, snapshot.DestPVC, snapshot.EnvRestoreFile, file,
		snapshot.EnvTerminationLog, logFile)
	rows = append(rows, measure(t, "restore-agent <- file", m.bytes, agentCmd(t, snapshot.CommandRestoreAgent, re)))

	var b strings.Builder
	fmt.Fprintf(&b, "etcd %s, database %.1f MiB on disk; %d cores\n", st.Version, float64(st.DBSize)/(1<<20), runtime.NumCPU())
	for _, r := range rows {
		b.WriteString(r.String() + "\n")
	}
	t.Log("\n" + b.String())
}
