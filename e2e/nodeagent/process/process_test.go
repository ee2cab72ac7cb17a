package process

import (
	"io"
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
	h, err := startArgv([]string{script}, Launch{LogFile: filepath.Join(dir, "c.log")})
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
	h, err := startArgv([]string{"sleep", "30"}, Launch{LogFile: filepath.Join(t.TempDir(), "c.log")})
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

// waitForLog polls the log file until it contains want.
func waitForLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := os.ReadFile(path)
		if strings.Contains(string(out), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q lacks %q", out, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartWithStdin(t *testing.T) {
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "c.log")
	h, err := startArgv([]string{"cat"}, Launch{LogFile: logPath, Stdin: r})
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("through stdin\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	<-h.Done()
	waitForLog(t, logPath, "through stdin")
}

func TestStartOnTerminal(t *testing.T) {
	master, slave, err := OpenPTY()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	script := `test -t 0 && test -t 1 && test -t 2 && [ "$(ps -o sid= -p $$ | tr -d ' ')" = $$ ] && echo on-its-terminal`
	h, err := startArgv([]string{"sh", "-c", script}, Launch{Terminal: slave})
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(master) // ends with EIO once the shell, the terminal's last holder, exits
	<-h.Done()
	if h.ExitCode() != 0 || !strings.Contains(string(out), "on-its-terminal") {
		t.Fatalf("exit %d, output %q: not a session leader on its own terminal", h.ExitCode(), out)
	}
}
