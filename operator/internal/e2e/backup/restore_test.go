//go:build e2e

package backup

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// takeSnapshot snapshots the source cluster under writes and returns it Complete, with the
// writes acknowledged up to its revision.
func (e *env) takeSnapshot(t *testing.T, name string, dest v1alpha2.SnapshotLocation) (*v1alpha2.EtcdSnapshot, map[string]string) {
	t.Helper()
	createSnapshot(t, e.c, e.ns, name, e.src.name, dest)
	s := waitSnapshot(t, e.c, e.ns, name)
	mustComplete(t, s)
	t.Logf("%s: %s, %d bytes, revision %d, from %s in %s", name, s.Status.Artifact.URI, s.Status.Artifact.SizeBytes,
		s.Status.Revision, s.Status.Member, s.Status.Duration.Duration)
	return s, e.rec.upTo(s.Status.Revision)
}

// restored creates a cluster seeded from src and checks it holds every write in want.
func (e *env) restored(t *testing.T, name string, replicas int32, src v1alpha2.RestoreSource, want map[string]string) {
	t.Helper()
	// The snapshot was taken with auth on: the new cluster needs root's password in its spec.
	tc := e.newCluster(t, name, replicas, srcPassword, restoreSpec(src))
	tc.waitReady(t, e.c, int(replicas))
	assertHas(t, tc.root(t, e.c), "/rec/", want)
	cl := e2eutil.GetCluster(t, e.c, e.ns, name)
	if cl.Status.ClusterID == e2eutil.GetCluster(t, e.c, e.ns, e.src.name).Status.ClusterID {
		t.Error("the restored cluster has the source's cluster ID; a restore makes a new one")
	}
	t.Logf("%s: %d members, %d acknowledged writes up to the snapshot's revision present", name, replicas, len(want))
	e.deleteCluster(t, name) // before the next restore of the same scenario starts
}

// newCluster is newTLSAuthCluster for one scenario: when the scenario fails, what went wrong
// with the cluster is logged; either way the cluster is deleted after it, so a failed scenario
// does not leave its members running under the next one.
func (e *env) newCluster(t *testing.T, name string, replicas int32, password string, mutate ...func(*v1alpha2.EtcdClusterSpec)) tlsAuthCluster {
	t.Helper()
	tc := newTLSAuthCluster(t, e.c, e.ns, name, replicas, password, mutate...)
	t.Cleanup(func() { e.deleteCluster(t, name) })
	e2eutil.DiagnoseOnFailure(t, e.c, e.op, e.ns, name) // cleanups run last-in first: this one before the delete
	return tc
}

// deleteCluster deletes the cluster if it is still there.
func (e *env) deleteCluster(t *testing.T, name string) {
	cl := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	if err := e.c.Client.Delete(context.Background(), cl); client.IgnoreNotFound(err) != nil {
		t.Error(err)
	}
}

// testS3Restores: an on-demand snapshot to S3, restored into a new 3-member cluster by
// EtcdSnapshot reference (others join the restored seed as learners) and into a 1-member
// cluster from the raw S3 key.
func (e *env) testS3Restores(t *testing.T) {
	s, want := e.takeSnapshot(t, "manual-s3", v1alpha2.SnapshotLocation{S3: s3Location(e.store, "manual")})
	if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
		t.Fatalf("stored object sha256 %s, recorded %s", sum, s.Status.Artifact.Checksum)
	}
	e.restored(t, "from-ref", 3, v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: s.Name}}, want)
	raw := s3Location(e.store, keyOf(s.Status.Artifact.URI))
	e.restored(t, "from-s3", 1, v1alpha2.RestoreSource{S3: raw}, want)
}

// testPVC: an on-demand snapshot to a PVC, restored from the raw file path on the claim.
func (e *env) testPVC(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backup-volume", Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if err := e.c.Client.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
	s, want := e.takeSnapshot(t, "manual-pvc", v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: pvc.Name, SubPath: "etcd"}})
	if got, wantURI := s.Status.Artifact.URI, "pvc://backup-volume/etcd/manual-pvc.db"; got != wantURI {
		t.Errorf("artifact %s, want %s", got, wantURI)
	}
	e.restored(t, "from-pvc", 1, v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: pvc.Name, SubPath: "etcd/manual-pvc.db"}}, want)
}

