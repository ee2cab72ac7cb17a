//go:build e2e

package sweep

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	cp "github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// clusterName is every scenario's EtcdCluster (each has its own namespace).
const clusterName = "sweep"

// all is the sweep, operation by operation. A scenario sharing one cluster lists its steps in
// an order each leaves the cluster ready for the next.
func all() []scenario {
	return []scenario{
		{op: cp.OpBootstrap, fresh: true, setup: bare, steps: []step{
			{point: cp.SeedCreated, short: true, trigger: create(3), done: converged},
			// A new cluster grows from its seed by scale-up steps: crash in the middle of that.
			{point: cp.MemberCreated, trigger: create(3), done: converged},
			{point: cp.LearnerAdded, nth: 2, trigger: create(3), done: converged},
			{point: cp.Promoted, nth: 2, trigger: create(3), done: converged},
		}},
		{op: cp.OpScaleUp + "/down", setup: plain(1), steps: []step{
			{point: cp.MemberCreated, trigger: scaleBy(1), done: converged},
			{point: cp.LearnerAdded, short: true, trigger: scaleBy(1), done: converged},
			{point: cp.Promoted, short: true, trigger: scaleBy(1), done: converged},
			{point: cp.MemberDeleted, trigger: scaleBy(-1), done: converged},
			{point: cp.EtcdMemberRemoved, short: true, trigger: scaleBy(-1), done: converged},
		}},
		{op: cp.OpPause + "/resume", setup: plain(1), steps: []step{
			{point: cp.Parked, short: true, trigger: scaleTo(0), done: paused},
			{point: cp.Woken, short: true, trigger: scaleTo(1), done: converged},
		}},
		{op: cp.OpRollout, setup: plain(3), steps: []step{
			{point: cp.RestartGranted, trigger: bumpCPU, done: rolledOut},
			{point: cp.RolloutPodDeleted, short: true, trigger: bumpCPU, done: rolledOut},
			{point: cp.RolloutPodDeleted, nth: 3, trigger: bumpCPU, done: rolledOut},
			{point: cp.RolloutLeaderMoved, short: true, trigger: bumpCPU, done: rolledOut},
		}},
		{op: cp.OpTrust, setup: byoTLS(3), steps: []step{
			{point: cp.TrustWidened, trigger: rotateCA, done: rotated},
			{point: cp.TrustSwapped, short: true, trigger: rotateCA, done: rotated},
			{point: cp.TrustNarrowed, trigger: rotateCA, done: rotated},
		}},
		{op: cp.OpAuth, fresh: true, setup: byoTLS(1), steps: []step{
			{point: cp.AuthUsersCreated, trigger: enableAuth, done: authOn},
			{point: cp.AuthEnabled, short: true, trigger: enableAuth, done: authOn},
		}},
		{op: cp.OpSnapshot, setup: withClaim(plain(1)), steps: []step{
			{point: cp.SnapshotAgentCreated, short: true, trigger: snapshot, done: snapshotted},
		}},
		{op: cp.OpRollback, setup: withPoint(withClaim(plain(3))), steps: []step{
			{point: cp.SafetySnapshotCreated, trigger: rollBack, done: rolledBack},
			{point: cp.TakenOver, trigger: rollBack, done: rolledBack},
			{point: cp.MembersDeleted, short: true, trigger: rollBack, done: rolledBack},
			{point: cp.RestoreSeedCreated, trigger: rollBack, done: rolledBack},
			{point: cp.HandedBack, trigger: rollBack, done: rolledBack},
		}},
	}
}

// newSubject makes a namespace (deleted with the test) and, before it goes, deletes the
// cluster and waits for its members: a member finalised while a later step's operator is
// armed must not be the one that hits its crash point.
func newSubject(t *testing.T, s *sweep, replicas int32) *subject {
	ns := e2eutil.NewNamespace(t, s.c)
	sub := &subject{ns: ns, name: clusterName, replicas: replicas}
	sub.client = plainClient(t, s, ns)
	t.Cleanup(func() { s.deleteCluster(t, sub) })
	return sub
}

