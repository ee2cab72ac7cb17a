package v1alpha2_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func s3Dest() v1.SnapshotLocation {
	return v1.SnapshotLocation{S3: &v1.S3Location{Endpoint: "https://s3", Bucket: "b", Key: "k",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}
}

// An EtcdSnapshot written for the public operator applies unchanged and gets this operator's
// defaults; its spec cannot change afterwards.
func TestSnapshotManifestAndImmutability(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	manifest := `
apiVersion: etcd-operator.cozystack.io/v1alpha2
kind: EtcdSnapshot
metadata: {name: nightly}
spec:
  clusterRef: {name: etcd}
  destination:
    s3:
      endpoint: https://s3.example.com
      bucket: backups
      key: tenants/a
      region: us-east-1
      forcePathStyle: true
      credentialsSecretRef: {name: s3-creds}
`
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetNamespace(ns)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("a public-operator EtcdSnapshot was rejected: %v", err)
	}
	s := &v1.EtcdSnapshot{}
	if err := env.Client.Get(ctx, objKey(ns, "nightly"), s); err != nil {
		t.Fatal(err)
	}
	if s.Spec.DeletionPolicy != v1.SnapshotRetain {
		t.Errorf("deletionPolicy defaults to %q, want Retain", s.Spec.DeletionPolicy)
	}
	s.Spec.Destination.S3.Key = "elsewhere"
	expectRejected(t, env.Client.Update(ctx, s), v1.MsgSnapshotSpecImmutable)
	both := &v1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"}, Spec: v1.EtcdSnapshotSpec{
		ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: v1.SnapshotLocation{S3: s3Dest().S3, PVC: &v1.PVCLocation{ClaimName: "p"}}}}
	expectRejected(t, env.Client.Create(ctx, both), v1.MsgSnapshotLocation)
	noCluster := &v1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nocluster"}, Spec: v1.EtcdSnapshotSpec{Destination: s3Dest()}}
	expectRejected(t, env.Client.Create(ctx, noCluster), v1.MsgSnapshotClusterRef)
}

// A restore source is exactly one of s3, pvc or snapshotRef.
func TestRestoreSourceIsOneOf(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	ref := &corev1.LocalObjectReference{Name: "snap"}
	ok := cluster(ns, "by-ref", func(s *v1.EtcdClusterSpec) {
		s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{SnapshotRef: ref}}}
	})
	if err := env.Client.Create(ctx, ok); err != nil {
		t.Fatalf("snapshotRef source rejected: %v", err)
	}
	two := cluster(ns, "two", func(s *v1.EtcdClusterSpec) {
		s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{SnapshotRef: ref, S3: s3Dest().S3}}}
	})
	expectRejected(t, env.Client.Create(ctx, two), v1.MsgRestoreSource)
	none := cluster(ns, "none", func(s *v1.EtcdClusterSpec) { s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{}} })
	expectRejected(t, env.Client.Create(ctx, none), v1.MsgRestoreSource)
}

// A rollback from a raw location must say where its safety snapshot goes; its spec is immutable.
func TestRestoreValidation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	raw := &v1.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"}, Spec: v1.EtcdRestoreSpec{
		ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Source: v1.RestoreSource{S3: s3Dest().S3}}}
	expectRejected(t, env.Client.Create(ctx, raw), v1.MsgRestoreSafetySnapshot)
	raw.Spec.SafetySnapshot = &v1.SafetySnapshot{Destination: s3Dest()}
	raw.Spec.Source.S3 = &v1.S3Location{Endpoint: "https://s3", Bucket: "b", CredentialsSecretRef: corev1.LocalObjectReference{Name: "c"}}
	expectRejected(t, env.Client.Create(ctx, raw), v1.MsgRollbackS3Key)
	byRef := &v1.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-ref"}, Spec: v1.EtcdRestoreSpec{
		ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Source: v1.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s"}}}}
	if err := env.Client.Create(ctx, byRef); err != nil {
		t.Fatalf("a rollback by snapshotRef without safetySnapshot was rejected: %v", err)
	}
	byRef.Spec.Source.SnapshotRef.Name = "other"
	expectRejected(t, env.Client.Update(ctx, byRef), v1.MsgRestoreSpecImmutable)
}

