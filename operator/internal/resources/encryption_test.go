package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// keysOf says how a container gets the encryption Secret: its mount path, the volume's Secret,
// and whether any environment variable carries it (never: env shows in describe and dumps).
func keysOf(t *testing.T, spec corev1.PodSpec, ctr corev1.Container) (dir, secret string) {
	t.Helper()
	for _, e := range ctr.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "age-keys" {
			t.Errorf("environment %s carries the encryption Secret", e.Name)
		}
		if e.Name == snapshot.EnvEncryptionKeyDir {
			dir = e.Value
		}
	}
	for _, m := range ctr.VolumeMounts {
		if m.Name == encryptionKeysVolumeName && (m.MountPath != dir || !m.ReadOnly) {
			t.Errorf("keys mounted at %s (read-only %v), %s says %s", m.MountPath, m.ReadOnly, snapshot.EnvEncryptionKeyDir, dir)
		}
	}
	for _, v := range spec.Volumes {
		if v.Name == encryptionKeysVolumeName && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	return dir, secret
}

func envValue(ctr corev1.Container, name string) string {
	for _, e := range ctr.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The snapshot agent gets the keys and the compression; the artifact's name says both. A
// destination without encryption is what it was: a plain <name>.db, no keys, no compression.
func TestSnapshotAgentPodEncryption(t *testing.T) {
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	s3 := &v1alpha2.S3Location{Endpoint: "http://s3", Bucket: "b", Key: "c", CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}
	enc := &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: "age-keys"}}
	for _, tc := range []struct {
		name                    string
		dest                    v1alpha2.SnapshotLocation
		wantKey, wantCompress   string
		wantKeySecret, wantFile string
	}{
		{"plain", v1alpha2.SnapshotLocation{S3: s3}, "c/nightly.db", "", "", ""},
		{"compressed", v1alpha2.SnapshotLocation{S3: s3, Compression: v1alpha2.CompressionZstd}, "c/nightly.db.zst", "Zstd", "", ""},
		{"encrypted: zstd by default", v1alpha2.SnapshotLocation{S3: s3, Encryption: enc}, "c/nightly.db.zst.age", "Zstd", "age-keys", ""},
		{"encrypted, not compressed", v1alpha2.SnapshotLocation{S3: s3, Encryption: enc, Compression: v1alpha2.CompressionNone},
			"c/nightly.db.age", "", "age-keys", ""},
		{"encrypted on a claim", v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "backups", SubPath: "db"}, Encryption: enc},
			"", "Zstd", "age-keys", "nightly.db.zst.age"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", UID: "u"},
				Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "db"}, Destination: tc.dest}}
			pod := SnapshotAgentPod(s, c, AgentSource{Members: []v1alpha2.EtcdMember{{ObjectMeta: metav1.ObjectMeta{Name: "db-a", Namespace: "ns"}}}}, "op:1")
			ctr := pod.Spec.Containers[0]
			if got := envValue(ctr, snapshot.EnvS3Key); got != tc.wantKey {
				t.Errorf("S3 key %q, want %q", got, tc.wantKey)
			}
			if got := envValue(ctr, snapshot.EnvPVCFile); got != tc.wantFile {
				t.Errorf("file %q, want %q", got, tc.wantFile)
			}
			if got := envValue(ctr, snapshot.EnvSnapshotCompression); got != tc.wantCompress {
				t.Errorf("compression %q, want %q", got, tc.wantCompress)
			}
			dir, secret := keysOf(t, pod.Spec, ctr)
			if secret != tc.wantKeySecret || (secret == "") != (dir == "") {
				t.Errorf("keys from Secret %q at %q, want Secret %q", secret, dir, tc.wantKeySecret)
			}
			cleanup := SnapshotCleanupPod(s, c, "op:1")
			if dir, secret := keysOf(t, cleanup.Spec, cleanup.Spec.Containers[0]); dir != "" || secret != "" {
				t.Errorf("the cleanup Pod, which only deletes, mounts the keys")
			}
		})
	}
}

// A restore of an encrypted EtcdSnapshot reads the name it was stored under, with the Secret it
// recorded: in the seed's restore container and in a rollback's verify Pod.
func TestRestoreOfEncryptedSnapshot(t *testing.T) {
	enc := &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: "age-keys"}}
	snap := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns"},
		Spec: v1alpha2.EtcdSnapshotSpec{Destination: v1alpha2.SnapshotLocation{
			S3: &v1alpha2.S3Location{Endpoint: "http://s3", Bucket: "b", Key: "c"}, Encryption: enc}},
		Status: v1alpha2.EtcdSnapshotStatus{Phase: v1alpha2.SnapshotComplete, Artifact: &v1alpha2.SnapshotArtifact{
			URI: "s3://b/c/nightly.db.zst.age", Checksum: "sha256:ab", Compression: v1alpha2.CompressionZstd,
			Encryption: &v1alpha2.ArtifactEncryption{SecretName: "age-keys"}}}}
	mr, err := MemberRestoreOf(v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: "nightly"}}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Source.S3.Key != "c/nightly.db.zst.age" || mr.Source.Encryption == nil || mr.Source.Encryption.SecretRef.Name != "age-keys" {
		t.Fatalf("restore source %+v, encryption %+v", mr.Source.S3, mr.Source.Encryption)
	}
	raw, _ := MemberRestoreOf(v1alpha2.RestoreSource{PVC: &v1alpha2.PVCLocation{ClaimName: "b", SubPath: "x.db.age"}, Encryption: enc}, nil)
	if raw.Source.Encryption == nil {
		t.Error("a raw source's encryption was dropped")
	}

	er := &v1alpha2.EtcdRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "ns"}}
	c := &v1alpha2.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	verify := RestoreVerifyPod(er, c, mr, "op:1")
	if dir, secret := keysOf(t, verify.Spec, verify.Spec.Containers[0]); secret != "age-keys" || dir == "" {
		t.Errorf("verify Pod: keys from %q at %q", secret, dir)
	}

	m := &v1alpha2.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: "db-a", Namespace: "ns"},
		Spec: v1alpha2.EtcdMemberSpec{ClusterName: "db", Bootstrap: true, Version: "3.6.16", Restore: mr}}
	pod := restoringPod(t, m)
	var restore *corev1.Container
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == v1alpha2.RestoreContainer {
			restore = &pod.Spec.InitContainers[i]
		}
	}
	if restore == nil {
		t.Fatal("no restore container")
	}
	if dir, secret := keysOf(t, pod.Spec, *restore); secret != "age-keys" || dir == "" {
		t.Errorf("seed restore: keys from %q at %q", secret, dir)
	}
	if dir, _ := keysOf(t, pod.Spec, pod.Spec.Containers[0]); dir != "" {
		t.Error("etcd's own container gets the backup keys")
	}
}

// restoringPod is m's first Pod, which restores its data dir.
func restoringPod(t *testing.T, m *v1alpha2.EtcdMember) *corev1.Pod {
	t.Helper()
	pod := Pod(m, PodOptions{AgentImage: "op:1"})
	if len(pod.Spec.InitContainers) == 0 {
		t.Fatal("the seed's Pod does not restore")
	}
	return pod
}
