// Package process starts container processes inside a pod's namespaces and keeps track of them by
// pid and kernel start time, so a restarted agent can find them again.
package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Launch says how to start one container.
type Launch struct {
	Netns    string // per-pod netns name; empty: stay in the agent's netns (hostNetwork)
	Self     string // path of the nodeagent binary (runs container-init)
	SpecFile string
	LogFile  string
	// Stdin, if set, is the container's standard input (spec.stdin without a terminal); the
	// container's stdout and stderr still go to the log file.
	Stdin *os.File
	// Terminal, if set, is the slave side of a pseudo-terminal (spec.tty): the container gets it
	// as stdin, stdout, stderr and controlling terminal; whoever holds the master copies the
	// output to the log.
	Terminal *os.File
}

// Command builds the exec chain: ip netns exec → unshare → nodeagent container-init → container.
// Each step execs the next, so the started pid is the container's pid.
func (l Launch) Command() []string {
	argv := []string{"unshare", "--mount", "--uts", "--propagation", "private", l.Self, "container-init", "--spec", l.SpecFile}
	if l.Netns != "" {
		argv = append([]string{"ip", "netns", "exec", l.Netns}, argv...)
	}
	return argv
}

// Handle is a started or re-adopted process.
type Handle struct {
	PID       int
	StartTime uint64 // clock ticks since boot, from /proc/<pid>/stat
	Started   time.Time
	done      chan struct{}
	exitCode  int
}

// Start launches the container with its output appended to the log file.
func Start(l Launch) (*Handle, error) {
	return startArgv(l.Command(), l)
}

func startArgv(argv []string, l Launch) (*Handle, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	if l.Terminal != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = l.Terminal, l.Terminal, l.Terminal
		// A session of its own with the terminal as its controlling tty, as a runtime gives a tty
		// container; the session leader also leads its process group, so group signals still work.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	} else {
		logFile, err := os.OpenFile(l.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return nil, err
		}
		defer logFile.Close()
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if l.Stdin != nil {
			cmd.Stdin = l.Stdin
		}
		// Own process group: signals reach the container's children too; the agent's own signals do not.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &Handle{PID: cmd.Process.Pid, Started: time.Now(), done: make(chan struct{})}
	h.StartTime, _ = StartTime(h.PID)
	go func() {
		_ = cmd.Wait()
		h.exitCode = exitCode(cmd.ProcessState)
		close(h.done)
	}()
	return h, nil
}

// Adopt watches a process the agent did not start (found after a restart). Its exit code cannot be
// known; it is reported as 137 like the kubelet does for lost containers.
func Adopt(pid int, startTime uint64, started time.Time) (*Handle, bool) {
	if !Alive(pid, startTime) {
		return nil, false
	}
	h := &Handle{PID: pid, StartTime: startTime, Started: started, done: make(chan struct{}), exitCode: 137}
	go func() {
		for Alive(pid, startTime) {
			time.Sleep(200 * time.Millisecond)
		}
		close(h.done)
	}()
	return h, true
}

// Done is closed when the process has exited.
func (h *Handle) Done() <-chan struct{} { return h.done }

// ExitCode is valid after Done.
func (h *Handle) ExitCode() int { return h.exitCode }

// Signal sends sig to the container's process group.
func (h *Handle) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-h.PID, sig)
	if errors.Is(err, syscall.ESRCH) {
		return syscall.Kill(h.PID, sig)
	}
	return err
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits for the exit.
func (h *Handle) Stop(grace time.Duration) {
	_ = h.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
		return
	case <-time.After(grace):
	}
	_ = h.Signal(syscall.SIGKILL)
	<-h.done
}

func exitCode(st *os.ProcessState) int {
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

// Alive reports whether pid runs and is the same process (same start time) as recorded.
func Alive(pid int, startTime uint64) bool {
	st, err := StartTime(pid)
	if err != nil || st != startTime {
		return false
	}
	state, _ := procState(pid)
	return state != "Z"
}

// StartTime reads field 22 of /proc/<pid>/stat.
func StartTime(pid int) (uint64, error) {
	fields, err := statFields(pid)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(fields[19], 10, 64) // fields after "(comm)": index 0 is field 3
}

func procState(pid int) (string, error) {
	fields, err := statFields(pid)
	if err != nil {
		return "", err
	}
	return fields[0], nil
}

// statFields returns the fields of /proc/<pid>/stat after the command name.
func statFields(pid int) ([]string, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	if len(fields) < 20 {
		return nil, fmt.Errorf("short /proc/%d/stat", pid)
	}
	return fields, nil
}
