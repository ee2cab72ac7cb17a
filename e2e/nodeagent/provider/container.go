package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/backoff"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/containerinit"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/images"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/probes"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// containerRuntime is one container's state; fields are guarded by the pod runtime's mutex.
type containerRuntime struct {
	name   string
	spec   corev1.Container
	isInit bool
	// ephemeral marks an ephemeral container (kubectl debug): it runs once and is never
	// restarted; targetName is its spec.targetContainerName.
	ephemeral  bool
	targetName string
	stdio      *containerStdio // stdin or terminal, when the spec asks for one

	state, lastState corev1.ContainerState
	restartCount     int32
	ready, started   bool
	hasRun           bool // a later start is a restart
	finished         *int // exit code once it will not run again
	handle           *process.Handle
	target           probes.Target
	logStart         int64
	prevLogStart     int64
}

func newContainerRuntime(c corev1.Container, isInit bool, waitingReason string) *containerRuntime {
	return &containerRuntime{name: c.Name, spec: c, isInit: isInit, state: waiting(waitingReason, "")}
}

func (c *containerRuntime) view() containerView {
	return containerView{Name: c.name, Image: c.spec.Image, State: c.state, LastState: c.lastState,
		RestartCount: c.restartCount, Ready: c.ready, Started: c.started, Ephemeral: c.ephemeral}
}

func (c *containerRuntime) exitCode() int {
	if t := c.state.Terminated; t != nil {
		return int(t.ExitCode)
	}
	return 0
}

// restore takes over what an earlier agent run knew; a live process is re-adopted (with the
// stdin FIFO it may have; podDir is where that lives).
func (c *containerRuntime) restore(s savedContainer, podDir string) {
	c.restartCount, c.logStart, c.prevLogStart = s.RestartCount, s.LogStart, s.PrevLogStart
	if s.LastTerminated != nil {
		c.lastState = corev1.ContainerState{Terminated: s.LastTerminated}
	}
	if s.Finished != nil {
		c.finished = s.Finished
		c.hasRun = true
		c.state = terminated(*s.Finished, s.Started, s.Started)
		if s.Terminated != nil {
			c.state = corev1.ContainerState{Terminated: s.Terminated}
		}
		return
	}
	c.hasRun = s.Ran
	if s.PID != 0 {
		if h, ok := process.Adopt(s.PID, s.StartTime, s.Started); ok {
			c.handle = h
			c.stdio = adoptStdio(&c.spec, stdinFIFO(podDir, c.name))
			return
		}
	}
	if !s.Ran {
		return
	}
	// It died while no agent watched: its exit code is lost.
	lost := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "ContainerStatusUnknown", StartedAt: metav1.NewTime(s.Started)}}
	if c.ephemeral {
		c.state, c.finished = lost, ptr.To(137) // never restarted
		return
	}
	c.lastState = lost
}

func (c *containerRuntime) toSaved() savedContainer {
	s := savedContainer{RestartCount: c.restartCount, LogStart: c.logStart, PrevLogStart: c.prevLogStart,
		Finished: c.finished, Ran: c.hasRun, LastTerminated: c.lastState.Terminated}
	if c.finished != nil {
		s.Terminated = c.state.Terminated
	}
	if h := c.handle; h != nil {
		s.PID, s.StartTime, s.Started = h.PID, h.StartTime, h.Started
	}
	return s
}

// supervise runs c until it will not be restarted (its exit code) or the pod stops (stopped=true).
func (rt *podRuntime) supervise(c *containerRuntime) (exitCode int, stopped bool) {
	if c.finished != nil {
		return *c.finished, false
	}
	var crashes backoff.Counter
	for {
		h := rt.start(rt.runCtx, c)
		if h == nil {
			return rt.stoppedWhileWaiting(c)
		}
		code, ranFor, stopped := rt.wait(rt.runCtx, c, h)
		if stopped {
			return code, true
		}
		term := rt.ended(c, h)
		if !shouldRestart(rt.pod.Spec.RestartPolicy, code, c.isInit) {
			rt.finish(c, term, code)
			return code, false
		}
		delay := crashes.Next(ranFor)
		rt.backOff(c, term, delay)
		if !sleepCtx(rt.runCtx, delay) {
			return rt.stoppedWhileWaiting(c)
		}
	}
}

// finish records the run that ends c for good; an init container's run holds until a reboot.
func (rt *podRuntime) finish(c *containerRuntime, term corev1.ContainerState, code int) {
	rt.mu.Lock()
	c.state, c.finished = term, ptr.To(code)
	if c.isInit {
		rt.saved.InitBoot = rt.p.cfg.BootID
	}
	rt.mu.Unlock()
	rt.persist()
}

