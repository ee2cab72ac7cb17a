//go:build e2e

package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// TestRollingUpgrade: the cluster is upgraded one minor at a time through every supported
// version (3.5 → 3.6 → 3.7) while a client keeps writing; each change is rolled out one member
// at a time, every member keeps its ID and data, and no acknowledged write is lost. Skipping a
// minor is refused where it is written, before any Pod is touched. After an upgrade, the next
// one waits until every member has snapshotted on the new minor (etcd 3.7 cannot replay WAL
// entries 3.5 wrote): with no writes it holds and says why, and writes let it go on. Then it is
// downgraded back one minor at a time (3.7 → 3.6 → 3.5) with etcd's downgrade procedure under
// the same writer and checks; two minors down at once is refused.
func TestRollingUpgrade(t *testing.T) {
	vs := e2eutil.EtcdVersions
	c := cluster(t)
	ns := e2eutil.NewNamespace(t, c)
	e2eutil.CreateCluster(t, c, ns, "up", 3, e2eutil.Version(vs[0]), func(s *v1alpha2.EtcdClusterSpec) {
		s.Options = &v1alpha2.EtcdOptions{SnapshotCount: ptr.To(snapshotCount)}
	})
	e2eutil.WaitConverged(t, c, ns, "up", 3, 2*step)
	if len(vs) > 2 {
		err := setVersion(t, c, ns, "up", vs[2])
		if err == nil || !strings.Contains(err.Error(), v1alpha2.MsgVersionPath) {
			t.Fatalf("%s -> %s: %v, want the version-path refusal", vs[0], vs[2], err)
		}
		t.Logf("%s -> %s refused: %v", vs[0], vs[2], err)
	}
	cli := e2eutil.EtcdClient(t, c, ns, "up")
	written := map[string]int{} // acknowledged writes by prefix, read again at the end
	for i := 1; i < len(vs); i++ {
		before := memberPods(t, c, ns)
		if err := setVersion(t, c, ns, "up", vs[i]); err != nil {
			t.Fatal(err)
		}
		if i > 1 {
			holdsForSnapshot(t, c, ns, vs[i-1], before)
		}
		prefix := "upgrade-" + vs[i]
		w := e2eutil.StartWriter(cli, prefix)
		waitRolled(t, c, ns, vs[i-1], vs[i], before)
		acked, failed, errs := w.Stop()
		t.Logf("%s: %d writes during the step, %d failed attempts (retried) %v", vs[i], acked, failed, errs)
		e2eutil.VerifyWrites(t, cli, prefix, acked)
		written[prefix] = acked
	}
	if len(vs) > 2 {
		err := setVersion(t, c, ns, "up", vs[len(vs)-3])
		if err == nil || !strings.Contains(err.Error(), v1alpha2.MsgVersionPath) {
			t.Fatalf("%s -> %s: %v, want the version-path refusal", vs[len(vs)-1], vs[len(vs)-3], err)
		}
	}
	for i := len(vs) - 2; i >= 0; i-- {
		if i == 0 {
			cancelledDowngrade(t, c, ns, cli, vs[1], vs[0])
		}
		before := memberPods(t, c, ns)
		if err := setVersion(t, c, ns, "up", vs[i]); err != nil {
			t.Fatalf("%s -> %s: %v", vs[i+1], vs[i], err)
		}
		prefix := "downgrade-" + vs[i]
		w := e2eutil.StartWriter(cli, prefix)
		waitRolled(t, c, ns, vs[i+1], vs[i], before)
		acked, failed, errs := w.Stop()
		t.Logf("%s (downgrade): %d writes during the step, %d failed attempts (retried) %v", vs[i], acked, failed, errs)
		e2eutil.VerifyWrites(t, cli, prefix, acked)
		written[prefix] = acked
		downgradeEnded(t, c, ns, cli, vs[i])
	}
	for prefix, acked := range written { // what every minor wrote, read on the oldest
		e2eutil.VerifyWrites(t, cli, prefix, acked)
	}
}

// clusterVersion is etcd's cluster version as a member's /version reports it.
func clusterVersion(httpc *http.Client, endpoint string) (string, error) {
	resp, err := httpc.Get(endpoint + "/version")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var v struct {
		Cluster string `json:"etcdcluster"`
	}
	return v.Cluster, json.NewDecoder(resp.Body).Decode(&v)
}

// cancelledDowngrade: a downgrade to to is started, then spec.version is set back to from once
// etcd's downgrade is enabled: the operator cancels it and every member ends on from again.
func cancelledDowngrade(t *testing.T, c *framework.Cluster, ns string, cli *clientv3.Client, from, to string) {
	t.Helper()
	if err := setVersion(t, c, ns, "up", to); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, step, "etcd's downgrade to "+to+" enabled", func() bool {
		return downgradeEnabled(cli) != ""
	})
	if err := setVersion(t, c, ns, "up", from); err != nil {
		t.Fatalf("back to %s mid-downgrade: %v", from, err)
	}
	took := e2eutil.WaitFor(t, 3*step, "downgrade cancelled, every member on "+from, func() bool {
		for _, m := range e2eutil.Members(t, c, ns, "up") {
			if m.Status.Version != from {
				return false
			}
		}
		return downgradeEnabled(cli) == "" && e2eutil.Converged(t, c, ns, "up", 3)
	})
	if e2eutil.FindEvent(t, c, ns, "up", v1alpha2.ReasonDowngradeCancelled) == nil {
		t.Errorf("no %s Event", v1alpha2.ReasonDowngradeCancelled)
	}
	t.Logf("downgrade to %s cancelled and every member back on %s in %s", to, from, took.Round(100*time.Millisecond))
}

