//go:build e2e

package kubectletcd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/snapshot"
)

// testRestore: an EtcdSnapshot on a PVC is listed; restore refuses without confirmation, then
// rolls the cluster back to it and waits: the key written after the snapshot is gone.
func testRestore(t *testing.T, c *framework.Cluster, k kubectl) {
	ns := k.ns
	s := e2eutil.SnapshotToNewPVC(t, c, ns, cluster, "kv-manual", v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "etcd"}, 3*time.Minute)
	k.ok(t, "etcdctl", cluster, "--", "put", "/plugin/after", "2")

	var ls []snapshot.Listed
	k.json(t, &ls, "snapshot", "list", cluster)
	if len(ls) != 1 || ls[0].Name != s.Name || ls[0].Phase != string(v1alpha2.SnapshotComplete) ||
		!strings.HasPrefix(ls[0].Checksum, "sha256:") || ls[0].URI != "pvc://backups/etcd/kv-manual.db" {
		t.Fatalf("snapshot list: %+v", ls)
	}
	k.code(t, kubectletcd.ExitAborted, "", "restore", cluster, "--snapshot", s.Name)
	k.code(t, kubectletcd.ExitNotFound, "", "restore", cluster, "--snapshot", "no-such-snapshot")
	k.code(t, kubectletcd.ExitUsage, "", "restore", cluster)

	var r v1alpha2.EtcdRestore
	k.json(t, &r, "restore", cluster, "--snapshot", s.Name, "--yes")
	if r.Status.Phase != v1alpha2.RestoreComplete {
		t.Fatalf("restore returned in phase %q", r.Status.Phase)
	}
	waitSettled(t, c, ns)
	e2eutil.WaitNoError(t, convergeTimeout, "the rolled-back cluster answers through the plugin", func() error {
		if _, errOut, code := k.run(t, "", "etcdctl", cluster, "--", "get", "/plugin/before"); code != 0 {
			return fmt.Errorf("exit %d: %s", code, errOut)
		}
		return nil
	})
	if out := k.ok(t, "etcdctl", cluster, "--", "get", "/plugin/before", "--print-value-only"); strings.TrimSpace(out) != "1" {
		t.Errorf("a key written before the snapshot after the rollback: %q", out)
	}
	if out := k.ok(t, "etcdctl", cluster, "--", "get", "/plugin/after", "--print-value-only"); strings.TrimSpace(out) != "" {
		t.Errorf("a key written after the snapshot survived the rollback: %q", out)
	}
}
