package provider

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/probes"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

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
