package process

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartStopAndAlive(t *testing.T) {
	// Launch without netns/unshare: run a plain shell through the same Start path. The trap is set
	// before "started" is printed, so a SIGTERM sent after that line is always trapped.
	dir := t.TempDir()
	script := filepath.Join(dir, "fake-init")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntrap 'exit 3' TERM; echo started; while :; do sleep 0.05; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := startArgv([]string{script}, filepath.Join(dir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(h.PID, h.StartTime) {
		t.Fatal("process not alive after start")
	}
	if Alive(h.PID, h.StartTime+1) {
		t.Fatal("start time mismatch must mean not alive")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := os.ReadFile(filepath.Join(dir, "c.log"))
		if strings.Contains(string(out), "started") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no output in log")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.Stop(5 * time.Second)
	if h.ExitCode() != 3 {
		t.Fatalf("exit code %d, want 3 (trapped SIGTERM)", h.ExitCode())
	}
}

func TestKilledExitCode(t *testing.T) {
	h, err := startArgv([]string{"sleep", "30"}, filepath.Join(t.TempDir(), "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	_ = h.Signal(syscall.SIGKILL)
	<-h.Done()
	if h.ExitCode() != 137 {
		t.Fatalf("exit code %d, want 137", h.ExitCode())
	}
}

func TestLaunchCommand(t *testing.T) {
	got := strings.Join(Launch{Netns: "lc-a-p0123", Self: "/bin/nodeagent", SpecFile: "/s.json"}.Command(), " ")
	want := "ip netns exec lc-a-p0123 unshare --mount --uts --propagation private /bin/nodeagent container-init --spec /s.json"
	if got != want {
		t.Fatalf("got %s", got)
	}
}
