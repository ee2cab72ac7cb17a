//go:build e2e

package backup

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// testSchedule: a schedule every minute keeping three. After five runs there are exactly three
// EtcdSnapshots and exactly three objects in the bucket, each matching its recorded sha256.
func (e *env) testSchedule(t *testing.T) {
	const prefix = "scheduled"
	bs := &v1alpha2.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: "every-minute", Namespace: e.ns},
		Spec: v1alpha2.EtcdBackupScheduleSpec{ClusterRef: corev1.LocalObjectReference{Name: e.src.name}, Schedule: "* * * * *",
			SnapshotTemplate: v1alpha2.SnapshotTemplate{Destination: v1alpha2.SnapshotLocation{S3: s3Location(e.store, prefix)}},
			Retention:        v1alpha2.BackupRetention{KeepLast: ptr.To[int32](3)}},
	}
	if err := e.c.Client.Create(context.Background(), bs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	start := time.Now()
	e2eutil.WaitFor(t, 9*time.Minute, "five scheduled runs Complete and retention applied", func() bool {
		snaps := e.scheduled(t, bs.Name)
		for _, s := range snaps {
			if s.Status.Phase == v1alpha2.SnapshotFailed {
				reason, msg := readyReason(s.Status.Conditions)
				t.Fatalf("scheduled snapshot %s failed: %s: %s", s.Name, reason, msg)
			}
			if s.Status.Phase == v1alpha2.SnapshotComplete {
				seen[s.Name] = true
			}
		}
		return len(seen) >= 5 && len(snaps) == 3 && allComplete(snaps) && len(objects(t, e.store, prefix+"/")) == 3
	})
	took := time.Since(start)
	suspend(t, e, bs)
	snaps := e.scheduled(t, bs.Name)
	keys := objects(t, e.store, prefix+"/")
	var want []string
	for _, s := range snaps {
		want = append(want, keyOf(s.Status.Artifact.URI))
		if _, sum := download(t, e.store, keyOf(s.Status.Artifact.URI)); sum != s.Status.Artifact.Checksum {
			t.Errorf("%s: object sha256 %s, recorded %s", s.Name, sum, s.Status.Artifact.Checksum)
		}
	}
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("bucket holds %v, the EtcdSnapshots name %v", keys, want)
	}
	st := getSchedule(t, e, bs.Name).Status
	t.Logf("%d runs seen in %s; kept %v; last success %v", len(seen), took.Round(time.Second), want, st.LastSuccessfulTime)
	e.checkSnapshotMetrics(t, snaps)
}

// checkSnapshotMetrics: the operator binary's metrics endpoint reports the cluster's newest
// Complete snapshot (its completion time and size) and its members.
func (e *env) checkSnapshotMetrics(t *testing.T, snaps []v1alpha2.EtcdSnapshot) {
	t.Helper()
	newest := snaps[0]
	for _, s := range e.scheduled(t, "every-minute") {
		if s.Status.CompletionTime != nil && s.Status.CompletionTime.After(newest.Status.CompletionTime.Time) {
			newest = s
		}
	}
	labels := map[string]string{"namespace": e.ns, "cluster": e.src.name}
	e2eutil.WaitNoError(t, time.Minute, "the snapshot metrics", func() error {
		families, err := e.op.Metrics(context.Background())
		if err != nil {
			return err
		}
		at, ok := e2eutil.Gauge(families, "etcd_operator_cluster_last_snapshot_timestamp_seconds", labels)
		size, _ := e2eutil.Gauge(families, "etcd_operator_cluster_last_snapshot_size_bytes", labels)
		voting, _ := e2eutil.Gauge(families, "etcd_operator_cluster_members", map[string]string{"namespace": e.ns, "cluster": e.src.name, "state": "voting"})
		switch {
		case !ok || int64(at) < newest.Status.CompletionTime.Unix():
			return fmt.Errorf("last snapshot time %v (present %v), want at least %s's %d", at, ok, newest.Name, newest.Status.CompletionTime.Unix())
		case size <= 0:
			return fmt.Errorf("last snapshot size %v", size)
		case voting != 3:
			return fmt.Errorf("%v voting members reported, want 3", voting)
		}
		return nil
	})
}

func (e *env) scheduled(t *testing.T, schedule string) []v1alpha2.EtcdSnapshot {
	t.Helper()
	var list v1alpha2.EtcdSnapshotList
	if err := e.c.Client.List(context.Background(), &list, client.InNamespace(e.ns),
		client.MatchingLabels{v1alpha2.LabelBackupSchedule: schedule}); err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(list.Items, func(s v1alpha2.EtcdSnapshot) bool { return !s.DeletionTimestamp.IsZero() })
}

func allComplete(snaps []v1alpha2.EtcdSnapshot) bool {
	for _, s := range snaps {
		if s.Status.Phase != v1alpha2.SnapshotComplete {
			return false
		}
	}
	return true
}

func getSchedule(t *testing.T, e *env, name string) *v1alpha2.EtcdBackupSchedule {
	t.Helper()
	bs := &v1alpha2.EtcdBackupSchedule{}
	if err := e.c.Client.Get(context.Background(), client.ObjectKey{Namespace: e.ns, Name: name}, bs); err != nil {
		t.Fatal(err)
	}
	return bs
}

// suspend stops the schedule so its runs do not overlap what the other scenarios measure.
func suspend(t *testing.T, e *env, bs *v1alpha2.EtcdBackupSchedule) {
	t.Helper()
	got := getSchedule(t, e, bs.Name)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Suspend = true
	if err := e.c.Client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
}
