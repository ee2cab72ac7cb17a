//go:build e2e

package realnodes

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/status"
)

// debugProfile is kubectl debug's --custom on top of its restricted profile (the namespace
// enforces Restricted): the member's client TLS volume where etcd has it, and the member's uid,
// which the Secret volume's fsGroup lets read the key.
const debugProfile = `{"volumeMounts":[{"name":"tls-client","mountPath":"/etc/etcd/tls/client","readOnly":true}],
 "securityContext":{"runAsUser":65532,"runAsGroup":65532}}`

// kubectlTools runs what an operator of the platform types: kubectl etcd (its status and
// etcdctl reach every member through port-forwards, which the real kubelet serves through
// containerd's streaming server), and kubectl debug, whose ephemeral container from the built
// etcd image shares the member's network namespace and asks the member itself who it is.
func (s *suite) kubectlTools(t *testing.T) {
	version := e2eutil.GetCluster(t, s.c, etcdNamespace, etcdRelease).Spec.Version
	k := e2eutil.NewKubectlPlugin(t, s.c, version)
	start := time.Now()
	var st status.Cluster
	if err := json.Unmarshal([]byte(s.kubectlOK(t, k, "etcd", "-n", etcdNamespace, "status", etcdRelease, "-o", "json")), &st); err != nil {
		t.Fatal(err)
	}
	for _, m := range st.Members {
		if !m.Healthy || m.Version != version || m.ID == "" {
			t.Errorf("kubectl etcd status: member %+v, want healthy on etcd %s", m, version)
		}
	}
	if len(st.Members) != etcdReplicas || st.Leader == "" || len(st.Unreached) != 0 {
		t.Errorf("kubectl etcd status: %+v, want %d members and a leader", st, etcdReplicas)
	}
	health := s.kubectlOK(t, k, "etcd", "-n", etcdNamespace, "etcdctl", etcdRelease, "--", "endpoint", "health", "--cluster=false")
	if n := strings.Count(health, "is healthy"); n != etcdReplicas {
		t.Errorf("etcdctl endpoint health through the port-forwards: %d healthy, want %d:\n%s", n, etcdReplicas, health)
	}
	t.Logf("kubectl etcd status and etcdctl through port-forwards: %s", time.Since(start).Round(time.Millisecond))
	s.debugMember(t, k, version)
}

// debugMember runs etcdctl in an ephemeral container of a member's Pod against the member's
// own loopback listener and checks that the member answering is that member.
func (s *suite) debugMember(t *testing.T, k e2eutil.KubectlPlugin, version string) {
	t.Helper()
	member := e2eutil.Members(t, s.c, etcdNamespace, etcdRelease)[0]
	custom := filepath.Join(t.TempDir(), "debug.json")
	if err := os.WriteFile(custom, []byte(debugProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	const tlsDir = "/etc/etcd/tls/client/"
	start := time.Now()
	s.kubectlOK(t, k, "debug", "-n", etcdNamespace, member.Name, "--image="+v1alpha2.DefaultImageRepository+":v"+version,
		"--target=etcd", "-c", "debugger", "--profile=restricted", "--custom="+custom, "--",
		"etcdctl", "--endpoints=https://127.0.0.1:2379", "--cacert="+tlsDir+"ca.crt", "--cert="+tlsDir+"tls.crt", "--key="+tlsDir+"tls.key",
		"endpoint", "status", "-w", "json")
	var term *corev1.ContainerStateTerminated
	e2eutil.WaitSeen(t, 2*time.Minute, "the debug container to end", func() (bool, string) {
		p := e2eutil.Pod(t, s.c, etcdNamespace, member.Name)
		for _, st := range p.Status.EphemeralContainerStatuses {
			if st.Name == "debugger" {
				term = st.State.Terminated
				return term != nil, st.State.String()
			}
		}
		return false, "no status of the debug container yet"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := s.c.Kube.CoreV1().Pods(etcdNamespace).GetLogs(member.Name, &corev1.PodLogOptions{Container: "debugger"}).DoRaw(ctx)
	if err != nil || term.ExitCode != 0 {
		t.Fatalf("debug container: exit %d (%s), log %s (err %v)", term.ExitCode, term.Reason, logs, err)
	}
	var out []struct {
		Status struct {
			Header struct {
				MemberID uint64 `json:"member_id"`
			} `json:"header"`
			Version string `json:"version"`
		}
	}
	if err := json.Unmarshal(logs, &out); err != nil || len(out) != 1 {
		t.Fatalf("etcdctl endpoint status in the debug container: %v\n%s", err, logs)
	}
	if got := etcd.FormatID(out[0].Status.Header.MemberID); got != member.Status.MemberID || out[0].Status.Version != version {
		t.Errorf("the debug container reached member %s on etcd %s, want %s on %s", got, out[0].Status.Version, member.Status.MemberID, version)
	}
	t.Logf("kubectl debug: an ephemeral etcd container in Pod %s reached its member %s: %s", member.Name, member.Status.MemberID, time.Since(start).Round(time.Millisecond))
}

// kubectlOK runs kubectl with args; a non-zero exit fails the test.
func (s *suite) kubectlOK(t *testing.T, k e2eutil.KubectlPlugin, args ...string) string {
	t.Helper()
	out, errOut, code := k.Run(t, "", args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}
