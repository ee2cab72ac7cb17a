package lifecycle

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func s3Creds(t *testing.T, ns string, keys map[string][]byte) {
	t.Helper()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns}, Data: keys})
}

var goodKeys = map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("id"), "AWS_SECRET_ACCESS_KEY": []byte("secret")}

func s3Dest() v1alpha2.SnapshotLocation {
	return v1alpha2.SnapshotLocation{S3: &v1alpha2.S3Location{Endpoint: "http://s3.test:9000", Bucket: "backups", Key: "etcd/",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}, ForcePathStyle: true}}
}

func newSnapshot(t *testing.T, ns, name, cluster string, dest v1alpha2.SnapshotLocation) *v1alpha2.EtcdSnapshot {
	t.Helper()
	s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}, Destination: dest}}
	create(t, s)
	return s
}

func getSnapshot(t *testing.T, ns, name string) *v1alpha2.EtcdSnapshot {
	t.Helper()
	s := &v1alpha2.EtcdSnapshot{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshotPhase(t *testing.T, ns, name string, want v1alpha2.SnapshotPhase) func() bool {
	return func() bool { return getSnapshot(t, ns, name).Status.Phase == want }
}

func envOf(pod *corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

// finishAgent plays the agent's end: its container terminated with a result line.
func finishAgent(t *testing.T, ns, podName string, res any, exitCode int32) {
	t.Helper()
	line, _ := json.Marshal(res)
	waitFor(t, ns, "agent Pod "+podName, func() bool {
		p := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: podName}, p); err != nil {
			return false
		}
		phase := corev1.PodSucceeded
		if exitCode != 0 {
			phase = corev1.PodFailed
		}
		p.Status.Phase = phase
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha2.AgentContainer, State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: string(line)}}}}
		return k8s.Status().Update(context.Background(), p) == nil
	})
}

// A snapshot streams from a follower first, the leader last, and records what the agent
// verified; its Pod mounts what the operator dials the cluster with and no member label.
func TestSnapshotFromAFollower(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "c", 3)
	waitFor(t, ns, "3 members Available", converged(t, ns, "c", 3))
	s3Creds(t, ns, goodKeys)
	newSnapshot(t, ns, "s1", "c", s3Dest())
	waitFor(t, ns, "Started", snapshotPhase(t, ns, "s1", v1alpha2.SnapshotStarted))
	pod := &corev1.Pod{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "s1-snapshot"}, pod); err != nil {
		t.Fatal(err)
	}
	env := envOf(pod)
	c := getCluster(t, ns, "c")
	leader := ""
	for _, m := range c.Status.Members {
		if m.Role == v1alpha2.MemberRoleLeader {
			leader = m.Name
		}
	}
	names := strings.Split(env[snapshot.EnvEtcdMemberNames], ",")
	switch {
	case len(names) != 3 || names[2] != leader:
		t.Errorf("members %v: want 3 with the leader %s last", names, leader)
	case env[snapshot.EnvS3Key] != "etcd/s1.db" || env[snapshot.EnvS3Bucket] != "backups" || env[snapshot.EnvSnapshotOwner] == "":
		t.Errorf("destination env %v", env)
	case pod.Labels[v1alpha2.LabelCluster] != "" || pod.Labels[v1alpha2.LabelAppName] != "":
		t.Errorf("agent Pod carries member labels %v", pod.Labels)
	case pod.Spec.Containers[0].Command[1] != snapshot.CommandSnapshotAgent || pod.Spec.Containers[0].Image != agentImage:
		t.Errorf("container %+v", pod.Spec.Containers[0])
	}
	finishAgent(t, ns, "s1-snapshot", snapshot.SnapshotResult{Phase: snapshot.PhaseComplete, URI: "s3://backups/etcd/s1.db", SizeBytes: 4096,
		Checksum: "sha256:abc", Member: names[0], MemberID: "0000000000000001", ClusterID: "00000000000000aa", Revision: 42,
		EtcdVersion: "3.6.16", StartTime: "2026-12-03T10:00:00Z", CompletionTime: "2026-12-03T10:00:02Z"}, 0)
	waitFor(t, ns, "Complete", snapshotPhase(t, ns, "s1", v1alpha2.SnapshotComplete))
	got := getSnapshot(t, ns, "s1").Status
	if got.Artifact == nil || got.Artifact.Checksum != "sha256:abc" || got.Revision != 42 || got.Member != names[0] ||
		got.Duration == nil || got.Duration.Seconds() != 2 || !meta.IsStatusConditionTrue(got.Conditions, v1alpha2.ConditionReady) {
		t.Errorf("status %+v", got)
	}
}

