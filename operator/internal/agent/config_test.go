package agent

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

func TestSnapshotConfigFromEnv(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, []byte("pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := env{
		snapshot.EnvEtcdEndpoints: " http://a:2379, http://b:2379 ,", snapshot.EnvEtcdMemberNames: "a,b",
		snapshot.EnvSnapshotOwner: "uid-1", snapshot.EnvSnapshotDest: snapshot.DestPVC,
		snapshot.EnvPVCDir: "/snap/c", snapshot.EnvPVCFile: "x.db", snapshot.EnvPVCClaim: "backups", snapshot.EnvPVCPath: "c/x.db",
	}
	s3 := base.with(snapshot.EnvSnapshotDest, snapshot.DestS3, snapshot.EnvS3Endpoint, "https://s3.example", snapshot.EnvS3Bucket, "b",
		snapshot.EnvS3Key, "k.db", snapshot.EnvAWSAccessKeyID, "AK", snapshot.EnvAWSSecretAccessKey, "SK")
	for _, tc := range []struct {
		name   string
		env    env
		reason snapshot.Reason // "" = valid
		check  func(*testing.T, SnapshotConfig)
	}{
		{"pvc", base, "", func(t *testing.T, c SnapshotConfig) {
			if !reflect.DeepEqual(c.Endpoints, []string{"http://a:2379", "http://b:2379"}) || c.TerminationLog != snapshot.DefaultTerminationLog ||
				c.Etcd.Password != "" || c.PVCPath != "c/x.db" || c.StallTimeout != defaultStallTimeout {
				t.Errorf("%+v", c)
			}
		}},
		{"s3 with defaults", s3, "", func(t *testing.T, c SnapshotConfig) {
			if c.S3.Region != snapshot.DefaultS3Region || c.S3.ForcePathStyle || c.S3.SecretAccessKey != "SK" {
				t.Errorf("%+v", c.S3)
			}
		}},
		{"s3 path style", s3.with(snapshot.EnvS3ForcePathStyle, "true", snapshot.EnvS3Region, "eu-1"), "", func(t *testing.T, c SnapshotConfig) {
			if !c.S3.ForcePathStyle || c.S3.Region != "eu-1" {
				t.Errorf("%+v", c.S3)
			}
		}},
		{"password from a file, newline trimmed", base.with(snapshot.EnvEtcdUsername, "root", snapshot.EnvEtcdPasswordFile, pw), "", func(t *testing.T, c SnapshotConfig) {
			if c.Etcd.Username != "root" || c.Etcd.Password != "s3cret" || !strings.Contains(strings.Join(c.Secrets(), ","), "s3cret") {
				t.Errorf("%+v", c.Etcd)
			}
		}},
		{"TLS CA", base.with(snapshot.EnvEtcdCAFile, ca), "", nil},
		{"user without password", base.with(snapshot.EnvEtcdUsername, "root"), snapshot.ReasonCredentialsMissing, nil},
		{"password without user", base.with(snapshot.EnvEtcdPasswordFile, pw), snapshot.ReasonCredentialsMissing, nil},
		{"unreadable password", base.with(snapshot.EnvEtcdUsername, "root", snapshot.EnvEtcdPasswordFile, filepath.Join(dir, "none")), snapshot.ReasonCredentialsMissing, nil},
		{"empty password", base.with(snapshot.EnvEtcdUsername, "root", snapshot.EnvEtcdPasswordFile, empty), snapshot.ReasonCredentialsMissing, nil},
		{"s3 without keys", s3.with(snapshot.EnvAWSAccessKeyID, ""), snapshot.ReasonCredentialsMissing, nil},
		{"missing CA file", base.with(snapshot.EnvEtcdCAFile, filepath.Join(dir, "none")), snapshot.ReasonFailed, nil},
		{"cert without key", base.with(snapshot.EnvEtcdCAFile, ca, snapshot.EnvEtcdCertFile, ca), snapshot.ReasonFailed, nil},
		{"no endpoints", base.with(snapshot.EnvEtcdEndpoints, ""), snapshot.ReasonFailed, nil},
		{"names do not pair", base.with(snapshot.EnvEtcdMemberNames, "a"), snapshot.ReasonFailed, nil},
		{"no owner", base.with(snapshot.EnvSnapshotOwner, ""), snapshot.ReasonFailed, nil},
		{"unknown destination", base.with(snapshot.EnvSnapshotDest, "gcs"), snapshot.ReasonFailed, nil},
		{"bad path style", s3.with(snapshot.EnvS3ForcePathStyle, "yes please"), snapshot.ReasonFailed, nil},
		{"endpoint without scheme", s3.with(snapshot.EnvS3Endpoint, "s3.example"), snapshot.ReasonFailed, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := SnapshotConfigFromEnv(tc.env.get)
			if (err == nil) != (tc.reason == "") || (err != nil && snapshot.ReasonOf(err) != tc.reason) {
				t.Fatalf("%v (reason %s), want reason %q", err, snapshot.ReasonOf(err), tc.reason)
			}
			if err == nil && tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestRestoreConfigFromEnv(t *testing.T) {
	base := env{
		snapshot.EnvEtcdName: "c-0", snapshot.EnvEtcdInitialCluster: "c-0=https://c-0:2380", snapshot.EnvEtcdInitialClusterToken: "tok",
		snapshot.EnvEtcdInitialAdvertisePeer: "https://c-0:2380", snapshot.EnvEtcdVersion: "3.6.16",
		snapshot.EnvRestoreSource: snapshot.DestPVC, snapshot.EnvRestoreFile: "/restore/src/x.db",
	}
	s3 := base.with(snapshot.EnvRestoreSource, snapshot.DestS3, snapshot.EnvS3Endpoint, "http://s3:7070", snapshot.EnvS3Bucket, "b",
		snapshot.EnvS3Key, "k.db", snapshot.EnvAWSAccessKeyID, "AK", snapshot.EnvAWSSecretAccessKey, "SK")
	sum := "sha256:" + strings.Repeat("AB", 32)
	for _, tc := range []struct {
		name  string
		env   env
		ok    bool
		check func(*testing.T, RestoreConfig)
	}{
		{"pvc with defaults", base, true, func(t *testing.T, c RestoreConfig) {
			if c.DataDir != snapshot.DefaultDataDir || c.Etcdutl != snapshot.DefaultEtcdutl || c.BumpRevision != 0 || c.MarkCompacted || c.Checksum != "" {
				t.Errorf("%+v", c)
			}
		}},
		{"s3", s3, true, nil},
		{"checksum, bump and mark", base.with(snapshot.EnvRestoreChecksum, sum, snapshot.EnvRestoreBumpRevision, "1000000",
			snapshot.EnvRestoreMarkCompacted, "true", snapshot.EnvDataDir, "/data", snapshot.EnvEtcdVersion, "v3.7.3"), true,
			func(t *testing.T, c RestoreConfig) {
				if c.Checksum != strings.ToLower(sum) || c.BumpRevision != 1000000 || !c.MarkCompacted || c.DataDir != "/data" {
					t.Errorf("%+v", c)
				}
			}},
		{"bump without mark", base.with(snapshot.EnvRestoreBumpRevision, "5"), false, nil},
		{"mark without bump", base.with(snapshot.EnvRestoreMarkCompacted, "true"), false, nil},
		{"negative bump", base.with(snapshot.EnvRestoreBumpRevision, "-1", snapshot.EnvRestoreMarkCompacted, "true"), false, nil},
		{"bad checksum", base.with(snapshot.EnvRestoreChecksum, "abc"), false, nil},
		{"relative file", base.with(snapshot.EnvRestoreFile, "x.db"), false, nil},
		{"relative data dir", base.with(snapshot.EnvDataDir, "data"), false, nil},
		{"no name", base.with(snapshot.EnvEtcdName, ""), false, nil},
		{"no initial cluster", base.with(snapshot.EnvEtcdInitialCluster, ""), false, nil},
		{"no version", base.with(snapshot.EnvEtcdVersion, ""), false, nil},
		{"bad version", base.with(snapshot.EnvEtcdVersion, "latest"), false, nil},
		{"unknown source", base.with(snapshot.EnvRestoreSource, "nfs"), false, nil},
		{"s3 without keys", s3.with(snapshot.EnvAWSSecretAccessKey, ""), false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := RestoreConfigFromEnv(tc.env.get)
			if (err == nil) != tc.ok {
				t.Fatalf("%v, want ok=%v", err, tc.ok)
			}
			// The restore reports only its own reasons: a bad environment is Failed.
			if err != nil && snapshot.ReasonOf(err) != snapshot.ReasonFailed {
				t.Errorf("reason %s", snapshot.ReasonOf(err))
			}
			if err == nil && tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
