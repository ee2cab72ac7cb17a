//go:build e2e

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// volumeResync is the agents' resync of Secret and ConfigMap volumes in these tests; short, so
// the healing of a volume without an event can be awaited.
const volumeResync = 2 * time.Second

// checkSecretRefresh changes the etcd-cfg Secret of the running etcd-0 and proves what the
// kubelet does: the mounted files follow (through a swapped ..data link, keeping mode and
// owner), a key removed from the Secret disappears, and the container is neither restarted nor
// re-executed. Environment variables from the Secret keep their start-time value.
func checkSecretRefresh(t *testing.T, c kubernetes.Interface, pidFile, volumeDir string) {
	ctx := context.Background()
	pid := readPID(t, pidFile)
	before := inContainer(t, pidFile, "readlink", "/etc/etcd-cfg/..data")
	s, err := c.CoreV1().Secrets(namespace).Get(ctx, "etcd-cfg", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"greeting": []byte("hello"), "setting": []byte("off"), "added": []byte("new")}
	start := time.Now()
	if s, err = c.CoreV1().Secrets(namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new Secret content in the container", 10*time.Second, func() (bool, string) {
		got := inContainer(t, pidFile, "cat", "/etc/etcd-cfg/setting")
		return got == "off", got
	})
	t.Logf("Secret update visible in the container after %s", time.Since(start).Round(time.Millisecond))
	checks := map[string]string{
		"cat /etc/etcd-cfg/added":                "new",
		"stat -L -c %a:%u /etc/etcd-cfg/setting": "400:65532",
		"readlink /etc/etcd-cfg/setting":         "..data/setting",
	}
	for cmd, want := range checks {
		if got := strings.TrimSpace(inContainer(t, pidFile, strings.Fields(cmd)...)); got != want {
			t.Errorf("%s: got %q, want %q", cmd, got, want)
		}
	}
	if after := inContainer(t, pidFile, "readlink", "/etc/etcd-cfg/..data"); after == before {
		t.Errorf("..data still points at %q: the content was not swapped as a new generation", after)
	}

	delete(s.Data, "added")
	if _, err := c.CoreV1().Secrets(namespace).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a removed key to disappear", 10*time.Second, func() (bool, string) {
		out := inContainer(t, pidFile, "ls", "/etc/etcd-cfg")
		return !strings.Contains(out, "added"), out
	})
	// No event this time: a volume that drifted from its Secret (an update the watch missed) is
	// put right by the periodic resync.
	if err := os.WriteFile(filepath.Join(volumeDir, "setting"), []byte("drifted"), 0o400); err != nil {
		t.Fatal(err)
	}
	took := time.Now()
	waitFor(t, "the resync to restore the drifted file", 3*volumeResync, func() (bool, string) {
		got := inContainer(t, pidFile, "cat", "/etc/etcd-cfg/setting")
		return got == "off", got
	})
	t.Logf("a drifted volume restored by the resync after %s (resync every %s)", time.Since(took).Round(time.Millisecond), volumeResync)
	if readPID(t, pidFile) != pid {
		t.Error("the container was restarted for a Secret update")
	}
	p := waitPod(t, c, "etcd-0", "still Ready", 10*time.Second, podReady)
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 {
		t.Errorf("container statuses after the refresh: %+v", cs)
	}
}
