package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Integration tests of the snapshot agent: a real etcd and versitygw, the agent run in-process
// through its command (environment in, termination log out).

// env is a fake environment.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// with returns a copy of e with kv (name, value, …) set.
func (e env) with(kv ...string) env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// runSnapshotAgent runs `manager snapshot-agent` with e and returns its result and exit code.
func runSnapshotAgent(t *testing.T, e env) (snapshot.SnapshotResult, int) {
	t.Helper()
	logFile := filepath.Join(t.TempDir(), "termination-log")
	var stdout, stderr bytes.Buffer
	code := SnapshotCommand(context.Background(), e.with(snapshot.EnvTerminationLog, logFile).get, &stdout, &stderr)
	line, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("no termination log: %v\nstderr:\n%s", err, stderr.String())
	}
	if len(line) > snapshot.MaxResultBytes || !bytes.Equal(line, stdout.Bytes()) {
		t.Errorf("termination log of %d bytes, stdout %q", len(line), stdout.String())
	}
	r, err := snapshot.ParseSnapshot(string(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot-agent exit %d: %s\nstderr:\n%s", code, strings.TrimSpace(string(line)), stderr.String())
	for _, secret := range []string{e[snapshot.EnvAWSSecretAccessKey]} {
		if secret != "" && (strings.Contains(string(line), secret) || strings.Contains(stderr.String(), secret)) {
			t.Errorf("a secret leaked into the output")
		}
	}
	return r, code
}

// fill writes keys k/000… with small values and bulk/… with 1 MiB values (bulkMiB of them).
func fill(t testing.TB, url string, keys, bulkMiB int) map[string]string {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	want := map[string]string{}
	for i := 0; i < keys; i++ {
		k, v := fmt.Sprintf("k/%04d", i), fmt.Sprintf("value-%d", i)
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	blob := strings.Repeat("x", 1<<20-64)
	for i := 0; i < bulkMiB; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("bulk/%04d", i), fmt.Sprintf("%08d", i)+blob); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// s3Env is the snapshot agent's environment for an S3 destination.
func s3Env(e *testEtcd, s *testS3, bucket, key, owner string) env {
	return env{
		snapshot.EnvEtcdEndpoints: e.URL, snapshot.EnvEtcdMemberNames: "c-0", snapshot.EnvSnapshotOwner: owner,
		snapshot.EnvSnapshotDest: snapshot.DestS3, snapshot.EnvS3Endpoint: s.URL, snapshot.EnvS3Bucket: bucket,
		snapshot.EnvS3Key: key, snapshot.EnvS3ForcePathStyle: "true",
		snapshot.EnvAWSAccessKeyID: s.AccessKey, snapshot.EnvAWSSecretAccessKey: s.SecretKey,
	}
}

// pvcEnv is the snapshot agent's environment for a directory destination.
func pvcEnv(e *testEtcd, dir, owner string) env {
	return env{
		snapshot.EnvEtcdEndpoints: e.URL, snapshot.EnvEtcdMemberNames: "c-0", snapshot.EnvSnapshotOwner: owner,
		snapshot.EnvSnapshotDest: snapshot.DestPVC, snapshot.EnvPVCDir: dir, snapshot.EnvPVCFile: "snap.db",
		snapshot.EnvPVCClaim: "backups", snapshot.EnvPVCPath: "c/snap.db",
	}
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return snapshot.ChecksumPrefix + hex.EncodeToString(h[:])
}

func getObject(t *testing.T, s *testS3, bucket, key string) ([]byte, map[string]string) {
	t.Helper()
	out, err := s.store(t, bucket, key).Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out.Metadata
}

func checkComplete(t *testing.T, r snapshot.SnapshotResult, code int, uri, member string) {
	t.Helper()
	if code != 0 || r.Phase != snapshot.PhaseComplete || r.URI != uri || r.Member != member ||
		len(r.MemberID) != 16 || len(r.ClusterID) != 16 || r.Revision < 2 || r.EtcdVersion != strings.TrimPrefix(testEtcdVersion, "v") ||
		r.SizeBytes <= snapshot.TrailerSize || !strings.HasPrefix(r.Checksum, snapshot.ChecksumPrefix) {
		t.Fatalf("exit %d, result %+v", code, r)
	}
	for _, ts := range []string{r.StartTime, r.CompletionTime} {
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("time %q: %v", ts, err)
		}
	}
}

// The snapshot agent stores a verified snapshot in S3 and on a PVC, re-reports its own
// artifact on a retry, refuses another snapshot's, and maps S3's failures to reasons.
func TestSnapshotAgent(t *testing.T) {
	e := startEtcd(t)
	fill(t, e.URL, 100, 10) // > 8 MiB: a multipart upload of two parts
	s := startS3(t)
	s.createBucket(t, "snapshots")

	t.Run("s3", func(t *testing.T) {
		r, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/first.db", "uid-1"))
		checkComplete(t, r, code, "s3://snapshots/c/first.db", "c-0")
		body, md := getObject(t, s, "snapshots", "c/first.db")
		if int64(len(body)) != r.SizeBytes || sha256Hex(body) != r.Checksum {
			t.Errorf("stored %d bytes %s, result says %d %s", len(body), sha256Hex(body), r.SizeBytes, r.Checksum)
		}
		if _, err := snapshot.Verify(bytes.NewReader(body)); err != nil {
			t.Errorf("stored object: %v", err)
		}
		if md[snapshot.MetaOwner] != "uid-1" {
			t.Errorf("metadata %v", md)
		}
		again, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/first.db", "uid-1"))
		if !sameArtifact(again, r) || code != 0 {
			t.Errorf("a retry of the same snapshot reported %+v, want %+v", again, r)
		}
		other, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/first.db", "uid-2"))
		if code != 1 || other.Reason != snapshot.ReasonArtifactExists {
			t.Errorf("another owner: exit %d %+v", code, other)
		}
	})

	t.Run("pvc", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "c")
		r, code := runSnapshotAgent(t, pvcEnv(e, dir, "uid-1"))
		checkComplete(t, r, code, "pvc://backups/c/snap.db", "c-0")
		body, err := os.ReadFile(filepath.Join(dir, "snap.db"))
		if err != nil || sha256Hex(body) != r.Checksum || int64(len(body)) != r.SizeBytes {
			t.Errorf("file %d bytes %v, result %+v", len(body), err, r)
		}
		if again, _ := runSnapshotAgent(t, pvcEnv(e, dir, "uid-1")); !sameArtifact(again, r) {
			t.Errorf("a retry reported %+v, want %+v", again, r)
		}
		if other, code := runSnapshotAgent(t, pvcEnv(e, dir, "uid-2")); code != 1 || other.Reason != snapshot.ReasonArtifactExists {
			t.Errorf("another owner: exit %d %+v", code, other)
		}
	})

	t.Run("s3 failures", func(t *testing.T) {
		base := s3Env(e, s, "snapshots", "c/failures.db", "uid-3")
		for _, tc := range []struct {
			name string
			env  env
			want snapshot.Reason
		}{
			{"unknown access key", base.with(snapshot.EnvAWSAccessKeyID, "nobody"), snapshot.ReasonAccessDenied},
			{"wrong secret", base.with(snapshot.EnvAWSSecretAccessKey, "wrong-secret-0123456789"), snapshot.ReasonAccessDenied},
			{"missing bucket", base.with(snapshot.EnvS3Bucket, "no-such-bucket"), snapshot.ReasonBucketNotFound},
			{"no keys", base.with(snapshot.EnvAWSSecretAccessKey, ""), snapshot.ReasonCredentialsMissing},
			{"nothing listens", base.with(snapshot.EnvS3Endpoint, fmt.Sprintf("http://127.0.0.1:%d", freePort(t))), snapshot.ReasonEndpointUnreachable},
			{"no such host", base.with(snapshot.EnvS3Endpoint, "http://s3.invalid"), snapshot.ReasonEndpointUnreachable},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r, code := runSnapshotAgent(t, tc.env)
				if code != 1 || r.Phase != snapshot.PhaseFailed || r.Reason != tc.want {
					t.Errorf("exit %d %+v, want %s", code, r, tc.want)
				}
			})
		}
	})

	t.Run("etcd unreachable", func(t *testing.T) {
		dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
		r, code := runSnapshotAgent(t, pvcEnv(e, t.TempDir(), "uid-4").with(
			snapshot.EnvEtcdEndpoints, dead, snapshot.EnvEtcdMemberNames, "gone"))
		if code != 1 || r.Reason != snapshot.ReasonEtcdUnreachable || !strings.Contains(r.Message, "member gone") {
			t.Errorf("exit %d %+v", code, r)
		}
	})

	// Last: it stops the S3 server.
	t.Run("s3 stopped", func(t *testing.T) {
		s.stop()
		r, code := runSnapshotAgent(t, s3Env(e, s, "snapshots", "c/stopped.db", "uid-5"))
		if code != 1 || r.Reason != snapshot.ReasonEndpointUnreachable {
			t.Errorf("exit %d %+v", code, r)
		}
	})
}

