package etcdrestore

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestGoesFirst(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	now := metav1.Now()
	restore := func(name, cluster string, created metav1.Time, phase v1alpha2.RestorePhase) *v1alpha2.EtcdRestore {
		return &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created},
			Spec: v1alpha2.EtcdRestoreSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}}, Status: v1alpha2.EtcdRestoreStatus{Phase: phase}}
	}
	me := restore("b", "db", t1, v1alpha2.RestorePending)
	deleting := restore("a", "db", t0, v1alpha2.RestorePending)
	deleting.DeletionTimestamp = &now
	for _, tc := range []struct {
		name  string
		other *v1alpha2.EtcdRestore
		want  bool
	}{
		{"itself", me, false},
		{"another cluster's", restore("a", "other", t0, v1alpha2.RestoreRestoring), false},
		{"one that has begun, created later", restore("c", "db", metav1.NewTime(t1.Add(time.Minute)), v1alpha2.RestoreSafetySnapshot), true},
		{"one restoring", restore("c", "db", t1, v1alpha2.RestoreRestoring), true},
		{"a finished one", restore("a", "db", t0, v1alpha2.RestoreComplete), false},
		{"a failed one", restore("a", "db", t0, v1alpha2.RestoreFailed), false},
		{"an older pending one", restore("c", "db", t0, v1alpha2.RestorePending), true},
		{"an older one not yet seen", restore("c", "db", t0, ""), true},
		{"a younger pending one", restore("a", "db", metav1.NewTime(t1.Add(time.Second)), v1alpha2.RestorePending), false},
		{"a pending one of the same second, name first", restore("a", "db", t1, v1alpha2.RestorePending), true},
		{"a pending one of the same second, name after", restore("c", "db", t1, ""), false},
		{"an older one being deleted", deleting, false},
	} {
		if got := goesFirst(tc.other, me); got != tc.want {
			t.Errorf("%s: goesFirst = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNewerThanCluster(t *testing.T) {
	cluster := func(v string) *v1alpha2.EtcdCluster {
		return &v1alpha2.EtcdCluster{Spec: v1alpha2.EtcdClusterSpec{Version: v}}
	}
	snap := func(v string) *v1alpha2.EtcdSnapshot {
		return &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Status: v1alpha2.EtcdSnapshotStatus{EtcdVersion: v}}
	}
	for _, tc := range []struct {
		snap    *v1alpha2.EtcdSnapshot
		cluster string
		refused bool
	}{
		{snap("3.6.16"), "3.5.35", true},
		{snap("3.7.3"), "3.6.16", true},
		{snap("3.6.16"), "3.6.1", false}, // patch releases share the data format
		{snap("3.5.35"), "3.6.16", false},
		{snap(""), "3.5.35", false}, // unknown: the seed's restore checks the file
		{nil, "3.5.35", false},      // a raw source
	} {
		got := newerThanCluster(tc.snap, cluster(tc.cluster))
		if (got != "") != tc.refused {
			t.Errorf("snapshot %+v into %s: %q, want refused=%v", tc.snap, tc.cluster, got, tc.refused)
		}
	}
}