// backOff records a crashed run (term) that is restarted after delay: it becomes lastState, and
// while the delay lasts the container waits in CrashLoopBackOff, as the kubelet reports it.
func (rt *podRuntime) backOff(c *containerRuntime, term corev1.ContainerState, delay time.Duration) {
	rt.mu.Lock()
	c.lastState = term
	if delay > 0 {
		c.state = waiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
			delay, c.name, rt.pod.Name, rt.pod.Namespace, rt.pod.UID))
	}
	rt.mu.Unlock()
	rt.changed()
}

// stoppedWhileWaiting reports a container that was not running when the pod stopped.
func (rt *podRuntime) stoppedWhileWaiting(c *containerRuntime) (int, bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if c.lastState.Terminated != nil {
		c.state = c.lastState
	} else if rt.killing {
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	}
	return c.exitCode(), true
}

// start launches c (or returns its re-adopted process), retrying image and config errors until
// ctx ends (nil then).
func (rt *podRuntime) start(ctx context.Context, c *containerRuntime) *process.Handle {
	if h := c.handle; h != nil {
		rt.running(c, h, rt.targetFor(c, nil))
		return h
	}
	pulls := 0
	for {
		h, err := rt.tryStart(c)
		if err == nil {
			return h
		}
		if ctx.Err() != nil || errors.Is(err, errEphemeralClosed) {
			return nil
		}
		wait := retryInterval
		var pullErr *images.PullError
		var targetErr *targetError
		switch {
		case errors.As(err, &pullErr):
			pulls++
			rt.setWaiting(c, "ErrImagePull", err.Error())
			if !sleepCtx(ctx, retryInterval) {
				return nil
			}
			rt.setWaiting(c, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: %v", c.spec.Image, err))
			wait = backoff.Delay(pulls)
		case errors.As(err, &targetErr):
			rt.setWaiting(c, "CreateContainerError", err.Error())
		default:
			rt.setWaiting(c, "CreateContainerConfigError", err.Error())
		}
		if !sleepCtx(ctx, wait) {
			return nil
		}
	}
}

// tryStart makes one attempt to start c.
func (rt *podRuntime) tryStart(c *containerRuntime) (*process.Handle, error) {
	if err := rt.checkTarget(c); err != nil {
		return nil, err
	}
	plan, err := rt.buildLaunch(rt.runCtx, &c.spec)
	if err != nil {
		return nil, err
	}
	h, err := rt.launchGated(c, plan)
	if err != nil {
		return nil, err
	}
	rt.running(c, h, rt.targetFor(c, &plan))
	return h, nil
}

// launchGated launches c; an ephemeral container only while its pod still admits them. Under
// ephMu, so that no start slips in after stopEphemeral: one that came just before is stopped by
// its supervisor, whose context is done by then.
func (rt *podRuntime) launchGated(c *containerRuntime, plan launchPlan) (*process.Handle, error) {
	if !c.ephemeral {
		return rt.launch(c, plan)
	}
	rt.ephMu.Lock()
	defer rt.ephMu.Unlock()
	if rt.ephCtx.Err() != nil {
		return nil, errEphemeralClosed
	}
	return rt.launch(c, plan)
}

func (rt *podRuntime) setWaiting(c *containerRuntime, reason, message string) {
	rt.mu.Lock()
	c.state = waiting(reason, message)
	rt.mu.Unlock()
	rt.changed()
}

// launch starts the process of a resolved plan with its log and pid files.
func (rt *podRuntime) launch(c *containerRuntime, plan launchPlan) (*process.Handle, error) {
	logPath := filepath.Join(rt.dir, c.name+".log")
	var logSize int64
	if st, err := os.Stat(logPath); err == nil {
		logSize = st.Size()
	}
	if c.spec.TerminationMessagePath != "" {
		if err := freshTerminationFile(terminationFile(rt.dir, c.name), plan.id.uid, plan.id.gid); err != nil {
			return nil, fmt.Errorf("termination message file: %w", err)
		}
	}
	specFile := filepath.Join(rt.dir, c.name+".spec.json")
	if err := containerinit.WriteSpec(specFile, plan.spec); err != nil {
		return nil, err
	}
	netns := rt.names.Netns
	if rt.pod.Spec.HostNetwork {
		netns = ""
	}
	stdio, files, err := openStdio(&c.spec, stdinFIFO(rt.dir, c.name), logPath)
	if err != nil {
		return nil, err
	}
	h, err := process.Start(process.Launch{Netns: netns, Self: rt.p.cfg.Self, SpecFile: specFile, LogFile: logPath,
		Stdin: files.stdin, Terminal: files.terminal})
	files.close() // the container holds its own copies now
	if err != nil {
		stdio.abort()
		return nil, err
	}
	stdio.copyOutput()
	rt.mu.Lock()
	c.stdio = stdio
	c.prevLogStart, c.logStart = c.logStart, logSize
	if c.hasRun {
		c.restartCount++
	}
	rt.mu.Unlock()
	if err := writePIDFile(rt.dir, c.name, h.PID); err != nil {
		rt.log()("writing pid file failed", "err", err)
	}
	return h, nil
}

func (rt *podRuntime) targetFor(c *containerRuntime, plan *launchPlan) probes.Target {
	t := probes.Target{PodIP: rt.podIP, UID: -1, GID: -1, Ports: c.spec.Ports}
	if plan != nil {
		t.Env, t.UID, t.GID = plan.spec.Env, plan.id.uid, plan.id.gid
	} else if p, err := rt.buildLaunch(rt.runCtx, &c.spec); err == nil {
		t.Env, t.UID, t.GID = p.spec.Env, p.id.uid, p.id.gid
	}
	return t
}

// running records a started process.
func (rt *podRuntime) running(c *containerRuntime, h *process.Handle, target probes.Target) {
	target.PID = h.PID
	rt.mu.Lock()
	c.handle, c.hasRun, c.target = h, true, target
	c.ready, c.started = false, false
	c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(h.Started)}}
	rt.mu.Unlock()
	rt.persist()
}

