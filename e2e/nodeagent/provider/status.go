package provider

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// containerView is the state of one container as the status builder sees it.
type containerView struct {
	Name, Image  string
	State        corev1.ContainerState
	LastState    corev1.ContainerState
	RestartCount int32
	Ready        bool
	Started      bool
	// Ephemeral containers have no probes: the kubelet reports them never ready and leaves
	// started unset.
	Ephemeral bool
}

// podView is the state of one pod as the status builder sees it.
type podView struct {
	Phase         corev1.PodPhase
	Reason        string
	Message       string
	PodIP, HostIP string
	NetworkReady  bool
	// QOSClass is what the apiserver computed at creation; the field is immutable, so echoing a
	// different class would get every status update rejected.
	QOSClass  corev1.PodQOSClass
	StartTime *metav1.Time
	// Disrupted: a graceful node shutdown ended the pod (DisruptionTarget condition).
	Disrupted           bool
	InitContainers      []containerView
	Containers          []containerView
	EphemeralContainers []containerView
}

// conditionClock remembers when each condition last changed, as the API wants.
type conditionClock map[corev1.PodConditionType]struct {
	status corev1.ConditionStatus
	at     metav1.Time
}

func (c conditionClock) condition(t corev1.PodConditionType, ok bool, reason string, now time.Time) corev1.PodCondition {
	status := corev1.ConditionFalse
	if ok {
		status = corev1.ConditionTrue
		reason = ""
	}
	prev, seen := c[t]
	if !seen || prev.status != status {
		prev.status, prev.at = status, metav1.NewTime(now)
		c[t] = prev
	}
	return corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: prev.at}
}

// buildStatus turns a pod view into the PodStatus reported to the API.
func buildStatus(v podView, clock conditionClock, now time.Time) corev1.PodStatus {
	st := corev1.PodStatus{
		Phase: v.Phase, Reason: v.Reason, Message: v.Message,
		HostIP: v.HostIP, StartTime: v.StartTime, QOSClass: v.QOSClass,
	}
	if st.QOSClass == "" {
		st.QOSClass = corev1.PodQOSBestEffort
	}
	if v.HostIP != "" {
		st.HostIPs = []corev1.HostIP{{IP: v.HostIP}}
	}
	if v.PodIP != "" {
		st.PodIP = v.PodIP
		st.PodIPs = []corev1.PodIP{{IP: v.PodIP}}
	}
	initialized := true
	for _, c := range v.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, containerStatus(c))
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			initialized = false
		}
	}
	ready := len(v.Containers) > 0
	for _, c := range v.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, containerStatus(c))
		ready = ready && c.Ready
	}
	for _, c := range v.EphemeralContainers {
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, containerStatus(c))
	}
	limitMessages(&st)
	notReady := "ContainersNotReady"
	if v.Phase == corev1.PodSucceeded || v.Phase == corev1.PodFailed {
		notReady = "PodCompleted"
		ready = false
		initialized = initialized || v.Phase == corev1.PodSucceeded
	}
	notInit := "ContainersNotInitialized"
	st.Conditions = []corev1.PodCondition{
		clock.condition(corev1.PodReadyToStartContainers, v.NetworkReady, "", now),
		clock.condition(corev1.PodInitialized, initialized, notInit, now),
		clock.condition(corev1.PodReady, ready, notReady, now),
		clock.condition(corev1.ContainersReady, ready, notReady, now),
		clock.condition(corev1.PodScheduled, true, "", now),
	}
	if v.Disrupted {
		c := clock.condition(corev1.DisruptionTarget, true, "", now)
		c.Reason, c.Message = corev1.PodReasonTerminationByKubelet, NodeShutdownMessage
		st.Conditions = append(st.Conditions, c)
	}
	return st
}

// containerStatus reports one container; the states are copies, so that cutting their messages
// to the pod's budget leaves the runtime's own record whole.
func containerStatus(c containerView) corev1.ContainerStatus {
	st := corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: "local://" + c.Image, ContainerID: "local://" + c.Name,
		State: *c.State.DeepCopy(), LastTerminationState: *c.LastState.DeepCopy(), RestartCount: c.RestartCount,
		Ready: c.Ready && !c.Ephemeral,
	}
	if !c.Ephemeral {
		st.Started = &c.Started
	}
	return st
}

// waiting and terminated build container states.
func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func terminated(exitCode int, started, finished time.Time) corev1.ContainerState {
	reason := "Completed"
	if exitCode != 0 {
		reason = "Error"
	}
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: int32(exitCode), Reason: reason,
		StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished),
	}}
}

// shouldRestart applies the pod's restartPolicy to a container that exited with exitCode.
func shouldRestart(policy corev1.RestartPolicy, exitCode int, isInit bool) bool {
	switch {
	case isInit:
		return exitCode != 0 && policy != corev1.RestartPolicyNever
	case policy == corev1.RestartPolicyNever:
		return false
	case policy == corev1.RestartPolicyOnFailure:
		return exitCode != 0
	}
	return true
}

// finalPhase is the phase of a pod whose containers all stopped for good.
func finalPhase(exitCodes []int) corev1.PodPhase {
	for _, c := range exitCodes {
		if c != 0 {
			return corev1.PodFailed
		}
	}
	return corev1.PodSucceeded
}
