package lifecycle

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func getRestore(t *testing.T, ns, name string) *v1alpha2.EtcdRestore {
	t.Helper()
	er := &v1alpha2.EtcdRestore{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, er); err != nil {
		t.Fatal(err)
	}
	return er
}

func memberNames(t *testing.T, ns, cluster string) []string {
	var out []string
	for _, m := range members(t, ns, cluster) {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out
}

// snapshottedCluster is a one-member cluster "c" with a Complete snapshot "s1" of it, in a new
// namespace with S3 credentials; rollback(name) asks for a rollback of c to s1.
func snapshottedCluster(t *testing.T) (ns string, rollback func(name string)) {
	t.Helper()
	ns = newNamespace(t)
	s3Creds(t, ns, goodKeys)
	newCluster(t, ns, "c", 1)
	waitFor(t, ns, "Available", converged(t, ns, "c", 1))
	completeSnapshot(t, ns, "s1", "c")
	return ns, func(name string) {
		create(t, &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha2.EtcdRestoreSpec{
			ClusterRef: corev1.LocalObjectReference{Name: "c"}, Source: v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s1"}}}})
	}
}

// A rollback reads its source through before it touches anything: the verify Pod gets the
// snapshot's checksum and no member identity; a source that fails the check fails the
// rollback with the agent's reason, with no safety snapshot and the members as they were; one
// that passes goes on to the safety snapshot.
func TestRollbackChecksTheSourceFirst(t *testing.T) {
	ns, rollback := snapshottedCluster(t)
	before := memberNames(t, ns, "c")

	rollback("bad")
	verify := &corev1.Pod{}
	waitFor(t, ns, "the verify Pod", func() bool {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.RestoreVerifyPodName("bad")}, verify) == nil
	})
	env := envOf(verify)
	if env[snapshot.EnvRestoreVerifyOnly] != "true" || env[snapshot.EnvRestoreChecksum] != "sha256:0123" || env[snapshot.EnvS3Key] != "etcd/s1.db" {
		t.Errorf("verify Pod env %v", env)
	}
	if _, ok := env[snapshot.EnvEtcdName]; ok {
		t.Error("the verify Pod carries a member identity")
	}
	if c := meta.FindStatusCondition(getRestore(t, ns, "bad").Status.Conditions, v1alpha2.ConditionReady); c == nil || c.Reason != v1alpha2.ReasonVerifyingSource {
		t.Errorf("while verifying: %+v, want %s", c, v1alpha2.ReasonVerifyingSource)
	}
	finishAgent(t, ns, verify.Name, snapshot.RestoreResult{Phase: snapshot.PhaseFailed, Reason: snapshot.ReasonChecksumMismatch,
		Message: "etcd/s1.db has checksum sha256:ffff, want sha256:0123"}, 1)
	waitFor(t, ns, "the rollback Failed", func() bool { return getRestore(t, ns, "bad").Status.Phase == v1alpha2.RestoreFailed })
	if c := meta.FindStatusCondition(getRestore(t, ns, "bad").Status.Conditions, v1alpha2.ConditionReady); c.Reason != v1alpha2.ReasonChecksumMismatch {
		t.Errorf("failed with %s: %s, want %s", c.Reason, c.Message, v1alpha2.ReasonChecksumMismatch)
	}
	err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: v1alpha2.SafetySnapshotName("bad")}, &v1alpha2.EtcdSnapshot{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("safety snapshot of a refused rollback: %v, want none", err)
	}
	if after := memberNames(t, ns, "c"); !slices.Equal(after, before) {
		t.Errorf("members %v became %v", before, after)
	}
	if _, held := getCluster(t, ns, "c").Annotations[v1alpha2.AnnotationRestoring]; held {
		t.Error("a refused rollback took the cluster over")
	}

	rollback("good")
	finishAgent(t, ns, v1alpha2.RestoreVerifyPodName("good"), snapshot.RestoreResult{Phase: snapshot.PhaseVerified, SizeBytes: 8192, Checksum: "sha256:0123"}, 0)
	waitFor(t, ns, "the safety snapshot", func() bool { return getRestore(t, ns, "good").Status.Phase == v1alpha2.RestoreSafetySnapshot })
	if s := getSnapshot(t, ns, v1alpha2.SafetySnapshotName("good")); s.Spec.DeletionPolicy != v1alpha2.SnapshotRetain {
		t.Errorf("safety snapshot %+v", s.Spec)
	}
}

// A rollback whose new seed refuses its source for good (here a checksum mismatch found only by
// the seed's restore) does not sit in Restoring: it fails, naming the safety snapshot.
func TestRollbackSeedRefusedFails(t *testing.T) {
	ns, rollback := snapshottedCluster(t)
	rollback("r")
	finishAgent(t, ns, v1alpha2.RestoreVerifyPodName("r"), snapshot.RestoreResult{Phase: snapshot.PhaseVerified, SizeBytes: 8192, Checksum: "sha256:0123"}, 0)
	finishAgent(t, ns, v1alpha2.SnapshotAgentPodName(v1alpha2.SafetySnapshotName("r")), snapshot.SnapshotResult{Phase: snapshot.PhaseComplete,
		URI: "s3://backups/etcd/r-safety.db", SizeBytes: 8192, Checksum: "sha256:4567", Revision: 9}, 0)
	var seed string
	waitFor(t, ns, "the rollback's seed", func() bool {
		for _, m := range members(t, ns, "c") {
			if m.Labels[v1alpha2.LabelRestore] == "r" {
				seed = m.Name
				return pod(t, ns, seed) != nil
			}
		}
		return false
	})
	failRestore(t, ns, seed, `{"phase":"Failed","reason":"ChecksumMismatch","message":"sha256 differs"}`)
	waitFor(t, ns, "the rollback Failed", func() bool { return getRestore(t, ns, "r").Status.Phase == v1alpha2.RestoreFailed })
	c := meta.FindStatusCondition(getRestore(t, ns, "r").Status.Conditions, v1alpha2.ConditionReady)
	if c.Reason != v1alpha2.ReasonChecksumMismatch || !strings.Contains(c.Message, "r-safety") {
		t.Errorf("failed with %s: %s; want %s naming the safety snapshot", c.Reason, c.Message, v1alpha2.ReasonChecksumMismatch)
	}
	// The pass after the one that wrote Failed lets the hand-back finalizer go.
	waitFor(t, ns, "a failed rollback without finalizers", func() bool { return len(getRestore(t, ns, "r").Finalizers) == 0 })
}