// persist saves the pod state and pushes the status.
func (rt *podRuntime) persist() {
	if err := rt.save(); err != nil {
		rt.log()("saving pod state failed", "err", err)
	}
	rt.changed()
}

// wait watches a running process with its probes until it exits or ctx ends (stopped=true):
// then the process is stopped, unless the agent is merely exiting.
func (rt *podRuntime) wait(ctx context.Context, c *containerRuntime, h *process.Handle) (code int, ranFor time.Duration, stopped bool) {
	probeCtx, cancelProbes := context.WithCancel(ctx)
	defer cancelProbes()
	go rt.probe(probeCtx, c, h)
	select {
	case <-h.Done():
	case <-ctx.Done():
		grace, leave := rt.stopDecision()
		if leave {
			return 0, 0, true // the agent exits: the process keeps running
		}
		rt.log()("stopping container", "container", c.name, "pid", h.PID, "grace", grace)
		h.Stop(grace)
		rt.log()("container stopped", "container", c.name, "pid", h.PID, "exitCode", h.ExitCode())
		stopped = true
	}
	cancelProbes()
	_ = os.Remove(filepath.Join(rt.dir, c.name+".pid"))
	rt.mu.Lock()
	stdio := c.stdio
	rt.mu.Unlock()
	stdio.exited() // a terminal's last output reaches the log before the message is read
	var term corev1.ContainerState
	if stopped {
		term = rt.ended(c, h)
	}
	rt.mu.Lock()
	c.handle, c.ready, c.started = nil, false, false
	if stopped {
		c.state = term
	}
	rt.mu.Unlock()
	if stopped {
		rt.persist()
	}
	return h.ExitCode(), time.Since(h.Started), stopped
}

// stopDecision says how a container whose context ended is stopped: a deletion or shutdown
// stops it within the grace period decided there; the agent exiting leaves it running
// (leave); an ephemeral container of a pod that completed gets the pod's grace period.
func (rt *podRuntime) stopDecision() (grace time.Duration, leave bool) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	switch {
	case rt.killing:
		return rt.grace, false
	case rt.runCtx.Err() != nil:
		return 0, true
	}
	return gracePeriod(rt.pod), false
}

// ended is the terminated state of c's run h, with its termination message.
func (rt *podRuntime) ended(c *containerRuntime, h *process.Handle) corev1.ContainerState {
	rt.mu.Lock()
	logStart := c.logStart
	rt.mu.Unlock()
	st := terminated(h.ExitCode(), h.Started, time.Now())
	logPath := rt.p.containerLogPath(rt.pod.Namespace, rt.pod.Name, c.name)
	st.Terminated.Message = terminationMessage(&c.spec, terminationFile(rt.dir, c.name), h.ExitCode(),
		func() ([]byte, error) { return logTailSince(logPath, logStart) })
	return st
}