// downgradeEnabled is the target of a downgrade a member reports enabled ("": none, or no
// member answered).
func downgradeEnabled(cli *clientv3.Client) string {
	for _, ep := range cli.Endpoints() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := cli.Status(ctx, ep)
		cancel()
		if err == nil && st.DowngradeInfo.GetEnabled() {
			return st.DowngradeInfo.GetTargetVersion()
		}
	}
	return ""
}

// downgradeEnded: the downgrade was enabled through etcd (the operator's Event) and etcd ended
// it once every member ran the older minor: no member reports it enabled any more.
func downgradeEnded(t *testing.T, c *framework.Cluster, ns string, cli *clientv3.Client, to string) {
	t.Helper()
	minor := strings.Join(strings.Split(to, ".")[:2], ".")
	var events eventsv1.EventList
	if err := c.Client.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool {
		return e.Reason == v1alpha2.ReasonDowngrading && strings.Contains(e.Note, "downgrade to "+minor+" enabled")
	}) {
		t.Errorf("%s: no %s Event enabling the downgrade to %s", to, v1alpha2.ReasonDowngrading, minor)
	}
	httpc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: e2eutil.ClusterDialer(c)}}
	e2eutil.WaitNoError(t, step, "etcd ended the downgrade to "+to+" at cluster version "+minor, func() error {
		for _, ep := range cli.Endpoints() {
			if v, err := clusterVersion(httpc, ep); err != nil || v != minor+".0" {
				return fmt.Errorf("%s: cluster version %q %v, want %s.0", ep, v, err, minor)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := cli.Status(ctx, ep)
			cancel()
			if err != nil {
				return err
			}
			if st.DowngradeInfo.GetEnabled() {
				return fmt.Errorf("%s still reports a downgrade to %s enabled", ep, st.DowngradeInfo.GetTargetVersion())
			}
		}
		return nil
	})
}

// snapshotCount is the upgrade cluster's --snapshot-count: small enough that writes release a
// held upgrade in seconds, large enough that the writes the previous step's writer makes after
// the operator recorded the new minor (it writes until the test sees the cluster converged, at
// up to ~1,000 writes a second) cannot release the hold before holdsForSnapshot sees it.
const snapshotCount int64 = 10000

// holdsForSnapshot: right after an upgrade to from and with no writes, the next upgrade holds
// (Progressing says every member must snapshot on from first) and restarts nobody.
func holdsForSnapshot(t *testing.T, c *framework.Cluster, ns, from string, before map[string]memberPod) {
	t.Helper()
	var msg string
	e2eutil.WaitFor(t, step, "the rollout held for a snapshot on "+from, func() bool {
		p := meta.FindStatusCondition(e2eutil.GetCluster(t, c, ns, "up").Status.Conditions, v1alpha2.ConditionProgressing)
		if p != nil && strings.Contains(p.Message, "take a snapshot on etcd "+strings.Join(strings.Split(from, ".")[:2], ".")) {
			msg = p.Message
			return true
		}
		return false
	})
	t.Logf("held: %s", msg)
	for name, p := range memberPods(t, c, ns) {
		if before[name].podUID != p.podUID {
			t.Errorf("member %s was restarted while the rollout waits for a snapshot", name)
		}
	}
	if e2eutil.FindEvent(t, c, ns, "up", v1alpha2.ReasonWaitingForSnapshot) == nil {
		t.Error("no WaitingForSnapshot Event")
	}
}

type memberPod struct{ memberID, podUID string }

func memberPods(t *testing.T, c *framework.Cluster, ns string) map[string]memberPod {
	out := map[string]memberPod{}
	for _, m := range e2eutil.Members(t, c, ns, "up") {
		out[m.Name] = memberPod{memberID: m.Status.MemberID, podUID: string(e2eutil.Pod(t, c, ns, m.Name).UID)}
	}
	return out
}

// waitRolled waits for every member to run to, restarted in place with its ID kept.
func waitRolled(t *testing.T, c *framework.Cluster, ns, from, to string, before map[string]memberPod) {
	sawRollout := false
	took := e2eutil.WaitFor(t, 3*step, "every member on "+to, func() bool {
		ec := e2eutil.GetCluster(t, c, ns, "up")
		if p := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionProgressing); p != nil && p.Reason == v1alpha2.ReasonRollingUpdate {
			sawRollout = true
		}
		for _, m := range e2eutil.Members(t, c, ns, "up") {
			if m.Status.Version != to {
				return false
			}
		}
		return ec.Status.Rollout == nil && e2eutil.Converged(t, c, ns, "up", 3)
	})
	t.Logf("%s -> %s: rolled 3 members in %s", from, to, took.Round(100*time.Millisecond))
	if !sawRollout {
		t.Errorf("%s -> %s: Progressing never reported RollingUpdate", from, to)
	}
	for name, p := range memberPods(t, c, ns) {
		b, ok := before[name]
		switch {
		case !ok:
			t.Errorf("member %s is new: the upgrade replaced a member instead of restarting it", name)
		case p.memberID != b.memberID:
			t.Errorf("member %s ID %s -> %s", name, b.memberID, p.memberID)
		case p.podUID == b.podUID:
			t.Errorf("member %s Pod was not restarted", name)
		}
	}
}

func setVersion(t *testing.T, c *framework.Cluster, ns, name, version string) error {
	t.Helper()
	ec := e2eutil.GetCluster(t, c, ns, name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Version = version
	return c.Client.Patch(context.Background(), ec, patch)
}