// A schedule needs its cluster; retention and policy get their defaults.
func TestScheduleDefaults(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	bs := &v1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s"}, Spec: v1.EtcdBackupScheduleSpec{
		ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "@hourly",
		SnapshotTemplate: v1.SnapshotTemplate{Destination: s3Dest()}}}
	if err := env.Client.Create(ctx, bs); err != nil {
		t.Fatal(err)
	}
	got := &v1.EtcdBackupSchedule{}
	if err := env.Client.Get(ctx, objKey(ns, "s"), got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.ConcurrencyPolicy != v1.ConcurrencyForbid || got.Spec.SnapshotTemplate.DeletionPolicy != v1.SnapshotDelete ||
		got.Spec.Retention.KeepLast == nil || *got.Spec.Retention.KeepLast != 3 {
		t.Errorf("defaults %+v", got.Spec)
	}
	noCluster := &v1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}, Spec: v1.EtcdBackupScheduleSpec{
		Schedule: "@hourly", SnapshotTemplate: v1.SnapshotTemplate{Destination: s3Dest()}}}
	expectRejected(t, env.Client.Create(ctx, noCluster), v1.MsgScheduleClusterRef)
}

// Names that would not fit the labels and names derived from them, and a negative maximum age,
// are refused where they are written, not by a Create that fails later.
func TestBackupNamesAndMaxAge(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	long := func(n int) string { return strings.Repeat("a", n) }
	schedule := func(name string, maxAge *metav1.Duration) *v1.EtcdBackupSchedule {
		return &v1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.EtcdBackupScheduleSpec{
			ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Schedule: "@hourly",
			SnapshotTemplate: v1.SnapshotTemplate{Destination: s3Dest()}, Retention: v1.BackupRetention{MaxAge: maxAge}}}
	}
	if err := env.Client.Create(ctx, schedule(long(54), &metav1.Duration{Duration: time.Hour})); err != nil {
		t.Fatalf("a 54-character schedule with maxAge 1h was rejected: %v", err)
	}
	expectRejected(t, env.Client.Create(ctx, schedule(long(55), nil)), v1.MsgScheduleNameLength)
	expectRejected(t, env.Client.Create(ctx, schedule("negative", &metav1.Duration{Duration: -time.Hour})), v1.MsgRetentionMaxAge)
	snap := &v1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: long(64)},
		Spec: v1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: s3Dest()}}
	expectRejected(t, env.Client.Create(ctx, snap), v1.MsgSnapshotNameLength)
	er := &v1.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: long(57)}, Spec: v1.EtcdRestoreSpec{
		ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Source: v1.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "s"}}}}
	expectRejected(t, env.Client.Create(ctx, er), v1.MsgRestoreNameLength)
}

func objKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// Encryption: a destination's names its Secret (compression is an enum); a restore source
// carries one only when it is a raw location, as an EtcdSnapshot records its own.
func TestEncryptionValidation(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	keys := &v1.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: "age-keys"}}
	snap := func(name string, edit func(*v1.SnapshotLocation)) *v1.EtcdSnapshot {
		d := s3Dest()
		edit(&d)
		return &v1.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "etcd"}, Destination: d}}
	}
	if err := env.Client.Create(ctx, snap("sealed", func(d *v1.SnapshotLocation) { d.Encryption = keys })); err != nil {
		t.Fatalf("an encrypted destination was rejected: %v", err)
	}
	expectRejected(t, env.Client.Create(ctx, snap("nameless", func(d *v1.SnapshotLocation) {
		d.Encryption = &v1.SnapshotEncryption{}
	})), v1.MsgEncryptionSecretRef)
	if err := env.Client.Create(ctx, snap("gzip", func(d *v1.SnapshotLocation) { d.Compression = "Gzip" })); err == nil ||
		!strings.Contains(err.Error(), "Unsupported value") {
		t.Errorf("compression Gzip: %v", err)
	}
	raw := cluster(ns, "raw", func(s *v1.EtcdClusterSpec) {
		s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
			S3:         &v1.S3Location{Endpoint: "https://s3", Bucket: "b", Key: "k/x.db.zst.age", CredentialsSecretRef: corev1.LocalObjectReference{Name: "c"}},
			Encryption: keys}}}
	})
	if err := env.Client.Create(ctx, raw); err != nil {
		t.Fatalf("an encrypted raw source was rejected: %v", err)
	}
	byRef := cluster(ns, "by-ref", func(s *v1.EtcdClusterSpec) {
		s.Bootstrap = &v1.BootstrapSpec{Restore: &v1.RestoreSpec{Source: v1.RestoreSource{
			SnapshotRef: &corev1.LocalObjectReference{Name: "sealed"}, Encryption: keys}}}
	})
	expectRejected(t, env.Client.Create(ctx, byRef), v1.MsgRestoreEncryptionRef)
}
