//go:build e2e

package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// debugProfile is kubectl debug's --custom: kubectl's profiles mount no volumes, so the member's
// data volume is added where etcd has it; uid and gid are the member's (65532), which own the
// data dir.
const debugProfile = `{"volumeMounts":[{"name":"data","mountPath":"/var/lib/etcd"}],
 "securityContext":{"runAsUser":65532,"runAsGroup":65532}}`

// TestKubectlDebugMemberDataDir proves that the real `kubectl debug` works on a member Pod of
// the local cluster as on a real one — how users and other projects' suites inspect or break a
// member's data dir: an ephemeral busybox container targeting etcd, attached over `-i`, sees
// /var/lib/etcd/member through the data volume and through the target's root, and what it writes
// there is on the member's volume, as the member's own container shows through `kubectl exec`.
func TestKubectlDebugMemberDataDir(t *testing.T) {
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "debug", 1)
	e2eutil.WaitConverged(t, c, ns, "debug", 1, step)
	pod := e2eutil.Members(t, c, ns, "debug")[0].Name
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every container shares the node's PID namespace (see e2e/nodeagent/README.md): the
	// target's root is /proc/<its pid>/root, not /proc/1/root.
	etcdPID, err := c.ContainerPID(ctx, ns, pod, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	custom := filepath.Join(t.TempDir(), "debug.json")
	if err := os.WriteFile(custom, []byte(debugProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`ls /var/lib/etcd/member
ls /proc/%d/root/var/lib/etcd/member | sed 's/^/target: /'
echo written-by-debug > /var/lib/etcd/debug-was-here
exit 0
`, etcdPID)
	out := kubectl(t, c, ctx, script, "debug", "-n", ns, pod, "-i", "--image=busybox:1.36", "--target=etcd",
		"-c", "debugger", "--custom="+custom, "--", "sh")
	if !strings.Contains(out, "snap\nwal\n") || !strings.Contains(out, "target: snap\ntarget: wal\n") {
		t.Fatalf("kubectl debug output %q: the debug container does not see the member's data dir", out)
	}
	if got := kubectl(t, c, ctx, "", "exec", "-n", ns, pod, "-c", "etcd", "--", "cat", "/var/lib/etcd/debug-was-here"); got != "written-by-debug\n" {
		t.Fatalf("the member's container reads %q", got)
	}
	p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Status.EphemeralContainerStatuses; len(s) != 1 || s[0].Name != "debugger" || s[0].State.Terminated == nil || s[0].State.Terminated.ExitCode != 0 {
		t.Fatalf("ephemeral container statuses %+v", s)
	}
}

// kubectl runs the tools cache's kubectl with stdin and returns its stdout; a failure, or an
// attach that fell back to streaming logs, fails the test.
func kubectl(t *testing.T, c *framework.Cluster, ctx context.Context, stdin string, args ...string) string {
	t.Helper()
	cmd, err := c.Kubectl(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "couldn't attach") {
		t.Fatalf("kubectl %s could not attach: %s", strings.Join(args, " "), stderr.String())
	}
	t.Logf("kubectl %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
	return stdout.String()
}