// plainClient is one client of the cluster's client Service for the whole scenario (t), made
// at first use: polling for convergence should not dial anew every time.
func plainClient(t *testing.T, s *sweep, ns string) func(*testing.T) (*clientv3.Client, error) {
	var cli *clientv3.Client
	t.Cleanup(func() {
		if cli != nil {
			_ = cli.Close()
		}
	})
	return func(*testing.T) (*clientv3.Client, error) {
		if cli != nil {
			return cli, nil
		}
		var err error
		cli, err = clientv3.New(e2eutil.ClientConfig(s.c, "http://"+v1alpha2.ClientServiceName(clusterName, nil)+"."+ns+".svc:2379"))
		return cli, err
	}
}

func (s *sweep) deleteCluster(t *testing.T, sub *subject) {
	ec := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: sub.ns, Name: sub.name}}
	if err := s.c.Client.Delete(context.Background(), ec); client.IgnoreNotFound(err) != nil {
		t.Errorf("delete %s/%s: %v", sub.ns, sub.name, err)
		return
	}
	e2eutil.WaitFor(t, 2*time.Minute, "the cluster's EtcdMembers gone", func() bool {
		return len(e2eutil.Members(t, s.c, sub.ns, sub.name)) == 0
	})
}

// bare: a namespace, no cluster yet (bootstrap creates it).
func bare(t *testing.T, s *sweep) *subject { return newSubject(t, s, 0) }

// plain: a plaintext cluster of n members, converged.
func plain(n int32) func(t *testing.T, s *sweep) *subject {
	return func(t *testing.T, s *sweep) *subject {
		sub := newSubject(t, s, n)
		e2eutil.CreateCluster(t, s.c, sub.ns, sub.name, n)
		e2eutil.WaitConverged(t, s.c, sub.ns, sub.name, int(n), setupTimeout)
		return sub
	}
}

func create(n int32) func(t *testing.T, s *sweep, sub *subject) {
	return func(t *testing.T, s *sweep, sub *subject) {
		sub.replicas = n
		e2eutil.CreateCluster(t, s.c, sub.ns, sub.name, n)
	}
}

func scaleBy(d int32) func(t *testing.T, s *sweep, sub *subject) {
	return func(t *testing.T, s *sweep, sub *subject) { scaleTo(sub.replicas+d)(t, s, sub) }
}

func scaleTo(n int32) func(t *testing.T, s *sweep, sub *subject) {
	return func(t *testing.T, s *sweep, sub *subject) {
		sub.replicas = n
		e2eutil.Scale(t, s.c, sub.ns, sub.name, n)
	}
}

// converged: the sweep's invariants at sub.replicas members. Conditions: Available from a
// healthy quorum, not Progressing, not Degraded; etcd lists exactly the voters, each backed by
// one EtcdMember with its ID (no orphan learner, no member twice); no Pod or PVC outlives its
// member.
func converged(t *testing.T, s *sweep, sub *subject) error {
	ec := e2eutil.GetCluster(t, s.c, sub.ns, sub.name)
	if d := e2eutil.Degraded(ec); d != nil {
		return fmt.Errorf("Degraded %s: %s", d.Reason, d.Message)
	}
	cli, err := sub.client(t)
	if err != nil {
		return err
	}
	if !e2eutil.ConvergedWith(t, s.c, sub.ns, sub.name, int(sub.replicas), cli) {
		return fmt.Errorf("not converged at %d members (status: %d ready)", sub.replicas, ec.Status.ReadyMembers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := cli.MemberList(ctx)
	if err != nil {
		return err
	}
	if err := e2eutil.OneToOne(e2eutil.Members(t, s.c, sub.ns, sub.name), list.Members); err != nil {
		return err
	}
	return e2eutil.NoOrphans(t, s.c, sub.ns, sub.name)
}

// paused: Available says Paused, the one EtcdMember is dormant and its Pod is gone.
func paused(t *testing.T, s *sweep, sub *subject) error {
	ec := e2eutil.GetCluster(t, s.c, sub.ns, sub.name)
	avail := meta.FindStatusCondition(ec.Status.Conditions, v1alpha2.ConditionAvailable)
	if avail == nil || avail.Reason != v1alpha2.ReasonPaused {
		return errors.New("Available does not say Paused")
	}
	if d := e2eutil.Degraded(ec); d != nil {
		return fmt.Errorf("Degraded %s: %s", d.Reason, d.Message)
	}
	ms := e2eutil.Members(t, s.c, sub.ns, sub.name)
	if len(ms) != 1 || !ms[0].Spec.Dormant {
		return fmt.Errorf("%d EtcdMembers, want one dormant", len(ms))
	}
	if e2eutil.Pod(t, s.c, sub.ns, ms[0].Name) != nil {
		return fmt.Errorf("the dormant member's Pod %s still exists", ms[0].Name)
	}
	return e2eutil.NoOrphans(t, s.c, sub.ns, sub.name)
}

// cpuRequest is the rollout's template change: a CPU request one millicore larger each time.
func cpuRequest(gen int) resource.Quantity { return resource.MustParse(fmt.Sprintf("%dm", 10+gen)) }

func bumpCPU(t *testing.T, s *sweep, sub *subject) {
	sub.gen++
	ec := e2eutil.GetCluster(t, s.c, sub.ns, sub.name)
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpuRequest(sub.gen)}
	if err := s.c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatal(err)
	}
}

