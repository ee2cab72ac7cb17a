package etcdsnapshot

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func TestParseResult(t *testing.T) {
	ok := `{"phase":"Complete","uri":"s3://b/k.db","sizeBytes":10,"checksum":"sha256:aa"}`
	cases := []struct {
		name    string
		message string
		exit    int32
		phase   snapshot.Phase
		reason  snapshot.Reason
	}{
		{"success", ok, 0, snapshot.PhaseComplete, ""},
		{"success claimed, exit non-zero", ok, 2, snapshot.PhaseFailed, snapshot.ReasonFailed},
		{"reported failure", `{"phase":"Failed","reason":"AccessDenied","message":"403"}`, 1, snapshot.PhaseFailed, snapshot.ReasonAccessDenied},
		{"no result line (a crash, log tail)", "panic: oops", 2, snapshot.PhaseFailed, snapshot.ReasonFailed},
		{"empty", "", 137, snapshot.PhaseFailed, snapshot.ReasonFailed},
		{"truncated line", `{"phase":"Comp`, 0, snapshot.PhaseFailed, snapshot.ReasonFailed},
	}
	for _, tc := range cases {
		got := ParseResult(tc.message, tc.exit)
		if got.Phase != tc.phase || got.Reason != tc.reason {
			t.Errorf("%s: %+v, want %s/%s", tc.name, got, tc.phase, tc.reason)
		}
	}
}

func TestApplyComplete(t *testing.T) {
	var st v1alpha2.EtcdSnapshotStatus
	ApplyComplete(&st, snapshot.SnapshotResult{Phase: snapshot.PhaseComplete, URI: "s3://b/k.db", SizeBytes: 5, Checksum: "sha256:aa",
		Member: "m", Revision: 9, StartTime: "2026-12-03T10:00:00.25Z", CompletionTime: "2026-12-03T10:00:01.5Z"}, nil, time.Now())
	if st.Phase != v1alpha2.SnapshotComplete || st.Artifact.URI != "s3://b/k.db" || st.Revision != 9 || st.Duration.Duration != 1250*time.Millisecond {
		t.Errorf("status %+v, duration %v", st, st.Duration)
	}
	if st.Artifact.Encryption != nil || st.Artifact.Compression != "" {
		t.Errorf("a plain artifact recorded as %+v", st.Artifact)
	}
	// An encrypted one records how it was stored and with whose keys, for the restore to read it.
	enc := &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: "backup-keys"}}
	ApplyComplete(&st, snapshot.SnapshotResult{Phase: snapshot.PhaseComplete, URI: "s3://b/k.db.zst.age", SizeBytes: 5, Checksum: "sha256:aa",
		Compression: string(v1alpha2.CompressionZstd), Recipients: []string{"age1xyz"}}, enc, time.Now())
	want := &v1alpha2.ArtifactEncryption{SecretName: "backup-keys", Recipients: []string{"age1xyz"}}
	if st.Artifact.Compression != v1alpha2.CompressionZstd || !reflect.DeepEqual(st.Artifact.Encryption, want) {
		t.Errorf("an encrypted artifact recorded as %+v, encryption %+v", st.Artifact, st.Artifact.Encryption)
	}
}

// The agent streams from ready voting followers first and the leader last; a cluster that has
// not formed, is not Available, or is still turning auth on is waited for.
func TestAgentSourceOf(t *testing.T) {
	member := func(name string) v1alpha2.EtcdMember {
		return v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: v1alpha2.EtcdMemberSpec{ClusterName: "c", InitialCluster: name + "=http://" + name + ".c.ns.svc:2380"}}
	}
	members := []v1alpha2.EtcdMember{member("c-a"), member("c-b"), member("c-c"), member("c-d")}
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}, Status: v1alpha2.EtcdClusterStatus{
		ClusterID: "1", Conditions: []metav1.Condition{{Type: v1alpha2.ConditionAvailable, Status: metav1.ConditionTrue}},
		Members: []v1alpha2.ClusterMemberStatus{{Name: "c-a", Role: v1alpha2.MemberRoleLeader, Ready: true},
			{Name: "c-b", Role: v1alpha2.MemberRoleFollower, Ready: true}, {Name: "c-c", Role: v1alpha2.MemberRoleLearner, Ready: true},
			{Name: "c-d", Role: v1alpha2.MemberRoleFollower, Ready: false}}}}
	src, wait := AgentSourceOf(c, members)
	if wait != "" || len(src.Members) != 2 || src.Members[0].Name != "c-b" || src.Members[1].Name != "c-a" || src.TLS || src.Auth {
		t.Errorf("source %+v, wait %q: want c-b then the leader c-a, plaintext", src, wait)
	}
	unformed := c.DeepCopy()
	unformed.Status.ClusterID = ""
	if _, wait := AgentSourceOf(unformed, members); wait == "" {
		t.Error("an unformed cluster is not waited for")
	}
	authing := c.DeepCopy()
	authing.Spec.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: "r"}}
	if _, wait := AgentSourceOf(authing, members); wait == "" {
		t.Error("auth being enabled is not waited for: the agent would dial anonymously")
	}
}

// Only a snapshot whose agent may have written gets a cleanup agent when it is deleted.
func TestStored(t *testing.T) {
	failed := func(reason string) *v1alpha2.EtcdSnapshot {
		return &v1alpha2.EtcdSnapshot{Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotFailed,
			Conditions: []metav1.Condition{{Type: v1alpha2.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}}}
	}
	for _, tc := range []struct {
		name string
		s    *v1alpha2.EtcdSnapshot
		want bool
	}{
		{"Complete", &v1alpha2.EtcdSnapshot{Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete}}, true},
		{"Started", &v1alpha2.EtcdSnapshot{Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotStarted}}, true},
		{"Pending", &v1alpha2.EtcdSnapshot{Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotPending}}, false},
		{"superseded", failed(v1alpha2.ReasonSuperseded), true},
		{"past the deadline", failed(v1alpha2.ReasonDeadlineExceeded), true},
		{"agent lost", failed(v1alpha2.ReasonAgentLost), true},
		{"read back wrong", failed(v1alpha2.ReasonChecksumMismatch), true},
		{"store unreachable", failed(v1alpha2.ReasonEndpointUnreachable), false},
		{"keys refused", failed(v1alpha2.ReasonAccessDenied), false},
		{"cluster not ready", failed(v1alpha2.ReasonClusterNotReady), false},
	} {
		if got := stored(tc.s); got != tc.want {
			t.Errorf("%s: stored = %v, want %v", tc.name, got, tc.want)
		}
	}
}
