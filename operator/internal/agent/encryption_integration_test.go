package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Integration tests of encrypted and compressed artifacts: a real etcd and versitygw, the
// agents run in-process as in the other integration tests.

// plaintextMarker is a value written to etcd that must not appear in an encrypted artifact.
const plaintextMarker = "tenant-a-db-password-Pl41nT3xt"

func newAgeIdentity(t *testing.T) *age.X25519Identity {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// keyDir writes an encryption Secret's keys as the kubelet mounts them (an empty list: no file).
func keyDir(t *testing.T, identities []*age.X25519Identity, recipients []*age.X25519Recipient) string {
	t.Helper()
	dir := t.TempDir()
	write := func(key string, lines []string) {
		if len(lines) == 0 {
			return
		}
		if err := os.WriteFile(filepath.Join(dir, key), []byte(strings.Join(lines, "\n")+"\n"), 0o440); err != nil {
			t.Fatal(err)
		}
	}
	var ids, recs []string
	for _, id := range identities {
		ids = append(ids, id.String())
	}
	for _, r := range recipients {
		recs = append(recs, r.String())
	}
	write(v1alpha2.EncryptionIdentitiesKey, ids)
	write(v1alpha2.EncryptionRecipientsKey, recs)
	return dir
}

func putMarker(t *testing.T, url string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(context.Background(), "/registry/secrets/tenant-a/db", plaintextMarker); err != nil {
		t.Fatal(err)
	}
}

// noPlaintext fails when stored holds anything written to etcd in the clear.
func noPlaintext(t *testing.T, stored []byte) {
	t.Helper()
	for _, s := range []string{plaintextMarker, "/registry/secrets", "k/0001", "value-17", "bulk/0000"} {
		if bytes.Contains(stored, []byte(s)) {
			t.Errorf("the stored artifact holds %q in the clear", s)
		}
	}
	if !bytes.HasPrefix(stored, []byte("age-encryption.org/v1\n")) {
		t.Errorf("the stored artifact does not start with an age header: %q", stored[:min(len(stored), 32)])
	}
}

// An encrypted, compressed snapshot in S3 holds no plaintext, is smaller than the plain one,
// restores with a rotated key list, and fails clearly with a wrong key or none.
func TestEncryptedSnapshotS3(t *testing.T) {
	e := startEtcd(t)
	want := fill(t, e.URL, 50, 4)
	putMarker(t, e.URL)
	s := startS3(t)
	s.createBucket(t, "snapshots")
	oldKey, newKey, newest, stranger := newAgeIdentity(t), newAgeIdentity(t), newAgeIdentity(t), newAgeIdentity(t)

	plain, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/plain.db", "uid-plain"))
	if code != 0 || plain.Compression != string(v1alpha2.CompressionNone) || len(plain.Recipients) != 0 {
		t.Fatalf("plain snapshot: exit %d %+v", code, plain)
	}
	const key = "c/sealed.db.zst.age"
	// The Secret after one rotation: the new key first, the old one kept to read older backups.
	writer := s3Env(e, s, "snapshots", key, "uid-sealed").with(
		snapshot.EnvEncryptionKeyDir, keyDir(t, []*age.X25519Identity{newKey, oldKey}, nil),
		snapshot.EnvSnapshotCompression, string(v1alpha2.CompressionZstd))
	r, code := runSnapshotAgent(t, writer)
	checkComplete(t, r, code, "s3://snapshots/"+key, "c-0")
	if r.Compression != string(v1alpha2.CompressionZstd) || len(r.Recipients) != 1 || r.Recipients[0] != newKey.Recipient().String() {
		t.Fatalf("result %+v: want zstd, encrypted to the newest identity %s only", r, newKey.Recipient())
	}
	stored, _ := getObject(t, s, "snapshots", key)
	if int64(len(stored)) != r.SizeBytes || sha256Hex(stored) != r.Checksum {
		t.Errorf("stored %d bytes %s, result says %d %s", len(stored), sha256Hex(stored), r.SizeBytes, r.Checksum)
	}
	noPlaintext(t, stored)
	if r.SizeBytes*4 > plain.SizeBytes {
		t.Errorf("compressed to %d bytes of %d plain", r.SizeBytes, plain.SizeBytes)
	}
	if again, code := runSnapshotAgent(t, writer); code != 0 || !sameArtifact(again, r) {
		t.Errorf("a retry reported %+v, want %+v", again, r)
	}

	source := env{snapshot.EnvRestoreSource: snapshot.DestS3, snapshot.EnvS3Endpoint: s.URL, snapshot.EnvS3Bucket: "snapshots",
		snapshot.EnvS3Key: key, snapshot.EnvS3ForcePathStyle: "true",
		snapshot.EnvAWSAccessKeyID: s.AccessKey, snapshot.EnvAWSSecretAccessKey: s.SecretKey,
		snapshot.EnvRestoreChecksum: r.Checksum}

	t.Run("restore after another rotation", func(t *testing.T) {
		dataDir, peer := t.TempDir(), peerURL(t)
		env := restoreEnv(t, dataDir, peer).with(snapshot.EnvEncryptionKeyDir, keyDir(t, []*age.X25519Identity{newest, newKey, oldKey}, nil))
		for k, v := range source {
			env[k] = v
		}
		res, code := runRestoreAgent(t, env)
		if code != 0 || res.Phase != snapshot.PhaseRestored || res.Checksum != r.Checksum || res.SizeBytes != r.SizeBytes {
			t.Fatalf("exit %d %+v; snapshot %+v", code, res, r)
		}
		readBack(t, dataDir, peer, want, res.Revision)
	})

	verify := func(keys string) env {
		env := env{snapshot.EnvRestoreVerifyOnly: "true"}.with(snapshot.EnvEncryptionKeyDir, keys)
		if keys == "" {
			delete(env, snapshot.EnvEncryptionKeyDir)
		}
		for k, v := range source {
			env[k] = v
		}
		return env
	}
	for _, tc := range []struct {
		name, keys string
		want       snapshot.Phase
		reason     snapshot.Reason
		message    string
	}{
		{"verify with the old key list", keyDir(t, []*age.X25519Identity{newKey, oldKey}, nil), snapshot.PhaseVerified, "", ""},
		{"verify with a wrong key", keyDir(t, []*age.X25519Identity{stranger, oldKey}, nil), snapshot.PhaseFailed, snapshot.ReasonDecryptionFailed,
			"none of the identities given can decrypt"},
		{"verify without a key", "", snapshot.PhaseFailed, snapshot.ReasonDecryptionFailed, "no identity"},
		{"verify with recipients only", keyDir(t, nil, []*age.X25519Recipient{newKey.Recipient()}), snapshot.PhaseFailed, snapshot.ReasonDecryptionFailed,
			"no identity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, code := runRestoreAgent(t, verify(tc.keys))
			if res.Phase != tc.want || res.Reason != tc.reason || !strings.Contains(res.Message, tc.message) || (code == 0) != (tc.want != snapshot.PhaseFailed) {
				t.Fatalf("exit %d %+v, want %s %s %q", code, res, tc.want, tc.reason, tc.message)
			}
			if strings.Contains(res.Message, "AGE-SECRET-KEY-1") {
				t.Errorf("the message shows a key: %s", res.Message)
			}
		})
	}
}