// Every way a snapshot cannot be taken ends Failed with its reason, and an agent that claims
// success without exiting cleanly is not believed.
func TestSnapshotFailures(t *testing.T) {
	ns := newNamespace(t)
	newCluster(t, ns, "c", 1)
	waitFor(t, ns, "Available", converged(t, ns, "c", 1))
	reason := func(name string) string {
		c := meta.FindStatusCondition(getSnapshot(t, ns, name).Status.Conditions, v1alpha2.ConditionReady)
		if c == nil {
			return ""
		}
		return c.Reason
	}
	newSnapshot(t, ns, "no-secret", "c", s3Dest())
	newSnapshot(t, ns, "no-cluster", "gone", s3Dest())
	newSnapshot(t, ns, "no-pvc", "c", v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "missing"}})
	for name, want := range map[string]string{"no-secret": v1alpha2.ReasonCredentialsMissing, "no-cluster": v1alpha2.ReasonClusterNotFound,
		"no-pvc": v1alpha2.ReasonDestinationInvalid} {
		waitFor(t, ns, name+" Failed", snapshotPhase(t, ns, name, v1alpha2.SnapshotFailed))
		if got := reason(name); got != want {
			t.Errorf("%s: reason %s, want %s", name, got, want)
		}
	}
	s3Creds(t, ns, goodKeys)
	sealed := s3Dest()
	sealed.Encryption = &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: "no-such-keys"}}
	newSnapshot(t, ns, "no-keys", "c", sealed)
	waitFor(t, ns, "no-keys Failed", snapshotPhase(t, ns, "no-keys", v1alpha2.SnapshotFailed))
	if got := reason("no-keys"); got != v1alpha2.ReasonEncryptionKeyMissing {
		t.Errorf("no-keys: reason %s, want %s", got, v1alpha2.ReasonEncryptionKeyMissing)
	}
	if n := len(events(t, ns, "no-keys", v1alpha2.ReasonEncryptionKeyMissing)); n == 0 {
		t.Error("no EncryptionKeyMissing Event on the snapshot")
	}
	if pod := (&corev1.Pod{}); k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "no-keys-snapshot"}, pod) == nil {
		t.Error("an agent Pod was created for a snapshot whose keys are missing")
	}
	newSnapshot(t, ns, "refused", "c", s3Dest())
	finishAgent(t, ns, "refused-snapshot", snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: snapshot.ReasonAccessDenied, Message: "403"}, 1)
	newSnapshot(t, ns, "liar", "c", s3Dest())
	finishAgent(t, ns, "liar-snapshot", snapshot.SnapshotResult{Phase: snapshot.PhaseComplete, URI: "s3://x/y", Checksum: "sha256:1"}, 2)
	newSnapshot(t, ns, "lost", "c", s3Dest())
	waitFor(t, ns, "lost Started", snapshotPhase(t, ns, "lost", v1alpha2.SnapshotStarted))
	if err := k8s.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lost-snapshot", Namespace: ns}},
		client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"refused": v1alpha2.ReasonAccessDenied, "liar": v1alpha2.ReasonSnapshotFailed,
		"lost": v1alpha2.ReasonAgentLost} {
		waitFor(t, ns, name+" Failed", snapshotPhase(t, ns, name, v1alpha2.SnapshotFailed))
		if got := reason(name); got != want {
			t.Errorf("%s: reason %s, want %s", name, got, want)
		}
	}
	if n := len(events(t, ns, "refused", v1alpha2.ReasonAccessDenied)); n == 0 {
		t.Error("no AccessDenied Event on the snapshot")
	}
}

