package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Integration tests of the restore agent: snapshots taken by the snapshot agent from a real
// etcd, restored with the tools cache's etcdutl, and the restored member started and read.

// runRestoreAgent runs `manager restore-agent` with e and returns its result and exit code.
func runRestoreAgent(t *testing.T, e env) (snapshot.RestoreResult, int) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "termination-log")
	var stdout, stderr bytes.Buffer
	code := RestoreCommand(context.Background(), e.with(snapshot.EnvTerminationLog, logFile).get, &stdout, &stderr)
	line, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("no termination log: %v\nstderr:\n%s", err, stderr.String())
	}
	r, err := snapshot.ParseRestore(string(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restore-agent exit %d: %s\nstderr:\n%s", code, strings.TrimSpace(string(line)), stderr.String())
	if secret := e[snapshot.EnvAWSSecretAccessKey]; secret != "" && strings.Contains(string(line)+stderr.String(), secret) {
		t.Errorf("a secret leaked into the output")
	}
	return r, code
}

// restoreEnv restores into dataDir as member "r-0" at peer, with the tools cache's etcdutl.
func restoreEnv(t *testing.T, dataDir, peer string) env {
	return env{
		snapshot.EnvDataDir: dataDir, snapshot.EnvEtcdName: "r-0", snapshot.EnvEtcdInitialCluster: "r-0=" + peer,
		snapshot.EnvEtcdInitialClusterToken: "restored", snapshot.EnvEtcdInitialAdvertisePeer: peer,
		snapshot.EnvEtcdVersion: strings.TrimPrefix(testEtcdVersion, "v"),
		snapshot.EnvEtcdutl:     tool(t, "etcd-"+testEtcdVersion, "etcdutl"),
	}
}

// readBack starts etcd on a restored data directory and checks it holds want.
func readBack(t *testing.T, dataDir, peer string, want map[string]string, minRevision int64) {
	t.Helper()
	e := startEtcdAt(t, "r-0", dataDir, "restored", peer)
	defer e.stop()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	resp, err := cli.Get(context.Background(), "k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	if len(got) != len(want) {
		t.Fatalf("restored %d keys, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("restored %s = %q, want %q", k, got[k], v)
		}
	}
	if resp.Header.Revision < minRevision {
		t.Errorf("restored revision %d, want at least %d", resp.Header.Revision, minRevision)
	}
}

func noMember(t *testing.T, dataDir string) {
	t.Helper()
	if names := listNames(t, dataDir); len(names) != 0 {
		t.Errorf("a failed restore left %v in the data directory", names)
	}
}

// Restores from S3 and from a file, a second run that skips, and the refusals: a corrupt or
// unexpected file, a missing source, a snapshot newer than the target etcd.
func TestRestoreAgent(t *testing.T) {
	e := startEtcd(t)
	want := fill(t, e.URL, 50, 2)
	s := startS3(t)
	s.createBucket(t, "snapshots")
	snap, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/snap.db", "uid-1"))
	if code != 0 {
		t.Fatalf("snapshot: %+v", snap)
	}
	fileDir := t.TempDir()
	if r, code := runSnapshotAgent(t, pvcEnv(e, fileDir, "uid-1")); code != 0 {
		t.Fatalf("snapshot: %+v", r)
	}
	file := filepath.Join(fileDir, "snap.db")
	s3Source := env{snapshot.EnvRestoreSource: snapshot.DestS3, snapshot.EnvS3Endpoint: s.URL, snapshot.EnvS3Bucket: "snapshots",
		snapshot.EnvS3Key: "c/snap.db", snapshot.EnvS3ForcePathStyle: "true",
		snapshot.EnvAWSAccessKeyID: s.AccessKey, snapshot.EnvAWSSecretAccessKey: s.SecretKey}
	fileSource := env{snapshot.EnvRestoreSource: snapshot.DestPVC, snapshot.EnvRestoreFile: file}

	t.Run("from s3, then skipped", func(t *testing.T) {
		dataDir, peer := t.TempDir(), peerURL(t)
		e := restoreEnv(t, dataDir, peer).with(snapshot.EnvRestoreChecksum, snap.Checksum)
		for k, v := range s3Source {
			e[k] = v
		}
		r, code := runRestoreAgent(t, e)
		if code != 0 || r.Phase != snapshot.PhaseRestored || r.Checksum != snap.Checksum || r.SizeBytes != snap.SizeBytes || r.Revision < snap.Revision {
			t.Fatalf("exit %d %+v; snapshot %+v", code, r, snap)
		}
		if names := strings.Join(listNames(t, dataDir), " "); names != "member" {
			t.Errorf("data directory holds %s, want member alone", names)
		}
		readBack(t, dataDir, peer, want, r.Revision)
		if r, code := runRestoreAgent(t, e); code != 0 || r.Phase != snapshot.PhaseSkipped {
			t.Errorf("second run: exit %d %+v, want Skipped", code, r)
		}
	})

	t.Run("from a file, revision bumped", func(t *testing.T) {
		dataDir, peer := t.TempDir(), peerURL(t)
		e := restoreEnv(t, dataDir, peer).with(snapshot.EnvRestoreBumpRevision, "1000", snapshot.EnvRestoreMarkCompacted, "true")
		for k, v := range fileSource {
			e[k] = v
		}
		r, code := runRestoreAgent(t, e)
		if code != 0 || r.Phase != snapshot.PhaseRestored {
			t.Fatalf("exit %d %+v", code, r)
		}
		readBack(t, dataDir, peer, want, r.Revision+1000)
	})

	corrupt := filepath.Join(t.TempDir(), "corrupt.db")
	body, _ := os.ReadFile(file)
	body[len(body)/2] ^= 0x55
	if err := os.WriteFile(corrupt, body, 0o600); err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	for _, tc := range []struct {
		name string
		env  env
		want snapshot.Reason
	}{
		{"corrupt file", fileSource.with(snapshot.EnvRestoreFile, corrupt), snapshot.ReasonChecksumMismatch},
		{"unexpected checksum", fileSource.with(snapshot.EnvRestoreChecksum, "sha256:"+strings.Repeat("0", 64)), snapshot.ReasonChecksumMismatch},
		{"missing file", fileSource.with(snapshot.EnvRestoreFile, filepath.Join(fileDir, "none.db")), snapshot.ReasonSourceNotFound},
		{"a directory", fileSource.with(snapshot.EnvRestoreFile, otherDir), snapshot.ReasonSourceNotFound},
		{"missing key", s3Source.with(snapshot.EnvS3Key, "c/none.db"), snapshot.ReasonSourceNotFound},
		{"missing bucket", s3Source.with(snapshot.EnvS3Bucket, "no-such-bucket"), snapshot.ReasonBucketNotFound},
		{"unknown access key", s3Source.with(snapshot.EnvAWSAccessKeyID, "nobody"), snapshot.ReasonAccessDenied},
		{"no etcdutl", fileSource.with(snapshot.EnvEtcdutl, filepath.Join(otherDir, "etcdutl")), snapshot.ReasonUnsupported},
		{"3.6 target", fileSource.with(snapshot.EnvEtcdVersion, "3.6.16",
			snapshot.EnvEtcdutl, tool(t, "etcd-v3.6.16", "etcdutl")), snapshot.ReasonSnapshotNewerThanTarget},
		// 3.5's etcdutl does not report the storage version: the agent reads it from the file.
		{"3.5 target", fileSource.with(snapshot.EnvEtcdVersion, "3.5.35",
			snapshot.EnvEtcdutl, tool(t, "etcd-v3.5.35", "etcdutl")), snapshot.ReasonSnapshotNewerThanTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			e := restoreEnv(t, dataDir, peerURL(t))
			for k, v := range tc.env {
				e[k] = v
			}
			r, code := runRestoreAgent(t, e)
			if code != 1 || r.Phase != snapshot.PhaseFailed || r.Reason != tc.want {
				t.Errorf("exit %d %+v, want %s", code, r, tc.want)
			}
			noMember(t, dataDir)
		})
	}

	// sumOf is what the source e names holds: the S3 snapshot's result, or the file hashed here.
	sumOf := func(t *testing.T, e env) snapshot.Sum {
		if e[snapshot.EnvRestoreSource] == snapshot.DestS3 {
			return snapshot.Sum{Size: snap.SizeBytes, Checksum: snap.Checksum}
		}
		b, err := os.ReadFile(e[snapshot.EnvRestoreFile])
		if err != nil {
			t.Fatal(err)
		}
		d := snapshot.NewDigest()
		_, _ = d.Write(b)
		return d.Sum()
	}
	// Verify only: no member variables, no data directory; the source is read through and
	// checked, and the same corruptions are refused with the same reasons.
	t.Run("verify only", func(t *testing.T) {
		only := env{snapshot.EnvRestoreVerifyOnly: "true"}
		for _, tc := range []struct {
			name  string
			env   env
			phase snapshot.Phase
			want  snapshot.Reason
		}{
			{"s3 with its checksum", s3Source.with(snapshot.EnvRestoreChecksum, snap.Checksum), snapshot.PhaseVerified, ""},
			{"a file, no checksum known", fileSource, snapshot.PhaseVerified, ""},
			{"corrupt file", fileSource.with(snapshot.EnvRestoreFile, corrupt), snapshot.PhaseFailed, snapshot.ReasonChecksumMismatch},
			{"unexpected checksum", s3Source.with(snapshot.EnvRestoreChecksum, "sha256:"+strings.Repeat("0", 64)), snapshot.PhaseFailed, snapshot.ReasonChecksumMismatch},
			{"missing key", s3Source.with(snapshot.EnvS3Key, "c/none.db"), snapshot.PhaseFailed, snapshot.ReasonSourceNotFound},
		} {
			e := only.with()
			for k, v := range tc.env {
				e[k] = v
			}
			r, code := runRestoreAgent(t, e)
			if r.Phase != tc.phase || r.Reason != tc.want || (code == 0) != (tc.phase == snapshot.PhaseVerified) {
				t.Errorf("%s: exit %d %+v, want %s %s", tc.name, code, r, tc.phase, tc.want)
			}
			if tc.phase == snapshot.PhaseVerified {
				if want := sumOf(t, tc.env); r.SizeBytes != want.Size || r.Checksum != want.Checksum {
					t.Errorf("%s: verified %d bytes %s, the source is %d bytes %s", tc.name, r.SizeBytes, r.Checksum, want.Size, want.Checksum)
				}
			}
		}
	})

	t.Run("no space", func(t *testing.T) {
		dataDir := t.TempDir()
		cfg, err := RestoreConfigFromEnv(restoreEnv(t, dataDir, peerURL(t)).with(snapshot.EnvRestoreSource, snapshot.DestPVC, snapshot.EnvRestoreFile, file).get)
		if err != nil {
			t.Fatal(err)
		}
		a := &RestoreAgent{Config: cfg, Source: snapshot.FileSource{Path: file},
			FreeBytes: func(string) (uint64, error) { return uint64(2*snap.SizeBytes - 1), nil }}
		if r := a.Run(context.Background()); r.Reason != snapshot.ReasonNoSpace {
			t.Errorf("%+v, want NoSpace", r)
		}
		noMember(t, dataDir)
	})

	// Leftovers of an interrupted attempt are cleared before the restore.
	t.Run("leftovers", func(t *testing.T) {
		dataDir, peer := t.TempDir(), peerURL(t)
		for _, p := range []string{"restore.db.part", "restore.db", ".restore/member/snap/db"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dataDir, p)), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dataDir, p), []byte("stale"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		e := restoreEnv(t, dataDir, peer)
		for k, v := range fileSource {
			e[k] = v
		}
		if r, code := runRestoreAgent(t, e); code != 0 || r.Phase != snapshot.PhaseRestored {
			t.Fatalf("exit %d %+v", code, r)
		}
		readBack(t, dataDir, peer, want, 0)
	})

	t.Run("s3 object deleted", func(t *testing.T) {
		client := s.store(t, "snapshots", "c/snap.db").Client()
		if _, err := client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: strPtr("snapshots"), Key: strPtr("c/snap.db")}); err != nil {
			t.Fatal(err)
		}
		dataDir := t.TempDir()
		e := restoreEnv(t, dataDir, peerURL(t))
		for k, v := range s3Source {
			e[k] = v
		}
		if r, _ := runRestoreAgent(t, e); r.Reason != snapshot.ReasonSourceNotFound {
			t.Errorf("%+v, want SourceNotFound", r)
		}
		noMember(t, dataDir)
	})
}

func strPtr(s string) *string { return &s }