// A member that dies mid-stream: the partial upload is aborted (no object, no pending
// multipart upload) and the next endpoint's member is streamed instead.
func TestSnapshotMemberDiesMidStream(t *testing.T) {
	e := startEtcd(t)
	fill(t, e.URL, 10, 20)
	s := startS3(t)
	s.createBucket(t, "snapshots")
	// The cut comes after the first 8 MiB part is uploaded and while the second is read.
	proxy := startCutProxy(t, strings.TrimPrefix(e.URL, "http://"), 12<<20)
	twoMembers := func(base env) env {
		return base.with(snapshot.EnvEtcdEndpoints, proxy.URL+","+e.URL, snapshot.EnvEtcdMemberNames, "dying,healthy")
	}

	t.Run("s3", func(t *testing.T) {
		r, code := runSnapshotAgent(t, twoMembers(s3Env(e, s, "snapshots", "c/retry.db", "uid-1")))
		checkComplete(t, r, code, "s3://snapshots/c/retry.db", "healthy")
		if proxy.cuts.Load() == 0 {
			t.Fatal("the proxy never cut a stream: the test proves nothing")
		}
		client := s.store(t, "snapshots", "x").Client()
		ups, err := client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("snapshots")})
		if err != nil || len(ups.Uploads) != 0 {
			t.Errorf("multipart uploads left: %v %v", err, ups)
		}
		list, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("snapshots")})
		if err != nil || len(list.Contents) != 1 || aws.ToInt64(list.Contents[0].Size) != r.SizeBytes {
			t.Errorf("objects: %v %+v", err, list)
		}
	})

	t.Run("pvc", func(t *testing.T) {
		cuts := proxy.cuts.Load()
		dir := t.TempDir()
		r, code := runSnapshotAgent(t, twoMembers(pvcEnv(e, dir, "uid-1")))
		checkComplete(t, r, code, "pvc://backups/c/snap.db", "healthy")
		if proxy.cuts.Load() == cuts {
			t.Fatal("the proxy never cut a stream")
		}
		if got := listNames(t, dir); strings.Join(got, " ") != "snap.db snap.db.owner" {
			t.Errorf("directory holds %v", got)
		}
	})
}

