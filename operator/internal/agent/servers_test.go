package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Servers for the integration tests: real etcd and versitygw from the tools cache, on loopback.

const testEtcdVersion = "v3.7.3"

// tool is a binary of the tools cache. A missing one fails the test rather than skipping it,
// as envtest does without KUBEBUILDER_ASSETS: an integration test that silently skipped would
// prove nothing. `make tools` builds the cache ($ETCD_OPERATOR_TOOLS, which `make test-unit`
// exports; default ~/.cache/etcd-operator-tools).
func tool(t testing.TB, dir, name string) string {
	t.Helper()
	root := os.Getenv("ETCD_OPERATOR_TOOLS")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "etcd-operator-tools")
	}
	bin := filepath.Join(root, dir, name)
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing (%v): run the tests through `make test-unit`, which builds the tools cache with `make tools`", bin, err)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs cmd until the test ends; its output goes to a file shown on failure.
func startProcess(t testing.TB, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out-*")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), tailBytes(b, 4000))
		}
	})
	return cmd
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// testEtcd is a one-member etcd.
type testEtcd struct {
	URL, DataDir string
	cmd          *exec.Cmd
}

// peerURL is a free loopback peer URL.
func peerURL(t testing.TB) string { return fmt.Sprintf("http://127.0.0.1:%d", freePort(t)) }

// startEtcd runs a plaintext one-member etcd on loopback with an empty data directory.
func startEtcd(t testing.TB, extra ...string) *testEtcd {
	t.Helper()
	return startEtcdAt(t, "m1", t.TempDir(), "tok", peerURL(t), extra...)
}

// startEtcdAt runs a plaintext one-member etcd on loopback; dataDir may hold a restored member
// (then name and peer must be those it was restored with).
func startEtcdAt(t testing.TB, name, dataDir, token, peer string, extra ...string) *testEtcd {
	t.Helper()
	client := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	args := append([]string{"--name=" + name, "--data-dir=" + dataDir,
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + name + "=" + peer, "--initial-cluster-state=new",
		"--initial-cluster-token=" + token, "--log-level=warn"}, extra...)
	cmd := startProcess(t, exec.Command(tool(t, "etcd-"+testEtcdVersion, "etcd"), args...))
	e := &testEtcd{URL: client, DataDir: dataDir, cmd: cmd}
	e.client(t) // waits until it serves
	return e
}

// client is a standalone client once etcd answers Status.
func (e *testEtcd) client(t testing.TB) etcd.Client {
	t.Helper()
	cli, err := etcdaccess.DialFiles(context.Background(), etcdaccess.Files{Endpoints: []string{e.URL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cli.Status(context.Background(), e.URL)
		if err == nil {
			return cli
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s never answered: %v", e.URL, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (e *testEtcd) stop() {
	_ = e.cmd.Process.Kill()
	_ = e.cmd.Wait()
}

// testS3 is a versitygw on loopback with a posix backend in a temporary directory.
type testS3 struct {
	URL, AccessKey, SecretKey, dataDir string
	port                               int
	cmd                                *exec.Cmd
	t                                  testing.TB
}

func startS3(t testing.TB) *testS3 {
	t.Helper()
	s := &testS3{AccessKey: "agent-test", SecretKey: "agent-test-secret-0123456789", dataDir: t.TempDir(), port: freePort(t), t: t}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s.port)
	s.start()
	return s
}

func (s *testS3) start() {
	cmd := exec.Command(tool(s.t, "versitygw-v1.8.0", "versitygw"), "--port", fmt.Sprintf("127.0.0.1:%d", s.port),
		"--region", "us-east-1", "posix", s.dataDir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+s.AccessKey, "ROOT_SECRET_ACCESS_KEY="+s.SecretKey)
	s.cmd = startProcess(s.t, cmd)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("versitygw never listened: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *testS3) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// config is an S3 location on this server with its keys.
func (s *testS3) config(bucket, key string) snapshot.S3Config {
	return snapshot.S3Config{Endpoint: s.URL, Bucket: bucket, Key: key, Region: "us-east-1", ForcePathStyle: true,
		AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}
}

// store is an S3 store for bucket/key.
func (s *testS3) store(t testing.TB, bucket, key string) *snapshot.S3Store {
	t.Helper()
	st, err := snapshot.NewS3Store(s.config(bucket, key))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (s *testS3) createBucket(t testing.TB, bucket string) {
	t.Helper()
	_, err := s.store(t, bucket, "x").Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
}

// cutProxy forwards TCP to a backend, but cuts a connection once it has carried limit bytes
// from the backend: a member that dies in the middle of a snapshot stream.
type cutProxy struct {
	URL   string
	cuts  atomic.Int32
	l     net.Listener
	wg    sync.WaitGroup
	limit int64
}

func startCutProxy(t testing.TB, backend string, limit int64) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{URL: "http://" + l.Addr().String(), l: l, limit: limit}
	p.wg.Add(1)
	go p.serve(backend)
	t.Cleanup(func() { _ = l.Close(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(backend string) {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", backend)
		if err != nil {
			_ = c.Close()
			continue
		}
		go func() { _, _ = io.Copy(b, c); _ = b.Close() }()
		go func() {
			n, _ := io.CopyN(c, b, p.limit)
			if n == p.limit {
				p.cuts.Add(1)
			}
			_ = c.Close()
			_ = b.Close()
		}()
	}
}
