package provider

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// initPod has two init containers and one regular container.
func initPod(policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: corev1.PodSpec{
		RestartPolicy:  policy,
		InitContainers: []corev1.Container{{Name: "init1"}, {Name: "init2"}},
		Containers:     []corev1.Container{{Name: "main"}}}}
}

// bootRuntime is a runtime of initPod on a node in boot, with saved written as its state.json.
func bootRuntime(t *testing.T, boot string, saved *savedPod) *podRuntime {
	t.Helper()
	p, err := New(context.Background(), Config{StateDir: t.TempDir(), BootID: boot, NetnsPrefix: "t-p",
		Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rt := newPodRuntime(p, initPod(corev1.RestartPolicyAlways))
	t.Cleanup(rt.stopRun)
	if err := os.MkdirAll(rt.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if saved != nil {
		if err := saveState(rt.dir, saved); err != nil {
			t.Fatal(err)
		}
	}
	return rt
}

// finishedInit is an init container that completed, restarted twice before, with its message.
func finishedInit() savedContainer {
	at := time.Unix(1000, 0)
	term := terminated(0, at, at).Terminated
	term.Message = "done"
	return savedContainer{Ran: true, RestartCount: 2, Started: at, Finished: ptr.To(0), Terminated: term}
}

// initDoneIn is the state of initPod whose init containers completed in boot; main ran.
func initDoneIn(boot string) *savedPod {
	return &savedPod{UID: "u", InitDone: true, InitBoot: boot, Containers: map[string]savedContainer{
		"init1": finishedInit(), "init2": finishedInit(), "main": {Ran: true}}}
}

// After a reboot the kubelet's new sandbox runs the init containers again; an agent restart in
// the same boot (processes kept), or state an older agent wrote without a boot, keeps them done.
func TestInitContainersAfterReboot(t *testing.T) {
	cases := []struct {
		name, boot string
		saved      *savedPod
		rerun      bool
	}{
		{name: "saved in another boot", boot: "b2", saved: initDoneIn("b1"), rerun: true},
		{name: "saved in this boot", boot: "b1", saved: initDoneIn("b1")},
		{name: "saved without a boot", boot: "b2", saved: initDoneIn("")},
		{name: "agent without a boot", boot: "", saved: initDoneIn("b1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := bootRuntime(t, tc.boot, tc.saved)
			if err := rt.loadSaved(); err != nil {
				t.Fatal(err)
			}
			if rt.saved.InitDone == tc.rerun {
				t.Fatalf("InitDone %v, want %v", rt.saved.InitDone, !tc.rerun)
			}
			for _, c := range rt.initCs {
				if tc.rerun {
					checkRerun(t, c)
				} else if c.finished == nil || c.state.Terminated == nil || c.state.Terminated.Message != "done" {
					t.Fatalf("%s: finished %v state %+v, want kept done", c.name, c.finished, c.state)
				}
			}
		})
	}
}

// checkRerun: c will be started again, counted as a restart, its last run shown as lastState.
func checkRerun(t *testing.T, c *containerRuntime) {
	t.Helper()
	last := c.lastState.Terminated
	if c.finished != nil || c.state.Waiting == nil || !c.hasRun || c.restartCount != 2 || last == nil || last.Message != "done" {
		t.Fatalf("%s: finished %v state %+v ran %v restarts %d lastState %+v", c.name, c.finished, c.state, c.hasRun,
			c.restartCount, c.lastState)
	}
}

// The rerun is what the next save writes: an agent crash before the init containers are done
// again does not bring the earlier boot's completion back.
func TestRerunInitIsSaved(t *testing.T) {
	rt := bootRuntime(t, "b2", initDoneIn("b1"))
	if err := rt.loadSaved(); err != nil {
		t.Fatal(err)
	}
	if err := rt.save(); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(rt.dir)
	if err != nil {
		t.Fatal(err)
	}
	init1 := s.Containers["init1"]
	if s.InitDone || s.InitBoot != "" || init1.Finished != nil || init1.LastTerminated == nil || init1.RestartCount != 2 {
		t.Fatalf("saved %+v, init1 %+v", s, init1)
	}
}

// Init containers still running at the reboot (one done, the next running) all run again.
func TestInitInterruptedByReboot(t *testing.T) {
	saved := initDoneIn("b1")
	saved.InitDone = false
	saved.Containers["init2"] = savedContainer{Ran: true, PID: 0}
	rt := bootRuntime(t, "b2", saved)
	if err := rt.loadSaved(); err != nil {
		t.Fatal(err)
	}
	checkRerun(t, rt.initCs[0])
	if c := rt.initCs[1]; c.finished != nil || c.lastState.Terminated == nil {
		t.Fatalf("init2: finished %v lastState %+v", c.finished, c.lastState)
	}
}

// A pod that ended for good (graceful node shutdown, which also ends the boot) is only reported.
func TestTerminalPodKeepsInitAfterReboot(t *testing.T) {
	saved := initDoneIn("b1")
	saved.Terminal = &savedTerminal{Phase: corev1.PodFailed, Reason: NodeShutdownReason}
	rt := bootRuntime(t, "b2", saved)
	if err := rt.loadSaved(); err != nil {
		t.Fatal(err)
	}
	if !rt.saved.InitDone || rt.initCs[0].finished == nil {
		t.Fatal("a terminal pod's init containers were reset")
	}
}

// An older agent's state is taken as this boot's, so that the next reboot is seen.
func TestStateWithoutBootTakesThisBoot(t *testing.T) {
	rt := bootRuntime(t, "b2", initDoneIn(""))
	if err := rt.loadSaved(); err != nil {
		t.Fatal(err)
	}
	if rt.saved.InitBoot != "b2" {
		t.Fatalf("InitBoot %q, want b2", rt.saved.InitBoot)
	}
}

// An init container that completes records the boot it ran in; a regular one does not.
func TestFinishRecordsInitBoot(t *testing.T) {
	rt := bootRuntime(t, "b1", nil)
	if err := rt.loadSaved(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rt.finish(rt.cs[0], terminated(0, now, now), 0)
	if rt.saved.InitBoot != "" {
		t.Fatalf("a regular container set InitBoot %q", rt.saved.InitBoot)
	}
	rt.finish(rt.initCs[0], terminated(0, now, now), 0)
	if s, err := loadState(rt.dir); err != nil || s.InitBoot != "b1" {
		t.Fatalf("saved %+v, %v: want InitBoot b1", s, err)
	}
}

// A failing init container under Always/OnFailure is retried with back-off: the pod stays
// Pending and not ready, the init container waits in CrashLoopBackOff showing its last run.
func TestInitCrashLoopStatus(t *testing.T) {
	for _, policy := range []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure} {
		if !shouldRestart(policy, 1, true) {
			t.Fatalf("%s: a failed init container is not restarted", policy)
		}
		rt := testPodRuntime(initPod(policy))
		now := time.Now()
		term := terminated(3, now, now)
		term.Terminated.Message = "no config"
		rt.backOff(rt.initCs[0], term, 10*time.Second)
		st := rt.snapshot().Status
		init1 := st.InitContainerStatuses[0]
		last := init1.LastTerminationState.Terminated
		if init1.State.Waiting == nil || init1.State.Waiting.Reason != "CrashLoopBackOff" ||
			last == nil || last.ExitCode != 3 || last.Message != "no config" {
			t.Fatalf("%s: init1 %+v", policy, init1)
		}
		m := conditionMap(st)
		if st.Phase != corev1.PodPending || m[corev1.PodReady] != corev1.ConditionFalse || m[corev1.PodInitialized] != corev1.ConditionFalse {
			t.Fatalf("%s: phase %s conditions %v", policy, st.Phase, m)
		}
		if w := st.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Fatalf("%s: main %+v", policy, st.ContainerStatuses[0].State)
		}
	}
}
