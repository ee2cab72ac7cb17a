package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/process"
)

// Ephemeral containers are reported like the kubelet does: in ephemeralContainerStatuses, never
// ready, without started, and without a say in the pod's readiness.
func TestBuildStatusEphemeral(t *testing.T) {
	now := time.Now()
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now)}}
	st := buildStatus(podView{Phase: corev1.PodRunning,
		Containers:          []containerView{{Name: "etcd", State: running, Ready: true, Started: true}},
		EphemeralContainers: []containerView{{Name: "debugger", Image: "busybox", State: running, Ready: true, Started: true, Ephemeral: true}},
	}, conditionClock{}, now)
	if len(st.EphemeralContainerStatuses) != 1 || len(st.ContainerStatuses) != 1 {
		t.Fatalf("statuses: %d regular, %d ephemeral", len(st.ContainerStatuses), len(st.EphemeralContainerStatuses))
	}
	ec := st.EphemeralContainerStatuses[0]
	if ec.Name != "debugger" || ec.State.Running == nil || ec.Ready || ec.Started != nil {
		t.Fatalf("ephemeral status %+v", ec)
	}
	if conditionMap(st)[corev1.PodReady] != corev1.ConditionTrue {
		t.Fatal("an ephemeral container changed the pod's readiness")
	}
}

func testPodRuntime(pod *corev1.Pod) *podRuntime {
	p := &Provider{cfg: Config{NetnsPrefix: "t-p"}, pods: map[string]*podRuntime{}, base: context.Background()}
	return newPodRuntime(p, pod)
}

func TestEphemeralTarget(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd"}}}}
	rt := testPodRuntime(pod)
	defer rt.stopRun()
	dbg := newEphemeralRuntime(&corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "dbg"},
		TargetContainerName: "etcd"})
	if err := rt.checkTarget(dbg); err == nil || err.Error() != "target container etcd is not running" {
		t.Fatalf("target not started yet: %v", err)
	}
	rt.cs[0].handle = &process.Handle{PID: 1}
	if err := rt.checkTarget(dbg); err != nil {
		t.Fatalf("running target: %v", err)
	}
	dbg.targetName = "nope"
	if err := rt.checkTarget(dbg); err == nil || err.Error() != "unable to find target container nope" {
		t.Fatalf("missing target: %v", err)
	}
}

// update takes new ephemeral containers only once each, and keeps them in the spec that GetPod
// returns, so that virtual-kubelet's comparison settles.
func TestUpdateAddsEphemeralContainersOnce(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd"}}}}
	rt := testPodRuntime(pod)
	changed := pod.DeepCopy()
	changed.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox"}}}
	rt.update(changed)
	rt.update(changed)
	rt.stopRun() // the supervisors wait for the pod's sandbox; this ends them
	rt.closeEphemeral()
	snap := rt.snapshot()
	if len(rt.ecs) != 1 || len(snap.Spec.EphemeralContainers) != 1 || len(snap.Status.EphemeralContainerStatuses) != 1 {
		t.Fatalf("%d runtimes, %d in the spec, %d statuses", len(rt.ecs), len(snap.Spec.EphemeralContainers), len(snap.Status.EphemeralContainerStatuses))
	}
	if w := snap.Status.EphemeralContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
		t.Fatalf("a container that never started: %+v", snap.Status.EphemeralContainerStatuses[0].State)
	}
}

// An ephemeral container that died while no agent watched is reported lost and never started
// again; one that finished keeps its termination message across agent restarts.
func TestRestoreEphemeral(t *testing.T) {
	ec := &corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger"}}
	lost := newEphemeralRuntime(ec)
	lost.restore(savedContainer{Ran: true, PID: 0, Started: time.Now()}, t.TempDir())
	if lost.finished == nil || *lost.finished != 137 || lost.state.Terminated == nil || lost.state.Terminated.Reason != "ContainerStatusUnknown" {
		t.Fatalf("lost ephemeral container: finished %v state %+v", lost.finished, lost.state)
	}

	done := newEphemeralRuntime(ec)
	now := time.Now()
	done.state = terminated(3, now, now)
	done.state.Terminated.Message = "why it ended"
	code := 3
	done.finished, done.hasRun = &code, true
	again := newEphemeralRuntime(ec)
	again.restore(done.toSaved(), t.TempDir())
	if again.finished == nil || *again.finished != 3 || again.state.Terminated == nil || again.state.Terminated.Message != "why it ended" {
		t.Fatalf("restored %+v finished %v", again.state, again.finished)
	}
}

// A regular container's lastState (with its message) survives an agent restart.
func TestRestoreKeepsLastState(t *testing.T) {
	c := newContainerRuntime(corev1.Container{Name: "c"}, false, "")
	now := time.Now()
	c.lastState = terminated(1, now, now)
	c.lastState.Terminated.Message = "first run failed"
	again := newContainerRuntime(corev1.Container{Name: "c"}, false, "")
	again.restore(c.toSaved(), t.TempDir())
	if again.lastState.Terminated == nil || !strings.Contains(again.lastState.Terminated.Message, "first run failed") {
		t.Fatalf("lastState after restore: %+v", again.lastState)
	}
}
