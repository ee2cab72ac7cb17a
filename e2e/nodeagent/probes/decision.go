// Package probes runs readiness, liveness and startup probes against a pod's processes and turns
// their results into the kubelet's decisions (thresholds, delays).
package probes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Settings are a probe's timing and thresholds with the API defaults applied.
type Settings struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
}

// SettingsOf applies the API defaults (period 10 s, timeout 1 s, thresholds 1 and 3).
func SettingsOf(p *corev1.Probe) Settings {
	s := Settings{
		InitialDelay:     time.Duration(p.InitialDelaySeconds) * time.Second,
		Period:           secondsOr(p.PeriodSeconds, 10),
		Timeout:          secondsOr(p.TimeoutSeconds, 1),
		SuccessThreshold: int(p.SuccessThreshold),
		FailureThreshold: int(p.FailureThreshold),
	}
	if s.SuccessThreshold < 1 {
		s.SuccessThreshold = 1
	}
	if s.FailureThreshold < 1 {
		s.FailureThreshold = 3
	}
	return s
}

func secondsOr(v int32, def int) time.Duration {
	if v <= 0 {
		return time.Duration(def) * time.Second
	}
	return time.Duration(v) * time.Second
}

// Tracker turns single probe results into a steady verdict, counting consecutive results.
type Tracker struct {
	settings  Settings
	successes int
	failures  int
	verdict   bool
}

// NewTracker starts with verdict initial (readiness/startup: false; liveness: true).
func NewTracker(s Settings, initial bool) *Tracker {
	return &Tracker{settings: s, verdict: initial}
}

// Observe records one result and returns the verdict and whether it changed.
func (t *Tracker) Observe(success bool) (verdict, changed bool) {
	before := t.verdict
	if success {
		t.successes++
		t.failures = 0
		if t.successes >= t.settings.SuccessThreshold {
			t.verdict = true
		}
	} else {
		t.failures++
		t.successes = 0
		if t.failures >= t.settings.FailureThreshold {
			t.verdict = false
		}
	}
	return t.verdict, t.verdict != before
}

// Verdict is the current steady result.
func (t *Tracker) Verdict() bool { return t.verdict }
