package snapshot

import (
	"bytes"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// List keeps the cluster's snapshots only, newest first, a phaseless one as Pending.
func TestList(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	mk := func(name, cluster string, at time.Time, phase v1alpha2.SnapshotPhase) v1alpha2.EtcdSnapshot {
		s := v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Time{Time: at}},
			Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}}, Status: v1alpha2.EtcdSnapshotStatus{Phase: phase}}
		if phase == v1alpha2.SnapshotComplete {
			s.Status.Artifact = &v1alpha2.SnapshotArtifact{URI: "pvc://b/etcd/" + name + ".db", SizeBytes: 2048, Checksum: "sha256:ab"}
			s.Status.CompletionTime = &metav1.Time{Time: at.Add(time.Second)}
			s.Status.Member, s.Status.Revision = "demo-b", 42
		}
		return s
	}
	ls := List("demo", []v1alpha2.EtcdSnapshot{
		mk("old", "demo", t0, v1alpha2.SnapshotComplete),
		mk("other", "else", t0.Add(time.Hour), v1alpha2.SnapshotComplete),
		mk("new", "demo", t0.Add(2*time.Hour), ""),
		mk("mid", "demo", t0.Add(time.Hour), v1alpha2.SnapshotFailed),
	})
	var out bytes.Buffer
	ListTable(&out, ls, t0.Add(3*time.Hour))
	want := "NAME\tPHASE\tMEMBER\tREVISION\tSIZE\tCHECKSUM\tURI\tAGE\n" +
		"new\tPending\t-\t0\t0 B\t-\t-\t60m\n" +
		"mid\tFailed\t-\t0\t0 B\t-\t-\t120m\n" +
		"old\tComplete\tdemo-b\t42\t2.0 KiB\tsha256:ab\tpvc://b/etcd/old.db\t3h\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	if ls[2].Completed == nil || !ls[2].Completed.Equal(t0.Add(time.Second)) {
		t.Fatalf("completion time %v", ls[2].Completed)
	}
}
