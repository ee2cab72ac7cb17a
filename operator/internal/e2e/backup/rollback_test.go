//go:build e2e

package backup

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// testRollback: a running cluster rolled back in place to a snapshot, with a client connected
// through the client Service all along. It keeps its Services and Secrets; writes before the
// snapshot are there, writes after it are gone; a client through the same Service works again,
// at revisions above any it saw before.
func (e *env) testRollback(t *testing.T) {
	ctx := context.Background()
	tc := e.newCluster(t, "rollback", 3, "rollback-password")
	tc.waitReady(t, e.c, 3)
	cli := tc.root(t, e.c)
	before := map[string]string{}
	for i := range 20 {
		k, v := fmt.Sprintf("/before/%02d", i), fmt.Sprintf("v%d", i)
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		before[k] = v
	}
	createSnapshot(t, e.c, e.ns, "rollback-point", tc.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "rollback")})
	mustComplete(t, waitSnapshot(t, e.c, e.ns, "rollback-point"))
	after, err := cli.Put(ctx, "/after/0", "lost")
	if err != nil {
		t.Fatal(err)
	}
	e.refusedRollback(t, tc.name)
	svc := &corev1.Service{}
	if err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: v1alpha2.ClientServiceName(tc.name, nil)}, svc); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "back-to-point", Namespace: e.ns},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: tc.name},
			Source: v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "rollback-point"}}}}
	if err := e.c.Client.Create(ctx, er); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 2*convergeTimeout, "EtcdRestore Complete", func() bool {
		got := &v1alpha2.EtcdRestore{}
		if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(er), got); err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase == v1alpha2.RestoreFailed {
			reason, msg := readyReason(got.Status.Conditions)
			t.Fatalf("rollback failed: %s: %s", reason, msg)
		}
		er = got
		return got.Status.Phase == v1alpha2.RestoreComplete
	})
	tc.waitReady(t, e.c, 3)
	took := time.Since(start)
	// The endpoints are the same; a new connection through them must work at once. Whether
	// the connection from before recovers by itself is measured, not asserted: on the local
	// cluster it sometimes sat for minutes on a connection to a replaced Pod (issue 12).
	oldBack, oldErr := oldClientRecovers(ctx, cli, time.Minute)
	cli = tc.root(t, e.c)
	var rev int64
	e2eutil.WaitNoError(t, convergeTimeout, "a client through the same Service writes", func() error {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		resp, err := cli.Put(cctx, "/after/rollback", "works")
		if err == nil {
			rev = resp.Header.Revision
		}
		return err
	})
	t.Logf("the client from before the rollback wrote again within a minute: %v (its last error: %v)", oldBack, oldErr)
	assertHas(t, cli, "/before/", before)
	if resp, err := cli.Get(ctx, "/after/0"); err != nil || len(resp.Kvs) != 0 {
		t.Errorf("/after/0, written after the snapshot, is still there (%v, %v)", resp, err)
	}
	if rev <= after.Header.Revision {
		t.Errorf("revision %d after the rollback, not above %d seen before it: watchers would miss changes", rev, after.Header.Revision)
	}
	got := &corev1.Service{}
	if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil || got.UID != svc.UID || got.Spec.ClusterIP != svc.Spec.ClusterIP {
		t.Errorf("the client Service changed: %v %v", err, got.UID)
	}
	safety := getSnapshot(t, e.c, e.ns, er.Status.SafetySnapshot)
	mustComplete(t, safety)
	t.Logf("rolled back in %s to revision %d (served from %d); safety snapshot %s at revision %d",
		took.Round(time.Second), er.Status.Revision, rev, safety.Name, safety.Status.Revision)
}

// oldClientRecovers: cli, connected before the rollback, gets a write through within d; else
// the last error it saw, which tells a stuck connection from a refused one.
func oldClientRecovers(ctx context.Context, cli *clientv3.Client, d time.Duration) (bool, error) {
	var last error
	for end := time.Now().Add(d); time.Now().Before(end); {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := cli.Put(cctx, "/after/old-client", "works")
		cancel()
		if err == nil {
			return true, nil
		}
		last = err
		time.Sleep(250 * time.Millisecond) // a refusal can come at once; do not spin on it
	}
	return false, last
}

// refusedRollback: a rollback to an artifact that is not an intact snapshot fails its check
// before anything of the cluster is touched: no safety snapshot, the same members and Pods.
func (e *env) refusedRollback(t *testing.T, cluster string) {
	t.Helper()
	ctx := context.Background()
	b, _ := download(t, e.store, "rollback/rollback-point.db")
	b[len(b)/2] ^= 0xff
	upload(t, e.store, "rollback/flipped.db", b)
	pods := map[string]string{}
	for _, m := range e2eutil.Members(t, e.c, e.ns, cluster) {
		pods[m.Name] = string(e2eutil.Pod(t, e.c, e.ns, m.Name).UID)
	}
	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "to-flipped", Namespace: e.ns},
		Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster},
			Source:         v1alpha2.RestoreSource{S3: s3Location(e.store, "rollback/flipped.db")},
			SafetySnapshot: &v1alpha2.SafetySnapshot{Destination: v1alpha2.SnapshotLocation{S3: s3Location(e.store, "rollback")}}}}
	if err := e.c.Client.Create(ctx, er); err != nil {
		t.Fatal(err)
	}
	var reason, msg string
	e2eutil.WaitFor(t, convergeTimeout, "the rollback to a flipped artifact Failed", func() bool {
		got := &v1alpha2.EtcdRestore{}
		if err := e.c.Client.Get(ctx, client.ObjectKeyFromObject(er), got); err != nil {
			t.Fatal(err)
		}
		reason, msg = readyReason(got.Status.Conditions)
		return got.Status.Phase == v1alpha2.RestoreFailed
	})
	if reason != v1alpha2.ReasonChecksumMismatch {
		t.Errorf("refused with %s: %s; want %s", reason, msg, v1alpha2.ReasonChecksumMismatch)
	}
	err := e.c.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: v1alpha2.SafetySnapshotName(er.Name)}, &v1alpha2.EtcdSnapshot{})
	if err == nil {
		t.Error("a safety snapshot was taken for a rollback whose source failed its check")
	}
	now := map[string]string{}
	for _, m := range e2eutil.Members(t, e.c, e.ns, cluster) {
		now[m.Name] = string(e2eutil.Pod(t, e.c, e.ns, m.Name).UID)
	}
	if !maps.Equal(now, pods) {
		t.Errorf("members and Pods %v became %v: the refused rollback touched the cluster", pods, now)
	}
	t.Logf("rollback to a flipped artifact refused, cluster untouched: %s: %s", reason, msg)
}
