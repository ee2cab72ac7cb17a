//go:build e2e

package integration

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// restrictedBusybox is a busybox container as a restricted Pod runs it (uid 65532 from the pod,
// read-only root filesystem, no privilege escalation, no capabilities) running script.
func restrictedBusybox(name, script string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.36", Command: []string{"sh", "-c", script},
		SecurityContext: &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}
}

func restrictedPod(name string, policy corev1.RestartPolicy, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: corev1.PodSpec{
		NodeName: nodeName, AutomountServiceAccountToken: ptr.To(false), RestartPolicy: policy,
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			RunAsGroup: ptr.To[int64](65532), FSGroup: ptr.To[int64](65532)},
		Containers: containers}}
}

// TestTerminationMessages proves the kubelet's termination messages: each container start gets
// its own empty, writable file at terminationMessagePath (the API's default /dev/termination-log;
// never the host's /dev), also as uid 65532 with readOnlyRootFilesystem, whose content becomes
// state.terminated.message and after a restart lastState.terminated.message; with
// FallbackToLogsOnError a failed container with an empty file reports the tail of its log.
func TestTerminationMessages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the node agent e2e test needs root (network and mount namespaces); run it as root")
	}
	cfg, c := startAPIServer(t)
	ctx := context.Background()
	stateDir := t.TempDir()
	a := startAgent(t, cfg, agentOptions(t, stateDir, false))
	t.Cleanup(func() { a.Stop() })
	t.Cleanup(func() { dumpLogsOnFailure(t, stateDir) })
	hostHadFile := exists("/dev/termination-log")

	t.Run("a finished pod reports each container's message", func(t *testing.T) {
		failing := restrictedBusybox("failing", `i=1; while [ $i -le 100 ]; do echo "line $i"; i=$((i+1)); done; exit 3`)
		failing.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		custom := restrictedBusybox("custom-path", `echo custom > /tmp/result`)
		custom.TerminationMessagePath = "/tmp/result"
		pod := restrictedPod("snapshot", corev1.RestartPolicyNever,
			restrictedBusybox("result", `printf '{"revision":42,"ok":true}\n' > /dev/termination-log`), failing, custom)
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "snapshot", "Failed", 30*time.Second, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		want := map[string]func(string) bool{
			"result":      func(m string) bool { return m == `{"revision":42,"ok":true}`+"\n" },
			"failing":     func(m string) bool { return strings.HasPrefix(m, "line 21\n") && strings.HasSuffix(m, "line 100\n") },
			"custom-path": func(m string) bool { return m == "custom\n" },
		}
		for _, cs := range p.Status.ContainerStatuses {
			term := cs.State.Terminated
			if term == nil || !want[cs.Name](term.Message) {
				t.Errorf("container %s: state %+v", cs.Name, cs.State)
			}
		}
		if !hostHadFile {
			hostFileAbsent(t, "/dev/termination-log")
		}
		deleteAndWaitGone(t, c, "snapshot", 10*time.Second)
	})

	// A volume on /tmp shadows the agent's state directory, where the termination file lives
	// (/tmp/... on the local cluster); the file must still be mounted.
	t.Run("a container with a volume on /tmp reports its message", func(t *testing.T) {
		// The second volume's target does not exist on the host: container-init builds a new
		// root for it (pivot_root) and opens the later sources again, by path.
		ctr := restrictedBusybox("main", `touch /snapshot-target-e2e/x && echo done > /dev/termination-log`)
		ctr.VolumeMounts = []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}, {Name: "out", MountPath: "/snapshot-target-e2e"}}
		pod := restrictedPod("tmp-volume", corev1.RestartPolicyNever, ctr)
		pod.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "tmp-volume", "finished", 30*time.Second, func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
		})
		if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.Message != "done\n" {
			t.Errorf("status %+v", p.Status.ContainerStatuses)
		}
		deleteAndWaitGone(t, c, "tmp-volume", 10*time.Second)
	})

	t.Run("a restarted container gets a fresh file; lastState keeps the message", func(t *testing.T) {
		// The second run fails with 3 if it finds the first run's message in its file.
		script := `if [ -e /data/ran ]; then [ -s /dev/termination-log ] && exit 3; echo second > /dev/termination-log; exec sleep 3600; fi
touch /data/ran; echo first > /dev/termination-log; exit 1`
		ctr := restrictedBusybox("main", script)
		ctr.VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		pod := restrictedPod("restarts", corev1.RestartPolicyOnFailure, ctr)
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		if _, err := c.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, c, "restarts", "restarted once and running", 30*time.Second, func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].RestartCount >= 1 && cs[0].State.Running != nil
		})
		cs := p.Status.ContainerStatuses[0]
		last := cs.LastTerminationState.Terminated
		if cs.RestartCount != 1 || last == nil || last.ExitCode != 1 || last.Message != "first\n" {
			t.Fatalf("restarts %d, lastState %+v", cs.RestartCount, cs.LastTerminationState)
		}
		deleteAndWaitGone(t, c, "restarts", 10*time.Second)
	})
}