// A Secret with recipients only: the agent encrypts (no compression asked) and cannot read the
// artifact back beyond its checksum; a restore with the identity reads it; a truncated copy is
// a checksum failure, not a generic one.
func TestEncryptedSnapshotRecipientsOnly(t *testing.T) {
	e := startEtcd(t)
	want := fill(t, e.URL, 30, 0)
	putMarker(t, e.URL)
	id := newAgeIdentity(t)
	dir := filepath.Join(t.TempDir(), "c")
	writer := pvcEnv(e, dir, "uid-1").with(snapshot.EnvPVCFile, "snap.db.age", snapshot.EnvPVCPath, "c/snap.db.age",
		snapshot.EnvEncryptionKeyDir, keyDir(t, nil, []*age.X25519Recipient{id.Recipient()}))
	r, code := runSnapshotAgent(t, writer)
	checkComplete(t, r, code, "pvc://backups/c/snap.db.age", "c-0")
	if r.Compression != string(v1alpha2.CompressionNone) || len(r.Recipients) != 1 {
		t.Fatalf("result %+v", r)
	}
	file := filepath.Join(dir, "snap.db.age")
	stored, err := os.ReadFile(file)
	if err != nil || sha256Hex(stored) != r.Checksum {
		t.Fatalf("file %v, %s vs %s", err, sha256Hex(stored), r.Checksum)
	}
	noPlaintext(t, stored)

	dataDir, peer := t.TempDir(), peerURL(t)
	res, code := runRestoreAgent(t, restoreEnv(t, dataDir, peer).with(snapshot.EnvRestoreSource, snapshot.DestPVC,
		snapshot.EnvRestoreFile, file, snapshot.EnvRestoreChecksum, r.Checksum,
		snapshot.EnvEncryptionKeyDir, keyDir(t, []*age.X25519Identity{id}, nil)))
	if code != 0 || res.Phase != snapshot.PhaseRestored {
		t.Fatalf("exit %d %+v", code, res)
	}
	readBack(t, dataDir, peer, want, res.Revision)

	truncated := filepath.Join(t.TempDir(), "truncated.db.age")
	if err := os.WriteFile(truncated, stored[:len(stored)-100], 0o600); err != nil {
		t.Fatal(err)
	}
	bad, code := runRestoreAgent(t, env{snapshot.EnvRestoreVerifyOnly: "true", snapshot.EnvRestoreSource: snapshot.DestPVC,
		snapshot.EnvRestoreFile: truncated, snapshot.EnvEncryptionKeyDir: keyDir(t, []*age.X25519Identity{id}, nil)})
	if code != 1 || bad.Reason != snapshot.ReasonChecksumMismatch || !strings.Contains(bad.Message, "damaged or truncated") {
		t.Errorf("truncated: exit %d %+v", code, bad)
	}
}