// completeSnapshot takes a snapshot of a running cluster through the controller, playing its agent.
func completeSnapshot(t *testing.T, ns, name, cluster string) {
	t.Helper()
	newSnapshot(t, ns, name, cluster, s3Dest())
	finishAgent(t, ns, name+"-snapshot", snapshot.SnapshotResult{Phase: snapshot.PhaseComplete, URI: "s3://backups/etcd/" + name + ".db",
		SizeBytes: 8192, Checksum: "sha256:0123", Revision: 7}, 0)
	waitFor(t, ns, name+" Complete", snapshotPhase(t, ns, name, v1alpha2.SnapshotComplete))
}

func restoreCluster(t *testing.T, ns, name string, replicas int32, src v1alpha2.RestoreSource) {
	t.Helper()
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdClusterSpec{Replicas: &replicas, Version: "3.6.16",
			Bootstrap: &v1alpha2.BootstrapSpec{Restore: &v1alpha2.RestoreSpec{Source: src}}}}
	create(t, c)
}

func degraded(t *testing.T, ns, name, reason string) func() bool {
	return func() bool {
		d := meta.FindStatusCondition(getCluster(t, ns, name).Status.Conditions, v1alpha2.ConditionDegraded)
		return d != nil && d.Status == metav1.ConditionTrue && d.Reason == reason
	}
}

