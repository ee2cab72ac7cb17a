package probes

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestSettingsDefaults(t *testing.T) {
	got := SettingsOf(&corev1.Probe{InitialDelaySeconds: 2})
	want := Settings{InitialDelay: 2 * time.Second, Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}
	if got != want {
		t.Fatalf("got %+v want %+v", got, want)
	}
}

func TestTracker(t *testing.T) {
	cases := []struct {
		name             string
		success, failure int
		initial          bool
		results          []bool
		verdicts         []bool
	}{
		{name: "readiness needs two successes", success: 2, failure: 1, results: []bool{true, true, false, true},
			verdicts: []bool{false, true, false, false}},
		{name: "liveness tolerates two failures", success: 1, failure: 3, initial: true,
			results: []bool{false, false, true, false, false, false}, verdicts: []bool{true, true, true, true, true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Settings{SuccessThreshold: tc.success, FailureThreshold: tc.failure}, tc.initial)
			for i, r := range tc.results {
				if v, _ := tr.Observe(r); v != tc.verdicts[i] {
					t.Fatalf("after result %d (%v): verdict %v, want %v", i, r, v, tc.verdicts[i])
				}
			}
		})
	}
}