// A key Secret that cannot serve: the agents refuse before touching etcd or the store.
func TestEncryptionKeyProblems(t *testing.T) {
	garbage := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbage, v1alpha2.EncryptionIdentitiesKey), []byte("not a key\n"), 0o440); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"no key files": t.TempDir(), "not a key": garbage} {
		t.Run(name, func(t *testing.T) {
			_, err := SnapshotConfigFromEnv(env{snapshot.EnvEtcdEndpoints: "http://127.0.0.1:1", snapshot.EnvEtcdMemberNames: "c-0",
				snapshot.EnvSnapshotOwner: "uid", snapshot.EnvSnapshotDest: snapshot.DestPVC, snapshot.EnvEncryptionKeyDir: dir}.get)
			if snapshot.ReasonOf(err) != snapshot.ReasonEncryptionKeyMissing {
				t.Errorf("snapshot agent: %v, want %s", err, snapshot.ReasonEncryptionKeyMissing)
			}
			_, err = RestoreConfigFromEnv(env{snapshot.EnvRestoreVerifyOnly: "true", snapshot.EnvRestoreSource: snapshot.DestPVC,
				snapshot.EnvRestoreFile: "/x.db.age", snapshot.EnvEncryptionKeyDir: dir}.get)
			if snapshot.ReasonOf(err) != snapshot.ReasonEncryptionKeyMissing {
				t.Errorf("restore agent: %v, want %s", err, snapshot.ReasonEncryptionKeyMissing)
			}
		})
	}
	_, err := SnapshotConfigFromEnv(env{snapshot.EnvEtcdEndpoints: "http://127.0.0.1:1", snapshot.EnvEtcdMemberNames: "c-0",
		snapshot.EnvSnapshotOwner: "uid", snapshot.EnvSnapshotDest: snapshot.DestPVC, snapshot.EnvSnapshotCompression: "gzip"}.get)
	if err == nil || !strings.Contains(err.Error(), snapshot.EnvSnapshotCompression) {
		t.Errorf("compression gzip: %v", err)
	}
}
