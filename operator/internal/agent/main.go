// Package agent holds the programs the operator runs inside Pods, as subcommands of the manager
// binary: snapshot-agent (stream a member's database into a store), restore-agent (seed a new
// member's data directory from a snapshot), install-tools (copy the binary for the next
// container), install-peer-fixtures (a peer certificate for etcd's auto-TLS to present),
// guard-data-dir (keep a tmpfs member's etcd off an empty data dir once it has voted) and
// stop-etcd (restart a tmpfs survivor's etcd in place, forced). The environment contract and
// result format live in package snapshot. Continuous archiving's Archiver (archive.go) and
// DeltaRestore (archiverestore.go) are the library the archive agent and the point-in-time
// restore are to run; package archive holds their design.
package agent

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Main runs the subcommand cmd and returns its exit code; ok is false when cmd is not one.
func Main(cmd string, args []string) (code int, ok bool) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	switch cmd {
	case snapshot.CommandSnapshotAgent:
		return SnapshotCommand(ctx, os.Getenv, os.Stdout, os.Stderr), true
	case snapshot.CommandRestoreAgent:
		return RestoreCommand(ctx, os.Getenv, os.Stdout, os.Stderr), true
	case snapshot.CommandInstallTools:
		return InstallToolsCommand(args, os.Stderr), true
	case snapshot.CommandInstallPeerFixtures:
		return InstallPeerFixturesCommand(args, os.Stderr), true
	case snapshot.CommandGuardDataDir:
		return GuardDataDirCommand(args, os.Getenv, os.Stderr), true
	case snapshot.CommandStopEtcd:
		return StopEtcdCommand(args, "/proc", os.Stderr), true
	}
	return 0, false
}

// SnapshotCommand is `manager snapshot-agent`: it writes the result line to the termination log
// (and stdout) and returns 0 on success, 1 on failure.
func SnapshotCommand(ctx context.Context, getenv func(string) string, stdout, stderr io.Writer) int {
	softMemoryLimit(getenv)
	cfg, err := SnapshotConfigFromEnv(getenv)
	log := NewLogger(stderr, snapshot.CommandSnapshotAgent, cfg.Secrets()...)
	result := func() snapshot.SnapshotResult {
		if err == nil {
			var store snapshot.Store
			if store, err = NewSnapshotStore(cfg); err == nil && cfg.Action == snapshot.ActionDelete {
				return DeleteArtifact(ctx, store, cfg.Owner, log)
			} else if err == nil {
				return (&SnapshotAgent{Config: cfg, Store: store, Log: log}).Run(ctx)
			}
		}
		reason, msg := snapshot.Failed(err)
		return snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: log.Clean(msg)}
	}()
	return finish(log, cfg.TerminationLog, snapshot.EncodeSnapshot(result), stdout, result.Phase != snapshot.PhaseFailed)
}

// snapshotMemoryLimit is the snapshot agent's soft heap limit: above the S3 uploader's part
// buffers (snapshot.PartSize × (PartConcurrency+1) = 40 MiB), so the garbage collector works
// harder instead of letting the heap double past them. GOMEMLIMIT, when set, wins.
const snapshotMemoryLimit = 48 << 20

func softMemoryLimit(getenv func(string) string) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(snapshotMemoryLimit)
	}
}

// finish writes the result line and returns the exit code.
func finish(log *Logger, path string, line []byte, stdout io.Writer, ok bool) int {
	if path == "" {
		path = snapshot.DefaultTerminationLog
	}
	_, _ = stdout.Write(line)
	if err := os.WriteFile(path, line, 0o644); err != nil {
		log.Printf("writing the result to %s: %v", path, err)
		return 1
	}
	if !ok {
		return 1
	}
	return 0
}

// Logger prints progress to stderr with secrets redacted.
type Logger struct {
	w      io.Writer
	prefix string
	r      *snapshot.Redactor
}

// NewLogger writes to w (nil: discard) and redacts secrets.
func NewLogger(w io.Writer, prefix string, secrets ...string) *Logger {
	if w == nil {
		w = io.Discard
	}
	return &Logger{w: w, prefix: prefix, r: snapshot.NewRedactor(secrets...)}
}

// Printf prints one line.
func (l *Logger) Printf(format string, args ...any) {
	if l == nil {
		return
	}
	msg := l.r.Clean(fmt.Sprintf(format, args...))
	fmt.Fprintf(l.w, "%s %s: %s\n", time.Now().UTC().Format(time.RFC3339), l.prefix, msg)
}

// Clean redacts secrets from s.
func (l *Logger) Clean(s string) string {
	if l == nil {
		return s
	}
	return l.r.Clean(s)
}
