package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// component is one long-running process of the cluster, run inside the cluster netns.
type component struct {
	Name  string
	Args  []string // binary and flags
	Log   string   // file that gets stdout and stderr
	Mntns string   // a mount namespace to enter too (/proc/<pid>/ns/mnt), or "" for the host's
	Env   []string // added to the supervisor's environment

	cmd    *exec.Cmd
	exited chan struct{}
	err    error
}

// start launches the component inside netns in its own process group. nsenter
// switches only the network namespace and execs the binary (the pid is the
// component's). Unlike `ip netns exec` it keeps the host's mount namespace, so the
// mounts a node agent makes (pod netns, tmpfs volumes) are visible to the harness
// (fault injection, cleanup) instead of hidden in a private namespace.
func (c *component) start(netns string) error {
	logf, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s start: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(c.Args, " "))
	args := []string{"--net=" + filepath.Join(netnsDir, netns)}
	if c.Mntns != "" {
		args = append(args, "--mount="+c.Mntns)
	}
	c.cmd = exec.Command("nsenter", append(append(args, "--"), c.Args...)...)
	c.cmd.Env = append(os.Environ(), c.Env...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.Name, err)
	}
	c.exited = make(chan struct{})
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	return nil
}

// running reports whether the process has not exited yet.
func (c *component) running() bool {
	if c == nil || c.exited == nil {
		return false
	}
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// exitError describes how the component ended, for readiness errors.
func (c *component) exitError() error {
	if c == nil {
		return fmt.Errorf("never started")
	}
	if c.running() {
		return nil
	}
	return fmt.Errorf("%s exited: %v (log: %s)", c.Name, c.err, c.Log)
}

// stop sends SIGTERM to the component's process, waits up to grace, then SIGKILLs
// its whole process group (and whatever children are left in it).
func (c *component) stop(grace time.Duration) { c.stopWith(syscall.SIGTERM, grace) }

// stopWith is stop with another signal; it reports whether the process exited by itself
// within grace (false: it was killed).
func (c *component) stopWith(sig syscall.Signal, grace time.Duration) bool {
	if !c.running() {
		return true
	}
	pid := c.cmd.Process.Pid
	_ = syscall.Kill(pid, sig)
	exited := true
	select {
	case <-c.exited:
	case <-time.After(grace):
		exited = false
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-c.exited
	return exited
}

// crash SIGKILLs the process alone (not its group): a node agent crash leaves its
// pods running, as a kubelet crash would.
func (c *component) crash() {
	if !c.running() {
		return
	}
	_ = syscall.Kill(c.cmd.Process.Pid, syscall.SIGKILL)
	<-c.exited
}

// killPids SIGKILLs pids and waits up to timeout for them to disappear.
func killPids(pids []int, timeout time.Duration) error {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(timeout)
	for _, p := range pids {
		for syscall.Kill(p, 0) == nil {
			if isZombie(p) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pid %d survived SIGKILL", p)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// pidAlive reports whether pid names a live (non-zombie) process.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !isZombie(pid)
}