// A cluster restored from an EtcdSnapshot: nothing is created until the snapshot is Complete,
// the seed restores it (with its checksum) in init containers that run only before the cluster
// forms, a failed restore is reported and starts nothing, and the seed is not restarted when the
// init containers leave its template.
func TestRestoreFromSnapshotRef(t *testing.T) {
	ns := newNamespace(t)
	s3Creds(t, ns, goodKeys)
	restoreCluster(t, ns, "dst", 3, v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s1"}})
	waitFor(t, ns, "RestoreSourceInvalid", degraded(t, ns, "dst", v1alpha2.ReasonRestoreSourceInvalid))
	if n := len(members(t, ns, "dst")); n != 0 {
		t.Fatalf("%d members created before the snapshot exists", n)
	}
	newCluster(t, ns, "src", 1)
	waitFor(t, ns, "src Available", converged(t, ns, "src", 1))
	completeSnapshot(t, ns, "s1", "src")

	waitFor(t, ns, "a seed", func() bool { return len(members(t, ns, "dst")) == 1 })
	seed := members(t, ns, "dst")[0]
	if r := seed.Spec.Restore; r == nil || r.Checksum != "sha256:0123" || r.Source.S3 == nil || r.Source.S3.Key != "etcd/s1.db" {
		t.Fatalf("seed restore %+v", seed.Spec.Restore)
	}
	var p *corev1.Pod
	waitFor(t, ns, "the seed's Pod", func() bool { p = pod(t, ns, seed.Name); return p != nil })
	if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[0].Image != agentImage ||
		p.Spec.InitContainers[1].Image != "quay.io/coreos/etcd:v3.6.16" {
		t.Fatalf("init containers %+v", p.Spec.InitContainers)
	}
	// A failure the source can recover from (its keys, fixed meanwhile) is retried by the same Pod.
	failRestore(t, ns, seed.Name, `{"phase":"Failed","reason":"AccessDenied","message":"403"}`)
	waitFor(t, ns, "Degraded=AccessDenied", degraded(t, ns, "dst", v1alpha2.ReasonAccessDenied))
	waitFor(t, ns, "an AccessDenied Event on the cluster", func() bool {
		return len(events(t, ns, "dst", v1alpha2.ReasonAccessDenied)) > 0
	})
	uid := p.UID
	finishRestore(t, ns, seed.Name)
	waitFor(t, ns, "3 members Available", converged(t, ns, "dst", 3))
	if got := pod(t, ns, seed.Name); got == nil || got.UID != uid {
		t.Error("the seed's Pod was replaced after the restore: its init containers count as its template")
	}
}

// A restore that can never succeed from its source (here a checksum mismatch) is not retried in
// a crash loop: the seed's Pod is deleted and not recreated, the cluster says why; removing the
// member's refusal annotation tries again with a new Pod.
func TestRestoreRefusedForGoodStops(t *testing.T) {
	ns := newNamespace(t)
	s3Creds(t, ns, goodKeys)
	newCluster(t, ns, "src", 1)
	waitFor(t, ns, "src Available", converged(t, ns, "src", 1))
	completeSnapshot(t, ns, "s1", "src")
	restoreCluster(t, ns, "dst", 3, v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s1"}})
	waitFor(t, ns, "a seed", func() bool { return len(members(t, ns, "dst")) == 1 })
	seed := members(t, ns, "dst")[0]
	var first *corev1.Pod
	waitFor(t, ns, "the seed's Pod", func() bool { first = pod(t, ns, seed.Name); return first != nil })
	failRestore(t, ns, seed.Name, `{"phase":"Failed","reason":"ChecksumMismatch","message":"sha256 differs"}`)
	waitFor(t, ns, "the Pod deleted and the refusal recorded", func() bool {
		m := members(t, ns, "dst")[0]
		_, refused := m.Annotations[v1alpha2.AnnotationRestoreRefused]
		return refused && pod(t, ns, seed.Name) == nil
	})
	waitFor(t, ns, "Degraded=ChecksumMismatch", degraded(t, ns, "dst", v1alpha2.ReasonChecksumMismatch))
	if d := meta.FindStatusCondition(getCluster(t, ns, "dst").Status.Conditions, v1alpha2.ConditionDegraded); !strings.Contains(d.Message, "refused for good") {
		t.Errorf("Degraded %q does not say the restore is refused for good", d.Message)
	}
	if n := len(events(t, ns, seed.Name, v1alpha2.ReasonChecksumMismatch)); n == 0 {
		t.Error("no ChecksumMismatch Event on the seed")
	}
	waitFor(t, ns, "a ChecksumMismatch Event on the cluster", func() bool {
		return len(events(t, ns, "dst", v1alpha2.ReasonChecksumMismatch)) > 0
	})
	// The Pod's deletion woke the member again before the cluster reported it: the Pod stays gone.
	if p := pod(t, ns, seed.Name); p != nil {
		t.Fatalf("Pod %s recreated for a restore refused for good", p.Name)
	}
	m := members(t, ns, "dst")[0]
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, v1alpha2.AnnotationRestoreRefused)
	if err := k8s.Patch(context.Background(), &m, patch); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ns, "a new Pod once the refusal is removed", func() bool {
		p := pod(t, ns, seed.Name)
		return p != nil && p.UID != first.UID
	})
}

func failRestore(t *testing.T, ns, podName, message string) {
	t.Helper()
	waitFor(t, ns, "restore failure recorded", func() bool {
		p := pod(t, ns, podName)
		if p == nil {
			return false
		}
		p.Status.Phase = corev1.PodPending
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha2.RestoreContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: message}}}}
		return k8s.Status().Update(context.Background(), p) == nil
	})
}

// finishRestore plays the kubelet once the restore succeeded: init containers done, etcd Ready.
func finishRestore(t *testing.T, ns, podName string) {
	t.Helper()
	waitFor(t, ns, "restore done", func() bool {
		p := pod(t, ns, podName)
		if p == nil {
			return false
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: v1alpha2.RestoreContainer,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: `{"phase":"Restored","revision":7}`}}}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Ready: true}}
		return k8s.Status().Update(context.Background(), p) == nil
	})
}
