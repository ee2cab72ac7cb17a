//go:build e2e

package backup

import (
	"bytes"
	"context"
	"testing"

	"filippo.io/age"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// testEncrypted: a snapshot encrypted to a rotated key list and compressed; the object in the
// bucket holds none of the recorder's writes in the clear; a new cluster restores from it by
// EtcdSnapshot reference with every write up to its revision.
func (e *env) testEncrypted(t *testing.T) {
	older, newer := ageKey(t), ageKey(t)
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "backup-keys", Namespace: e.ns}, StringData: map[string]string{
		v1alpha2.EncryptionIdentitiesKey: "# newest first\n" + newer.String() + "\n" + older.String() + "\n"}}
	if err := e.c.Client.Create(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	dest := v1alpha2.SnapshotLocation{S3: s3Location(e.store, "sealed"),
		Encryption: &v1alpha2.SnapshotEncryption{SecretRef: corev1.LocalObjectReference{Name: keys.Name}}}
	s, want := e.takeSnapshot(t, "sealed", dest)
	art := s.Status.Artifact
	if art.URI != "s3://"+bucket+"/sealed/sealed.db.zst.age" || art.Compression != v1alpha2.CompressionZstd || art.Encryption == nil ||
		art.Encryption.SecretName != keys.Name || len(art.Encryption.Recipients) != 1 || art.Encryption.Recipients[0] != newer.Recipient().String() {
		t.Fatalf("artifact %+v, encryption %+v: want zstd+age to the newest key only", art, art.Encryption)
	}
	stored, sum := download(t, e.store, keyOf(art.URI))
	if sum != art.Checksum {
		t.Fatalf("stored object sha256 %s, recorded %s", sum, art.Checksum)
	}
	seen := 0
	for k, v := range want {
		if bytes.Contains(stored, []byte(k)) || bytes.Contains(stored, []byte(v)) {
			t.Fatalf("the stored object holds the write %s=%s in the clear", k, v)
		}
		seen++
	}
	if !bytes.HasPrefix(stored, []byte("age-encryption.org/v1\n")) || seen == 0 {
		t.Fatalf("stored object starts %q; %d writes checked", stored[:min(32, len(stored))], seen)
	}
	t.Logf("%s: %d bytes stored, none of %d acknowledged writes readable in it", art.URI, len(stored), seen)
	e.restored(t, "from-sealed", 1, v1alpha2.RestoreSource{SnapshotRef: &corev1.LocalObjectReference{Name: s.Name}}, want)
}

func ageKey(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
