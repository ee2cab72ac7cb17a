//go:build e2e

package backup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// testOperatorKilled: the operator dies while its agent streams; the agent finishes on its own,
// and the restarted operator records its result: one artifact, no second snapshot.
func (e *env) testOperatorKilled(t *testing.T) {
	createSnapshot(t, e.c, e.ns, "operator-killed", e.src.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "opkill")})
	e2eutil.WaitFor(t, snapshotTimeout, "Started", func() bool {
		return getSnapshot(t, e.c, e.ns, "operator-killed").Status.Phase == v1alpha2.SnapshotStarted
	})
	if err := e.op.Kill(); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, snapshotTimeout, "the agent to finish without the operator", func() bool {
		p := &corev1.Pod{}
		err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: v1alpha2.SnapshotAgentPodName("operator-killed")}, p)
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	})
	if err := e.op.Start(); err != nil {
		t.Fatal(err)
	}
	s := waitSnapshot(t, e.c, e.ns, "operator-killed")
	mustComplete(t, s)
	if keys := objects(t, e.store, "opkill/"); len(keys) != 1 {
		t.Errorf("objects %v, want exactly the one artifact", keys)
	}
	if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
		t.Errorf("stored sha256 %s, recorded %s", sum, s.Status.Artifact.Checksum)
	}
}

// testMemberKilled: the member the agent streams from first (a follower) is cut off from the
// network and killed; the agent moves to the next member, and what is stored is one verified
// artifact. (The database here is small, so the cut lands before or during the stream; the
// agent's own tests cut a stream after 12 MiB.)
func (e *env) testMemberKilled(t *testing.T) {
	ctx := context.Background()
	victim := firstFollower(t, e)
	if err := e.c.Partition(ctx, e.ns, victim); err != nil {
		t.Fatal(err)
	}
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := e.c.Heal(ctx, e.ns, victim); err != nil {
				t.Error(err)
			}
		}
	}
	defer heal()
	createSnapshot(t, e.c, e.ns, "member-killed", e.src.name, v1alpha2.SnapshotLocation{S3: s3Location(e.store, "memberkill")})
	e2eutil.WaitFor(t, snapshotTimeout, "Started", func() bool {
		return getSnapshot(t, e.c, e.ns, "member-killed").Status.Phase != v1alpha2.SnapshotPending
	})
	if err := e.c.KillContainer(ctx, e.ns, victim, "etcd"); err != nil {
		t.Fatal(err)
	}
	s := waitSnapshot(t, e.c, e.ns, "member-killed")
	heal()
	mustComplete(t, s)
	if s.Status.Member == victim {
		t.Errorf("the snapshot came from %s, the member that was cut off and killed", victim)
	}
	if keys := objects(t, e.store, "memberkill/"); len(keys) != 1 {
		t.Errorf("objects %v, want exactly the one artifact", keys)
	}
	if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
		t.Errorf("stored sha256 %s, recorded %s", sum, s.Status.Artifact.Checksum)
	}
	e.src.waitReady(t, e.c, 3) // the killed member is restarted in place and catches up
	t.Logf("cut off and killed %s; the snapshot came from %s in %s", victim, s.Status.Member, s.Status.Duration.Duration.Round(time.Millisecond))
}

// firstFollower is the member the agent tries first: the first follower in status.members.
func firstFollower(t *testing.T, e *env) string {
	t.Helper()
	for _, m := range e2eutil.GetCluster(t, e.c, e.ns, e.src.name).Status.Members {
		if m.Role == v1alpha2.MemberRoleFollower && m.Ready {
			return m.Name
		}
	}
	t.Fatal("no ready follower")
	return ""
}