// rolledOut: converged, no rollout in status, and every member's Pod asks for the new request.
func rolledOut(t *testing.T, s *sweep, sub *subject) error {
	if err := converged(t, s, sub); err != nil {
		return err
	}
	if r := e2eutil.GetCluster(t, s.c, sub.ns, sub.name).Status.Rollout; r != nil {
		return fmt.Errorf("rollout in progress: %d/%d updated", r.UpdatedMembers, r.Members)
	}
	want := cpuRequest(sub.gen)
	for _, m := range e2eutil.Members(t, s.c, sub.ns, sub.name) {
		pod := e2eutil.Pod(t, s.c, sub.ns, m.Name)
		if pod == nil || !e2eutil.PodReady(pod) {
			return fmt.Errorf("member %s has no ready Pod", m.Name)
		}
		if got := pod.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(want) != 0 {
			return fmt.Errorf("Pod %s requests %s CPU, want %s", pod.Name, got.String(), want.String())
		}
	}
	return nil
}

// withClaim adds the PVC the snapshots are written to.
func withClaim(setup func(t *testing.T, s *sweep) *subject) func(t *testing.T, s *sweep) *subject {
	return func(t *testing.T, s *sweep) *subject {
		sub := setup(t, s)
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: sub.ns},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
		if err := s.c.Client.Create(context.Background(), pvc); err != nil {
			t.Fatal(err)
		}
		return sub
	}
}

func snapshotName(gen int) string { return fmt.Sprintf("snap-%d", gen) }

func snapshot(t *testing.T, s *sweep, sub *subject) {
	sub.gen++
	e2eutil.PutGet(t, s.c, sub.ns, sub.name, snapshotName(sub.gen), "before the snapshot")
	createSnapshot(t, s, sub, snapshotName(sub.gen))
}

// createSnapshot asks for a snapshot of the subject to the claim withClaim made.
func createSnapshot(t *testing.T, s *sweep, sub *subject, name string) {
	snap := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sub.ns},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: sub.name},
			Destination: v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "backup", SubPath: "etcd"}}}}
	if err := s.c.Client.Create(context.Background(), snap); err != nil {
		t.Fatal(err)
	}
}

// snapshotted: the snapshot completed with an artifact, and the cluster is as it was. A
// snapshot that failed because of the crash is an error too: the restart must finish it.
func snapshotted(t *testing.T, s *sweep, sub *subject) error {
	snap := &v1alpha2.EtcdSnapshot{}
	if err := s.c.Client.Get(context.Background(), client.ObjectKey{Namespace: sub.ns, Name: snapshotName(sub.gen)}, snap); err != nil {
		return err
	}
	switch snap.Status.Phase {
	case v1alpha2.SnapshotComplete:
	case v1alpha2.SnapshotFailed:
		t.Fatalf("the snapshot failed after the crash: %+v", snap.Status.Conditions)
	default:
		return fmt.Errorf("snapshot phase %q", snap.Status.Phase)
	}
	if snap.Status.Artifact == nil || snap.Status.Artifact.URI == "" {
		return errors.New("complete without an artifact")
	}
	return converged(t, s, sub)
}
