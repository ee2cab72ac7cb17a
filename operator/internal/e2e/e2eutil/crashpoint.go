//go:build e2e

package e2eutil

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
)

// CrashpointBinaryEnv names the operator built with -tags crashpoint (make build's
// bin/manager-crashpoint); unset, this tree's is built for the cluster.
const CrashpointBinaryEnv = "LC_OPERATOR_CRASHPOINT_BIN"

// CrashpointOperatorBinary is $LC_OPERATOR_CRASHPOINT_BIN, or this tree's operator built with
// the crashpoint tag for c: the only build that stops at a crash point it is armed with.
func CrashpointOperatorBinary(c *framework.Cluster) (string, error) {
	if b := os.Getenv(CrashpointBinaryEnv); b != "" {
		return b, nil
	}
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(filepath.Dir(c.State.Dir), ".bin", "manager-crashpoint")
	return out, localcluster.BuildBinary(root, "./operator/cmd/manager", out, "-tags", crashpoint.BuildTag)
}

// Arm makes the next Start stop at the crash point spec ("<name>[:<nth>]"); "" disarms it.
func (o *Operator) Arm(spec string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.env = nil
	if spec != "" {
		o.env = []string{crashpoint.EnvVar + "=" + spec}
	}
}

// WaitExit waits up to timeout for the running process to end by itself and returns its exit
// code; ok=false when it still runs (or none was started).
func (o *Operator) WaitExit(timeout time.Duration) (code int, ok bool) {
	o.mu.Lock()
	cmd, exited := o.cmd, o.exited
	o.mu.Unlock()
	if cmd == nil {
		return 0, false
	}
	select {
	case <-exited: // first, so that a zero timeout still sees an ended process
		return cmd.ProcessState.ExitCode(), true
	default:
	}
	select {
	case <-exited:
		return cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// Armed is the crash point the next (or running) process is armed with, "" for none.
func (o *Operator) Armed() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.env) == 0 {
		return ""
	}
	return strings.TrimPrefix(o.env[0], crashpoint.EnvVar+"=")
}

// Restart starts the operator again after its process ended (or kills it first).
func (o *Operator) Restart() error {
	_ = o.Kill() // the process may be gone already: "process already finished"
	return o.Start()
}
