//go:build e2e

package kubectletcd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/maintenance"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/status"
	snap "github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

const (
	convergeTimeout = 5 * time.Minute
	cluster         = "kv"
)

// kubectl runs the real kubectl with kubectl-etcd and etcdctl first on PATH.
type kubectl struct {
	e2eutil.KubectlPlugin
	ns string
}

// run returns stdout, stderr and the exit code of `kubectl etcd -n NS ARGS`.
func (k kubectl) run(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	// -n before the verb: whatever follows "--" is etcdctl's.
	return k.Run(t, stdin, append([]string{"etcd", "-n", k.ns}, args...)...)
}

// ok runs a verb that must succeed and returns its stdout.
func (k kubectl) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := k.run(t, "", args...)
	if code != 0 {
		t.Fatalf("kubectl etcd %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// json runs a verb with -o json into v.
func (k kubectl) json(t *testing.T, v any, args ...string) {
	t.Helper()
	out := k.ok(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("kubectl etcd %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (k kubectl) code(t *testing.T, want int, stdin string, args ...string) string {
	t.Helper()
	out, errOut, code := k.run(t, stdin, args...)
	if code != want {
		t.Fatalf("kubectl etcd %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
	return errOut
}

// setup puts kubectl-etcd and the tools cache's etcdctl into a PATH folder of their own.
func setup(t *testing.T, c *framework.Cluster, ns string) kubectl {
	return kubectl{KubectlPlugin: e2eutil.NewKubectlPlugin(t, c, e2eutil.EtcdVersion()), ns: ns}
}

// newMTLSAuthCluster: BYO server certificate, the operator's client certificate under client
// mTLS, auth on.
func newMTLSAuthCluster(t *testing.T, c *framework.Cluster, ns string) {
	ca := e2eutil.CreateServerSecret(t, c, ns, cluster+"-server", cluster)
	e2eutil.CreateTLSSecret(t, c, ns, cluster+"-operator", ca.ClientSecretData(t, cluster+"-operator-client"))
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cluster + "-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: "plugin-root-pw"}}
	if err := c.Client.Create(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	e2eutil.CreateCluster(t, c, ns, cluster, 3, func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{
			ServerSecretRef:         &corev1.LocalObjectReference{Name: cluster + "-server"},
			OperatorClientSecretRef: &corev1.LocalObjectReference{Name: cluster + "-operator"}}}
		s.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: cluster + "-root"}}
	})
	waitSettled(t, c, ns)
}

// waitSettled: every member ready, auth on, Available and not Progressing.
func waitSettled(t *testing.T, c *framework.Cluster, ns string) {
	t.Helper()
	e2eutil.WaitFor(t, convergeTimeout, cluster+": 3 members ready with auth, settled", func() bool {
		cl := e2eutil.GetCluster(t, c, ns, cluster)
		return cl.Status.AuthEnabled && cl.Status.ReadyMembers == 3 &&
			meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha2.ConditionAvailable) &&
			meta.IsStatusConditionFalse(cl.Status.Conditions, v1alpha2.ConditionProgressing)
	})
}

// TestKubectlEtcd runs every verb, in an order where each leaves the cluster healthy for the next.
func TestKubectlEtcd(t *testing.T) {
	c := framework.Shared(t)
	e2eutil.StartSuiteOperator(t, c, 200)
	ns := e2eutil.NewNamespace(t, c)
	k := setup(t, c, ns)
	newMTLSAuthCluster(t, c, ns)

	steps := []struct {
		name string
		run  func(*testing.T, kubectl)
	}{
		{"FoundByKubectl", testFound},
		{"Status", testStatus},
		{"Members", testMembers},
		{"Etcdctl", testEtcdctl},
		{"SnapshotSave", testSnapshotSave},
		{"MoveLeader", testMoveLeader},
		{"Defrag", testDefrag},
		{"Alarms", testAlarms},
		{"ExitCodes", testExitCodes},
		{"SnapshotListAndRestore", func(t *testing.T, k kubectl) { testRestore(t, c, k) }},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.run(t, k) }) {
			return
		}
	}
}

