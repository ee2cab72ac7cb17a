package localcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// UpOptions say how to start the supervisor.
type UpOptions struct {
	// SupervisorBin is a binary with the `supervise` subcommand (e2e/cmd/localcluster).
	SupervisorBin string
	// OwnerPID: the supervisor tears the cluster down when this process dies (0 = never).
	OwnerPID int
	// Logf receives progress lines (optional).
	Logf func(format string, args ...any)
}

// Up starts a supervisor for opts in the background (own session) and waits until
// the cluster is ready. A stale cluster of the same name (no live supervisor) is
// cleaned up first; a live one is an error.
func Up(ctx context.Context, opts Options, up UpOptions) (*State, error) {
	if err := requireRoot(); err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := resolveTools(o.ToolsDir, o.ModuleRoot); err != nil {
		return nil, err
	}
	if o.RealNodes > 0 {
		if _, err := resolveRealNodeTools(o.ToolsDir, o.ModuleRoot); err != nil {
			return nil, err
		}
		if err := checkImagesDir(o.ImagesDir); err != nil {
			return nil, err
		}
	}
	l := Layout{Dir: filepath.Join(o.StateRoot, o.Name)}
	if pid := supervisorPID(l); pidAlive(pid) {
		return nil, fmt.Errorf("cluster %q is already running (supervisor pid %d); run `localcluster down --name %s`", o.Name, pid, o.Name)
	}
	if o.Nodes > 0 {
		if o.NodeAgentBin, err = ensureNodeAgent(o); err != nil {
			return nil, err
		}
	}
	if o.PodToolsDir, err = podToolsDir(o); err != nil {
		return nil, fmt.Errorf("etcd binaries for pods: %w", err)
	}
	if err := cleanupLeftovers(o.Name, l, true); err != nil {
		return nil, fmt.Errorf("clean stale cluster %q: %w", o.Name, err)
	}
	if err := os.MkdirAll(l.Logs(), 0o700); err != nil {
		return nil, err
	}
	optsFile := filepath.Join(l.Dir, "options.json")
	if err := writeJSON(optsFile, o); err != nil {
		return nil, err
	}
	cmd, err := startSupervisor(up, l, optsFile)
	if err != nil {
		return nil, err
	}
	st, err := waitReady(ctx, l, cmd)
	if err != nil {
		// The error carries the logs' tails; LC_KEEP=1 keeps the whole folder.
		if os.Getenv("LC_KEEP") != "1" {
			_ = Down(o.StateRoot, o.Name)
		}
		return nil, err
	}
	return st, nil
}

func startSupervisor(up UpOptions, l Layout, optsFile string) (*exec.Cmd, error) {
	bin := up.SupervisorBin
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(l.SupervisorLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "supervise", "--options", optsFile, "--owner-pid", fmt.Sprint(up.OwnerPID))
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own session: ^C in the caller's terminal or its process group dying do not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start supervisor: %w", err)
	}
	return cmd, nil
}

// waitReady polls state.json until the supervisor reports ready or failure.
func waitReady(ctx context.Context, l Layout, cmd *exec.Cmd) (*State, error) {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaps the child if it dies (the CLI exits before that)
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		var st State
		if readJSON(l.StateFile(), &st) == nil {
			if st.Ready {
				return &st, nil
			}
			if st.Error != "" {
				return nil, fmt.Errorf("cluster up failed: %s\n%s", st.Error, logTails(l))
			}
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("supervisor exited (%v) before the cluster was ready\n%s", err, logTails(l))
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster not ready: %w\n%s", ctx.Err(), logTails(l))
		case <-t.C:
		}
	}
}

// logTails returns the last lines of every log of the cluster, for error messages.
func logTails(l Layout) string {
	entries, _ := os.ReadDir(l.Logs())
	var b strings.Builder
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(l.Logs(), e.Name()))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		fmt.Fprintf(&b, "--- %s (last %d lines)\n%s\n", e.Name(), len(lines), strings.Join(lines, "\n"))
	}
	return b.String()
}
