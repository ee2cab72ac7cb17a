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
		RestartCount: c.restartCount, Ready: c.ready, Started: c.started}
}

func (c *containerRuntime) exitCode() int {
	if t := c.state.Terminated; t != nil {
		return int(t.ExitCode)
	}
	return 0
}

// restore takes over what an earlier agent run knew; a live process is re-adopted.
func (c *containerRuntime) restore(s savedContainer) {
	c.restartCount, c.logStart, c.prevLogStart = s.RestartCount, s.LogStart, s.PrevLogStart
	if s.Finished != nil {
		c.finished = s.Finished
		c.hasRun = true
		c.state = terminated(*s.Finished, s.Started, s.Started)
		return
	}
	c.hasRun = s.Ran
	if s.PID != 0 {
		if h, ok := process.Adopt(s.PID, s.StartTime, s.Started); ok {
			c.handle = h
			return
		}
	}
	if !s.Ran {
		return
	}
	// It died while no agent watched: its exit code is lost.
	c.lastState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "ContainerStatusUnknown", StartedAt: metav1.NewTime(s.Started)}}
}

func (c *containerRuntime) toSaved() savedContainer {
	s := savedContainer{RestartCount: c.restartCount, LogStart: c.logStart, PrevLogStart: c.prevLogStart,
		Finished: c.finished, Ran: c.hasRun}
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
		h := rt.start(c)
		if h == nil {
			return rt.stoppedWhileWaiting(c)
		}
		code, ranFor, stopped := rt.wait(c, h)
		if stopped {
			return code, true
		}
		term := terminated(code, h.Started, time.Now())
		if !shouldRestart(rt.pod.Spec.RestartPolicy, code, c.isInit) {
			rt.mu.Lock()
			c.state, c.finished = term, ptr.To(code)
			rt.mu.Unlock()
			rt.persist()
			return code, false
		}
		delay := crashes.Next(ranFor)
		rt.mu.Lock()
		c.lastState = term
		if delay > 0 {
			c.state = waiting("CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				delay, c.name, rt.pod.Name, rt.pod.Namespace, rt.pod.UID))
		}
		rt.mu.Unlock()
		rt.changed()
		if !sleepCtx(rt.runCtx, delay) {
			return rt.stoppedWhileWaiting(c)
		}
	}
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

// start launches c (or returns its re-adopted process), retrying image and config errors.
func (rt *podRuntime) start(c *containerRuntime) *process.Handle {
	if h := c.handle; h != nil {
		rt.running(c, h, rt.targetFor(c, nil))
		return h
	}
	pulls := 0
	for {
		plan, err := rt.buildLaunch(rt.runCtx, &c.spec)
		var h *process.Handle
		if err == nil {
			if h, err = rt.launch(c, plan); err == nil {
				rt.running(c, h, rt.targetFor(c, &plan))
				return h
			}
		}
		if rt.runCtx.Err() != nil {
			return nil
		}
		wait := retryInterval
		var pullErr *images.PullError
		if errors.As(err, &pullErr) {
			pulls++
			rt.setWaiting(c, "ErrImagePull", err.Error())
			if !sleepCtx(rt.runCtx, retryInterval) {
				return nil
			}
			rt.setWaiting(c, "ImagePullBackOff", fmt.Sprintf("Back-off pulling image %q: %v", c.spec.Image, err))
			wait = backoff.Delay(pulls)
		} else {
			rt.setWaiting(c, "CreateContainerConfigError", err.Error())
		}
		if !sleepCtx(rt.runCtx, wait) {
			return nil
		}
	}
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
	specFile := filepath.Join(rt.dir, c.name+".spec.json")
	if err := containerinit.WriteSpec(specFile, plan.spec); err != nil {
		return nil, err
	}
	netns := rt.names.Netns
	if rt.pod.Spec.HostNetwork {
		netns = ""
	}
	h, err := process.Start(process.Launch{Netns: netns, Self: rt.p.cfg.Self, SpecFile: specFile, LogFile: logPath})
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
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

// wait watches a running process with its probes until it exits or the pod stops.
func (rt *podRuntime) wait(c *containerRuntime, h *process.Handle) (code int, ranFor time.Duration, stopped bool) {
	probeCtx, cancelProbes := context.WithCancel(rt.runCtx)
	defer cancelProbes()
	go rt.probe(probeCtx, c, h)
	select {
	case <-h.Done():
	case <-rt.runCtx.Done():
		rt.mu.Lock()
		killing, grace := rt.killing, rt.grace
		rt.mu.Unlock()
		if !killing {
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
	c.handle, c.ready, c.started = nil, false, false
	if stopped {
		c.state = terminated(h.ExitCode(), h.Started, time.Now())
	}
	rt.mu.Unlock()
	if stopped {
		rt.persist()
	}
	return h.ExitCode(), time.Since(h.Started), stopped
}

// probe runs the startup, then readiness and liveness probes of a running container.
func (rt *podRuntime) probe(ctx context.Context, c *containerRuntime, h *process.Handle) {
	rt.mu.Lock()
	target := c.target
	rt.mu.Unlock()
	if sp := c.spec.StartupProbe; sp != nil && !rt.startupSucceeds(ctx, sp, target) {
		if ctx.Err() == nil {
			rt.log()("startup probe failed, killing container", "container", c.name)
			h.Stop(rt.probeGrace(sp))
		}
		return
	}
	rt.mu.Lock()
	c.started = true
	c.ready = c.spec.ReadinessProbe == nil
	rt.mu.Unlock()
	rt.changed()
	if rp := c.spec.ReadinessProbe; rp != nil {
		go rt.watch(ctx, rp, target, false, func(ok bool) bool {
			rt.mu.Lock()
			c.ready = ok
			rt.mu.Unlock()
			rt.changed()
			return false
		})
	}
	if lp := c.spec.LivenessProbe; lp != nil {
		rt.watch(ctx, lp, target, true, func(ok bool) bool {
			if !ok {
				rt.log()("liveness probe failed, killing container", "container", c.name)
				h.Stop(rt.probeGrace(lp))
			}
			return !ok
		})
	}
}

func (rt *podRuntime) startupSucceeds(ctx context.Context, p *corev1.Probe, target probes.Target) bool {
	s := probes.SettingsOf(p)
	if !sleepCtx(ctx, s.InitialDelay) {
		return false
	}
	for failures := 0; ; {
		if probes.Run(ctx, p, target) == nil {
			return true
		}
		if failures++; failures >= s.FailureThreshold {
			return false
		}
		if !sleepCtx(ctx, s.Period) {
			return false
		}
	}
}

// watch runs p periodically and calls onChange for every verdict change until it returns true.
func (rt *podRuntime) watch(ctx context.Context, p *corev1.Probe, target probes.Target, initial bool, onChange func(bool) bool) {
	s := probes.SettingsOf(p)
	tracker := probes.NewTracker(s, initial)
	if !sleepCtx(ctx, s.InitialDelay) {
		return
	}
	for {
		verdict, changed := tracker.Observe(probes.Run(ctx, p, target) == nil)
		if ctx.Err() != nil {
			return
		}
		if changed && onChange(verdict) {
			return
		}
		if !sleepCtx(ctx, s.Period) {
			return
		}
	}
}

func (rt *podRuntime) probeGrace(p *corev1.Probe) time.Duration {
	if p.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.TerminationGracePeriodSeconds) * time.Second
	}
	return gracePeriod(rt.snapshotSpec())
}
