//go:build e2e

package backup

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	clientv3 "go.etcd.io/etcd/client/v3"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// testOperatorKilled: the operator dies while its agent streams; the agent finishes on its own,
// and the restarted operator records its result: one artifact, no second snapshot. The agent is
// frozen the moment it logs the member it streams from, and thawed only once the operator is
// dead: a small database streams in less than a poll of the phase, so without the freeze the
// snapshot may be Complete before the test sees it Started.
func (e *env) testOperatorKilled(t *testing.T) {
	ctx := context.Background()
	e.loadBulk(t)
	createSnapshot(t, e.c, e.ns, "operator-killed", e.src.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "opkill")})
	agent := v1alpha2.SnapshotAgentPodName("operator-killed")
	followLog(t, e.c, e.ns, agent, v1alpha2.AgentContainer).await(t, regexp.MustCompile(`streaming member \S+ \(`))
	thaw := freeze(t, e.c, e.ns, agent)
	e2eutil.WaitFor(t, snapshotTimeout, "Started", func() bool {
		return getSnapshot(t, e.c, e.ns, "operator-killed").Status.Phase == v1alpha2.SnapshotStarted
	})
	if err := e.op.Kill(); err != nil {
		t.Fatal(err)
	}
	thaw()
	e2eutil.WaitFor(t, snapshotTimeout, "the agent to finish without the operator", func() bool {
		p := &corev1.Pod{}
		err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: agent}, p)
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	})
	if s := getSnapshot(t, e.c, e.ns, "operator-killed"); s.Status.Phase != v1alpha2.SnapshotStarted {
		t.Errorf("phase %s with the operator dead, want it still Started", s.Status.Phase)
	}
	if err := e.op.Start(); err != nil {
		t.Fatal(err)
	}
	s := waitSnapshot(t, e.c, e.ns, "operator-killed")
	mustComplete(t, s)
	if keys := objects(t, e.store, "opkill/"); len(keys) != 1 {
		t.Errorf("objects %v, want exactly the one artifact", keys)
	}
	if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
		t.Errorf("stored sha256 %s, recorded %s", sum, s.Status.Artifact.Checksum)
	}
	t.Logf("the operator died mid-stream; the agent stored %d bytes alone and the restarted operator recorded it Complete",
		s.Status.Artifact.SizeBytes)
}

// testMemberKilled: the member the agent streams from is SIGKILLed mid-stream. The agent is
// frozen (SIGSTOP) the moment it logs the member it streams from, so the kill lands while the
// stream is open whatever the machine's speed: what etcd and the kernel buffer for a frozen
// reader is far less than the database (bulkMiB). The agent must log the broken stream, move to
// the next member, and store one verified artifact; the aborted upload leaves no parts behind.
func (e *env) testMemberKilled(t *testing.T) {
	ctx := context.Background()
	e.loadBulk(t)
	createSnapshot(t, e.c, e.ns, "member-killed", e.src.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "memberkill")})
	agent := v1alpha2.SnapshotAgentPodName("member-killed")
	log := followLog(t, e.c, e.ns, agent, v1alpha2.AgentContainer)
	victim := log.await(t, regexp.MustCompile(`streaming member (\S+) \(`))[1]
	thaw := freeze(t, e.c, e.ns, agent)
	if err := e.c.KillContainer(ctx, e.ns, victim, "etcd"); err != nil {
		t.Fatal(err)
	}
	thaw()
	broke := log.await(t, regexp.MustCompile(`member `+regexp.QuoteMeta(victim)+` \(.*\): stream broke after (\d+) bytes`))
	s := waitSnapshot(t, e.c, e.ns, "member-killed")
	mustComplete(t, s)
	if s.Status.Member == victim {
		t.Errorf("the snapshot came from %s, the member killed mid-stream", victim)
	}
	if keys := objects(t, e.store, "memberkill/"); len(keys) != 1 {
		t.Errorf("objects %v, want exactly the one artifact", keys)
	}
	if ups := multipartUploads(t, e.store, "memberkill/"); len(ups) != 0 {
		t.Errorf("multipart uploads left behind: %v", ups)
	}
	if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
		t.Errorf("stored sha256 %s, recorded %s", sum, s.Status.Artifact.Checksum)
	}
	e.src.waitReady(t, e.c, 3) // the killed member is restarted in place and catches up
	t.Logf("killed %s after it had streamed %s bytes; the snapshot (%d bytes) came from %s in %s", victim, broke[1],
		s.Status.Artifact.SizeBytes, s.Status.Member, s.Status.Duration.Duration.Round(time.Millisecond))
}

// bulkMiB is what loadBulk adds to the source cluster, so that an agent streams long enough to
// be frozen mid-stream.
const bulkMiB = 64

// loadBulk adds bulkMiB to the source cluster once (the scenarios run one after the other).
func (e *env) loadBulk(t *testing.T) {
	if !e.bulkLoaded {
		bulkLoad(t, e.src.root(t, e.c), "/bulk/", bulkMiB)
		e.bulkLoaded = true
	}
}

// freeze stops a Pod's agent container with SIGSTOP and checks that it is stopped, not already
// done; the function it returns resumes it (once; later calls do nothing, and the test's end
// calls it too).
func freeze(t *testing.T, c *framework.Cluster, ns, pod string) (thaw func()) {
	t.Helper()
	pid, err := c.ContainerPID(context.Background(), ns, pod, v1alpha2.AgentContainer)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw = func() {
		if !thawed {
			thawed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resume the agent: %v", err)
			}
		}
	}
	t.Cleanup(thaw) // a test that fails while it is frozen must not leave it so
	proc, err := procfs.NewProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, time.Minute, "the agent stopped by SIGSTOP", func() bool {
		st, err := proc.Stat()
		if err != nil || st.State == "Z" || st.State == "X" {
			t.Fatalf("the agent (pid %d) ended before it could be frozen: state %q, %v", pid, st.State, err)
		}
		return st.State == "T" || st.State == "t"
	})
	return thaw
}

// bulkLoad writes mib MiB as 512 KiB values under prefix (etcd refuses requests over 1.5 MiB).
func bulkLoad(t *testing.T, cli *clientv3.Client, prefix string, mib int) {
	t.Helper()
	value := strings.Repeat("x", 512<<10)
	for i := range 2 * mib {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := cli.Put(ctx, fmt.Sprintf("%s%04d", prefix, i), value)
		cancel()
		if err != nil {
			t.Fatalf("bulk load: %v", err)
		}
	}
}

// podLog is a container's log, followed line by line from its start.
type podLog struct {
	lines <-chan string
	seen  []string
}

// followLog follows a container's log once it has started, until the test ends.
func followLog(t *testing.T, c *framework.Cluster, ns, pod, container string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var rc io.ReadCloser
	e2eutil.WaitNoError(t, snapshotTimeout, "the log of "+pod+" to open", func() error {
		var err error
		rc, err = c.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(ctx)
		return err
	})
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		defer func() { _ = rc.Close() }()
		sc := bufio.NewScanner(rc)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return &podLog{lines: lines}
}

// await returns the submatches of the first line (from where the last await stopped) that re
// matches; it fails the test when the log ends first.
func (l *podLog) await(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(snapshotTimeout)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				t.Fatalf("the log ended with no line matching %q; it read:\n%s", re, strings.Join(l.seen, "\n"))
			}
			l.seen = append(l.seen, line)
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-timeout:
			t.Fatalf("no line matching %q in %s; the log read:\n%s", re, snapshotTimeout, strings.Join(l.seen, "\n"))
		}
	}
}