// testCorrupted: an artifact that no longer matches its recorded sha256 (EtcdSnapshot source),
// and a file that is not an intact etcd snapshot (raw S3 source), are refused by the restore
// agent; the condition names the checksum, and etcd never starts on them.
func (e *env) testCorrupted(t *testing.T) {
	s, _ := e.takeSnapshot(t, "to-corrupt", v1alpha2.SnapshotLocation{S3: s3Location(e.store, "corrupt")})
	b, _ := download(t, e.store, keyOf(s.Status.Artifact.URI))
	b[len(b)/2] ^= 0xff
	upload(t, e.store, keyOf(s.Status.Artifact.URI), b) // the recorded checksum no longer matches
	upload(t, e.store, "corrupt/raw-flipped.db", b)     // no checksum known: etcd's own hash must catch it
	for name, src := range map[string]v1alpha2.RestoreSource{
		"corrupt-ref": {SnapshotRef: &corev1.LocalObjectReference{Name: s.Name}},
		"corrupt-raw": {S3: s3Location(e.store, "corrupt/raw-flipped.db")},
	} {
		e.newCluster(t, name, 1, srcPassword, restoreSpec(src))
		var msg string
		e2eutil.WaitFor(t, convergeTimeout, name+": Degraded "+v1alpha2.ReasonChecksumMismatch, func() bool {
			d := meta.FindStatusCondition(e2eutil.GetCluster(t, e.c, e.ns, name).Status.Conditions, v1alpha2.ConditionDegraded)
			if d != nil && slices.Contains(v1alpha2.RestoreFailureReasons, d.Reason) {
				msg = d.Reason + ": " + d.Message
				return true
			}
			return false
		})
		if !strings.HasPrefix(msg, v1alpha2.ReasonChecksumMismatch+":") {
			t.Errorf("%s: Degraded says %q, want reason %s", name, msg, v1alpha2.ReasonChecksumMismatch)
		}
		for _, m := range e2eutil.Members(t, e.c, e.ns, name) {
			if p := e2eutil.Pod(t, e.c, e.ns, m.Name); p != nil && etcdStarted(p) {
				t.Errorf("%s: etcd started on the corrupted snapshot in Pod %s", name, p.Name)
			}
		}
		// No crash loop: the seed's Pod goes and is not recreated; the member records why.
		e2eutil.WaitFor(t, convergeTimeout, name+": the seed's Pod deleted, the refusal recorded", func() bool {
			ms := e2eutil.Members(t, e.c, e.ns, name)
			if len(ms) != 1 {
				return false
			}
			_, refused := ms[0].Annotations[v1alpha2.AnnotationRestoreRefused]
			return refused && e2eutil.Pod(t, e.c, e.ns, ms[0].Name) == nil
		})
		t.Logf("%s: %s", name, msg)
	}
}

func etcdStarted(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "etcd" && (cs.State.Running != nil || cs.State.Terminated != nil || cs.RestartCount > 0) {
			return true
		}
	}
	return false
}

// testS3Down: with S3 down a snapshot fails with a reason and the next one succeeds; wrong
// credentials give a clear reason too. The outage is of a server of its own: the schedule runs
// beside this scenario against the shared one and must never see it down.
func (e *env) testS3Down(t *testing.T) {
	store := framework.StartS3(t, e.c)
	if err := store.CreateBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	const creds = "outage-s3-credentials"
	createCredentials(t, e.c, e.ns, creds, store.Root)
	at := func(prefix, secret string) v1alpha2.SnapshotLocation {
		l := s3Location(store, prefix)
		l.CredentialsSecretRef.Name = secret
		return v1alpha2.SnapshotLocation{S3: l}
	}
	if err := store.Stop(); err != nil {
		t.Fatal(err)
	}
	createSnapshot(t, e.c, e.ns, "while-down", e.src.name, at("down", creds))
	down := waitSnapshot(t, e.c, e.ns, "while-down")
	if err := store.Start(); err != nil {
		t.Fatal(err)
	}
	if reason, msg := readyReason(down.Status.Conditions); down.Status.Phase != v1alpha2.SnapshotFailed || reason != v1alpha2.ReasonEndpointUnreachable {
		t.Errorf("with S3 down: %s %s: %s, want Failed %s", down.Status.Phase, reason, msg, v1alpha2.ReasonEndpointUnreachable)
	}
	if n := len(objects(t, store, "down/")); n != 0 {
		t.Errorf("%d objects left by the failed snapshot", n)
	}
	e.takeSnapshot(t, "after-down", at("down", creds))
	createCredentials(t, e.c, e.ns, "wrong-credentials", store.BadCredentials())
	createSnapshot(t, e.c, e.ns, "wrong-keys", e.src.name, at("wrong", "wrong-credentials"))
	s := waitSnapshot(t, e.c, e.ns, "wrong-keys")
	if reason, msg := readyReason(s.Status.Conditions); s.Status.Phase != v1alpha2.SnapshotFailed || reason != v1alpha2.ReasonAccessDenied {
		t.Errorf("wrong credentials: %s %s: %s, want Failed %s", s.Status.Phase, reason, msg, v1alpha2.ReasonAccessDenied)
	} else if strings.Contains(msg, store.BadCredentials().SecretAccessKey) {
		t.Error("the condition shows the secret key")
	}
}