func testFound(t *testing.T, k kubectl) {
	cmd := exec.Command(k.Bin, "plugin", "list")
	cmd.Env = append(os.Environ(), k.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "kubectl-etcd") {
		t.Fatalf("kubectl plugin list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), filepath.Join(k.Dir, "kubectl-etcd")) {
		t.Fatalf("kubectl plugin list does not show kubectl-etcd:\n%s", out)
	}
}

func testStatus(t *testing.T, k kubectl) {
	var v status.Cluster
	k.json(t, &v, "status", cluster)
	if len(v.Members) != 3 || v.Leader == "" || v.AlarmsError != "" || len(v.Unreached) != 0 {
		t.Fatalf("status: %+v", v)
	}
	leaders := 0
	for _, m := range v.Members {
		if !m.Healthy || m.Version != e2eutil.EtcdVersion() || m.DBSize == 0 || m.AppliedIndex == 0 || m.ID == "" {
			t.Errorf("member %+v: want healthy, etcd %s, a database and an applied index", m, e2eutil.EtcdVersion())
		}
		if m.Role == status.RoleLeader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Errorf("%d leaders in %+v", leaders, v.Members)
	}
	table := k.ok(t, "status", cluster)
	for _, want := range []string{"Leader:", v.Leader, "Alarms:", "none", "RAFT INDEX"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
	t.Logf("kubectl etcd status:\n%s", table)
}

func testMembers(t *testing.T, k kubectl) {
	var es []status.Entry
	k.json(t, &es, "members", cluster)
	if len(es) != 3 {
		t.Fatalf("members: %+v", es)
	}
	for _, e := range es {
		if e.ID == "" || e.EtcdMember == "" || e.Learner || !e.Ready || len(e.ClientURLs) == 0 || !strings.HasPrefix(e.ClientURLs[0], "https://") {
			t.Errorf("member entry %+v: want a ready voter joined to its EtcdMember, serving https", e)
		}
	}
	if yaml := k.ok(t, "members", cluster, "-o", "yaml"); !strings.Contains(yaml, "etcdMember: ") {
		t.Errorf("members -o yaml:\n%s", yaml)
	}
}

func testEtcdctl(t *testing.T, k kubectl) {
	if out := k.ok(t, "etcdctl", cluster, "--", "put", "/plugin/before", "1"); strings.TrimSpace(out) != "OK" {
		t.Fatalf("etcdctl put: %q", out)
	}
	if out := k.ok(t, "etcdctl", cluster, "--", "get", "/plugin/before", "--print-value-only"); strings.TrimSpace(out) != "1" {
		t.Fatalf("etcdctl get: %q", out)
	}
	out := k.ok(t, "etcdctl", cluster, "--", "endpoint", "health", "--cluster=false")
	if strings.Count(out, "is healthy") != 3 {
		t.Fatalf("etcdctl endpoint health over the forwarded endpoints:\n%s", out)
	}
	// etcdctl's own failure is its exit code (auth on: a wrong user is refused).
	if _, errOut, code := k.run(t, "", "etcdctl", cluster, "--", "get", "/plugin/before", "--user=nobody:wrong"); code == 0 {
		t.Fatalf("etcdctl with a wrong user succeeded: %s", errOut)
	}
}

func testSnapshotSave(t *testing.T, k kubectl) {
	file := filepath.Join(t.TempDir(), "kv.db")
	var saved snapshot.Saved
	k.json(t, &saved, "snapshot", "save", cluster, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if want := snap.ChecksumPrefix + hex.EncodeToString(sum[:]); saved.Checksum != want || saved.SizeBytes != int64(len(data)) {
		t.Fatalf("reported %s (%d bytes), the file is %s (%d bytes)", saved.Checksum, saved.SizeBytes, want, len(data))
	}
	if _, err := snap.Verify(bytes.NewReader(data)); err != nil {
		t.Fatalf("the saved file is not an intact etcd snapshot: %v", err)
	}
	if _, err := os.Stat(file + ".part"); !os.IsNotExist(err) {
		t.Fatalf("the partial file was left behind: %v", err)
	}
	if saved.Member == "" || saved.Revision == 0 {
		t.Fatalf("saved %+v", saved)
	}
	t.Logf("snapshot saved: %+v", saved)
}

func testMoveLeader(t *testing.T, k kubectl) {
	var before status.Cluster
	k.json(t, &before, "status", cluster)
	var moved maintenance.Moved
	k.json(t, &moved, "move-leader", cluster)
	if moved.From != before.Leader || moved.To == before.Leader {
		t.Fatalf("moved %+v, leader was %s", moved, before.Leader)
	}
	var after status.Cluster
	k.json(t, &after, "status", cluster)
	if after.Leader != moved.To {
		t.Fatalf("leader after the move: %s, want %s", after.Leader, moved.To)
	}
	// Named: back to the first leader.
	k.json(t, &moved, "move-leader", cluster, before.Leader)
	if moved.To != before.Leader {
		t.Fatalf("moved %+v, want to %s", moved, before.Leader)
	}
}

func testDefrag(t *testing.T, k kubectl) {
	errOut := k.code(t, kubectletcd.ExitAborted, "n\n", "defrag", cluster)
	if !strings.Contains(errOut, "[y/N]") {
		t.Errorf("defrag did not ask: %s", errOut)
	}
	var res []maintenance.Defragmented
	k.json(t, &res, "defrag", cluster, "--yes")
	if len(res) != 3 {
		t.Fatalf("defrag results %+v", res)
	}
	for i, r := range res {
		if r.Outcome != maintenance.OutcomeDefragmented || r.After == 0 {
			t.Errorf("member %+v not defragmented", r)
		}
		if (i == len(res)-1) != (r.Role == "leader") {
			t.Errorf("order %+v: the leader goes last, once", res)
		}
	}
	var after status.Cluster
	k.json(t, &after, "status", cluster)
	if after.Leader == "" || len(after.Unreached) != 0 {
		t.Fatalf("after the defrag: %+v", after)
	}
}

func testAlarms(t *testing.T, k kubectl) {
	var as []maintenance.Alarm
	k.json(t, &as, "alarm", "list", cluster)
	if len(as) != 0 {
		t.Fatalf("alarms on a fresh cluster: %+v", as)
	}
	k.ok(t, "alarm", "disarm", cluster, "--yes")
}

func testExitCodes(t *testing.T, k kubectl) {
	if errOut := k.code(t, kubectletcd.ExitNotFound, "", "status", "no-such-cluster"); !strings.Contains(errOut, `"no-such-cluster" not found`) {
		t.Errorf("unknown cluster: %s", errOut)
	}
	k.code(t, kubectletcd.ExitUsage, "", "no-such-verb")
	k.code(t, kubectletcd.ExitUsage, "", "status")
	k.code(t, kubectletcd.ExitUsage, "", "status", cluster, "-o", "xml")
	k.code(t, kubectletcd.ExitUsage, "", "status", cluster, "--no-such-flag")
	k.code(t, kubectletcd.ExitNotFound, "", "move-leader", cluster, "no-such-member")
	if errOut := k.code(t, kubectletcd.ExitForbidden, "", "status", cluster, "--as", "system:serviceaccount:default:nobody"); !strings.Contains(errOut, "forbidden") {
		t.Errorf("no permission: %s", errOut)
	}
}
