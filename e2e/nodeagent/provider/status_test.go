package provider

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func conditionMap(st corev1.PodStatus) map[corev1.PodConditionType]corev1.ConditionStatus {
	m := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range st.Conditions {
		m[c.Type] = c.Status
	}
	return m
}

func TestBuildStatusConditions(t *testing.T) {
	now := time.Now()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	cases := []struct {
		name                  string
		view                  podView
		initialized, podReady corev1.ConditionStatus
	}{
		{name: "init pending", view: podView{Phase: corev1.PodPending,
			InitContainers: []containerView{{Name: "i", State: waiting("PodInitializing", "")}},
			Containers:     []containerView{{Name: "c", State: waiting("PodInitializing", "")}}},
			initialized: corev1.ConditionFalse, podReady: corev1.ConditionFalse},
		{name: "running, one not ready", view: podView{Phase: corev1.PodRunning,
			InitContainers: []containerView{{Name: "i", State: terminated(0, now, now)}},
			Containers:     []containerView{{Name: "a", State: running, Ready: true}, {Name: "b", State: running}}},
			initialized: corev1.ConditionTrue, podReady: corev1.ConditionFalse},
		{name: "all ready", view: podView{Phase: corev1.PodRunning,
			Containers: []containerView{{Name: "a", State: running, Ready: true}}},
			initialized: corev1.ConditionTrue, podReady: corev1.ConditionTrue},
		{name: "succeeded", view: podView{Phase: corev1.PodSucceeded,
			Containers: []containerView{{Name: "a", State: terminated(0, now, now)}}},
			initialized: corev1.ConditionTrue, podReady: corev1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := conditionMap(buildStatus(tc.view, conditionClock{}, now))
			if m[corev1.PodInitialized] != tc.initialized || m[corev1.PodReady] != tc.podReady ||
				m[corev1.ContainersReady] != tc.podReady || m[corev1.PodScheduled] != corev1.ConditionTrue {
				t.Fatalf("conditions %v", m)
			}
		})
	}
}

func TestConditionTransitionTimeKept(t *testing.T) {
	clock := conditionClock{}
	t0 := time.Unix(1000, 0)
	first := clock.condition(corev1.PodReady, false, "x", t0)
	same := clock.condition(corev1.PodReady, false, "x", t0.Add(time.Minute))
	flipped := clock.condition(corev1.PodReady, true, "", t0.Add(2*time.Minute))
	if !first.LastTransitionTime.Equal(&same.LastTransitionTime) || flipped.LastTransitionTime.Time != t0.Add(2*time.Minute) {
		t.Fatalf("first %v same %v flipped %v", first.LastTransitionTime, same.LastTransitionTime, flipped.LastTransitionTime)
	}
}

func TestShouldRestart(t *testing.T) {
	cases := []struct {
		policy corev1.RestartPolicy
		code   int
		init   bool
		want   bool
	}{
		{corev1.RestartPolicyAlways, 0, false, true},
		{corev1.RestartPolicyAlways, 0, true, false},
		{corev1.RestartPolicyAlways, 1, true, true},
		{corev1.RestartPolicyOnFailure, 0, false, false},
		{corev1.RestartPolicyOnFailure, 2, false, true},
		{corev1.RestartPolicyNever, 2, false, false},
		{corev1.RestartPolicyNever, 2, true, false},
	}
	for _, tc := range cases {
		if got := shouldRestart(tc.policy, tc.code, tc.init); got != tc.want {
			t.Errorf("shouldRestart(%s, %d, init=%v) = %v", tc.policy, tc.code, tc.init, got)
		}
	}
}

func TestFinalPhase(t *testing.T) {
	if finalPhase([]int{0, 0}) != corev1.PodSucceeded || finalPhase([]int{0, 1}) != corev1.PodFailed {
		t.Fatal("wrong final phase")
	}
}

// The apiserver rejects a status whose qosClass differs from the one it computed at creation.
func TestBuildStatusKeepsQOSClass(t *testing.T) {
	now := time.Now()
	if got := buildStatus(podView{QOSClass: corev1.PodQOSBurstable}, conditionClock{}, now).QOSClass; got != corev1.PodQOSBurstable {
		t.Fatalf("QOSClass = %q, want Burstable", got)
	}
	if got := buildStatus(podView{}, conditionClock{}, now).QOSClass; got != corev1.PodQOSBestEffort {
		t.Fatalf("QOSClass = %q, want BestEffort when unknown", got)
	}
}

// A pod ended by a graceful node shutdown reads as the kubelet reports it: Failed/Terminated with
// a DisruptionTarget condition; any other pod has no such condition.
func TestBuildStatusNodeShutdown(t *testing.T) {
	now := time.Now()
	st := buildStatus(podView{Phase: corev1.PodFailed, Reason: NodeShutdownReason, Message: NodeShutdownMessage, Disrupted: true,
		Containers: []containerView{{Name: "a", State: terminated(0, now, now)}}}, conditionClock{}, now)
	var disruption *corev1.PodCondition
	for i, c := range st.Conditions {
		if c.Type == corev1.DisruptionTarget {
			disruption = &st.Conditions[i]
		}
	}
	if st.Phase != corev1.PodFailed || st.Reason != "Terminated" || st.Message != "Pod was terminated in response to imminent node shutdown." ||
		disruption == nil || disruption.Status != corev1.ConditionTrue || disruption.Reason != "TerminationByKubelet" {
		t.Fatalf("status %s/%s %q, DisruptionTarget %+v", st.Phase, st.Reason, st.Message, disruption)
	}
	if m := conditionMap(buildStatus(podView{Phase: corev1.PodFailed}, conditionClock{}, now)); m[corev1.DisruptionTarget] != "" {
		t.Fatalf("a pod that just failed has a DisruptionTarget condition: %v", m)
	}
}