// sameArtifact compares two results but for the completion time: a retry reports the store's
// (S3 Last-Modified, the file's mtime), the first run its own clock after verifying.
func sameArtifact(a, b snapshot.SnapshotResult) bool {
	if _, err := time.Parse(time.RFC3339, a.CompletionTime); err != nil {
		return false
	}
	a.CompletionTime, b.CompletionTime = "", ""
	return reflect.DeepEqual(a, b)
}

func listNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// With authentication on: the password comes from its file, a wrong one is AuthFailed and none
// at all CredentialsMissing; neither is retried on another member.
func TestSnapshotAgentAuth(t *testing.T) {
	e := startEtcd(t)
	fill(t, e.URL, 10, 0)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.URL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", "r00t-password"); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	cli.Close()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("r00t-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("wrong-password"), 0o600); err != nil {
		t.Fatal(err)
	}
	twice := e.URL + "," + e.URL // a second member that would work must not be tried
	base := pvcEnv(e, filepath.Join(dir, "out"), "uid-1").with(snapshot.EnvEtcdEndpoints, twice, snapshot.EnvEtcdMemberNames, "c-0,c-1")
	for _, tc := range []struct {
		name string
		env  env
		want snapshot.Reason
	}{
		{"wrong password", base.with(snapshot.EnvEtcdUsername, "root", snapshot.EnvEtcdPasswordFile, bad), snapshot.ReasonAuthFailed},
		{"no credentials", base, snapshot.ReasonCredentialsMissing},
		{"root", base.with(snapshot.EnvEtcdUsername, "root", snapshot.EnvEtcdPasswordFile, good), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, code := runSnapshotAgent(t, tc.env)
			if tc.want == "" {
				checkComplete(t, r, code, "pvc://backups/c/snap.db", "c-0")
				return
			}
			if code != 1 || r.Reason != tc.want || strings.Contains(r.Message, "member c-1") {
				t.Errorf("exit %d %+v, want %s from the first member alone", code, r, tc.want)
			}
			if strings.Contains(r.Message, "r00t-password") || strings.Contains(r.Message, "wrong-password") {
				t.Errorf("a password leaked: %s", r.Message)
			}
		})
	}
}
