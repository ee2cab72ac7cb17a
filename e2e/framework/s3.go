package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sys/unix"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// S3Region is the region every test S3 server answers for.
const S3Region = "us-east-1"

const (
	s3HealthPath = "/health"
	// Ports are handed out from here, below Linux's ephemeral range (32768+): an outgoing
	// connection in the cluster netns can then never take the port of a stopped server,
	// so Start after Stop always gets its address back.
	s3FirstPort = 17070
	s3PortRange = 200
)

// S3Credentials are an access key pair.
type S3Credentials struct {
	AccessKeyID, SecretAccessKey string
}

// S3 is a versitygw S3 server (posix backend) for one test. It runs inside the local
// cluster's network namespace and listens on the bridge address, so member Pods (routed
// through the bridge), the operator (a process in that netns) and the test process (through
// the cluster's dialer, see HTTPClient and Client) all reach the same Endpoint. Each server
// has its own port, data folder and random root credentials.
type S3 struct {
	// Endpoint is http://10.244.0.1:<port>, the URL for Pods and the operator.
	Endpoint string
	// Root are the only credentials the server accepts.
	Root    S3Credentials
	DataDir string
	LogPath string
	Version string

	cluster *Cluster
	bin     string
	addr    string
	port    int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	closed bool
}

// StartS3 starts an S3 server on c for tb, with its data under tb's temp dir, and removes it
// when tb ends. Several may run on one cluster; each is independent.
func StartS3(tb testing.TB, c *Cluster) *S3 {
	tb.Helper()
	s, err := StartS3Process(c, filepath.Join(tb.TempDir(), "s3"))
	if err != nil {
		tb.Fatalf("S3: %v", err)
	}
	tb.Logf("S3 (versitygw %s) at %s, data %s, log %s", s.Version, s.Endpoint, s.DataDir, s.LogPath)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("versitygw log, last lines:\n%s", s.LogTail(40))
		}
		if err := s.Close(); err != nil {
			tb.Errorf("S3: %v", err)
		}
	})
	return s
}

// StartS3Process is StartS3 without a test: dataDir is created if missing and kept; the
// caller must call Close. The server runs inside the cluster's netns, so tearing the
// cluster down ends it even when the test binary dies without cleaning up.
func StartS3Process(c *Cluster, dataDir string) (*S3, error) {
	bin, version, err := localcluster.ResolveVersitygw(localcluster.Options{StateRoot: c.root})
	if err != nil {
		return nil, err
	}
	if err := prepareS3Dir(dataDir); err != nil {
		return nil, err
	}
	port, err := reserveS3Port(c)
	if err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(localcluster.GatewayIP, strconv.Itoa(port))
	s := &S3{Endpoint: "http://" + addr, Root: randomS3Credentials(), DataDir: dataDir, Version: version,
		LogPath: filepath.Join(c.State.Dir, "logs", fmt.Sprintf("versitygw-%d.log", port)),
		cluster: c, bin: bin, addr: addr, port: port}
	if err := s.Start(); err != nil {
		releaseS3Port(c, port)
		return nil, err
	}
	return s, nil
}

// prepareS3Dir creates dir and checks that it takes user xattrs: the posix backend keeps
// object metadata there, and without them every upload fails with an obscure error.
func prepareS3Dir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	const probe = "user.etcd-operator-probe"
	if err := unix.Setxattr(dir, probe, []byte("1"), 0); err != nil {
		return fmt.Errorf("S3 data dir %s: its filesystem does not take user xattrs, which versitygw's posix backend needs: %w", dir, err)
	}
	return unix.Removexattr(dir, probe)
}

// s3Ports are the ports this process has handed out, per cluster: a stopped server's port
// looks free in the netns but must stay its own.
var s3Ports = struct {
	sync.Mutex
	used map[string]bool
}{used: map[string]bool{}}

func s3PortKey(c *Cluster, port int) string { return c.Name + ":" + strconv.Itoa(port) }

// reserveS3Port finds a port free on the bridge address inside c's netns by binding it there.
func reserveS3Port(c *Cluster) (int, error) {
	s3Ports.Lock()
	defer s3Ports.Unlock()
	for port := s3FirstPort; port < s3FirstPort+s3PortRange; port++ {
		if s3Ports.used[s3PortKey(c, port)] {
			continue
		}
		ln, err := c.Dialer.Listen("tcp", net.JoinHostPort(localcluster.GatewayIP, strconv.Itoa(port)))
		if err != nil {
			continue // taken by another process in the netns
		}
		ln.Close()
		s3Ports.used[s3PortKey(c, port)] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port in %d-%d inside netns %s", s3FirstPort, s3FirstPort+s3PortRange-1, c.State.Netns)
}

func releaseS3Port(c *Cluster, port int) {
	s3Ports.Lock()
	defer s3Ports.Unlock()
	delete(s3Ports.used, s3PortKey(c, port))
}

func randomS3Credentials() S3Credentials {
	return S3Credentials{AccessKeyID: "LC" + strings.ToUpper(randomHex(9)), SecretAccessKey: randomHex(20)}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
}

// BadCredentials are the root access key with a wrong secret: requests fail their signature
// check (403 SignatureDoesNotMatch), as with a mistyped or rotated Secret.
func (s *S3) BadCredentials() S3Credentials {
	return S3Credentials{AccessKeyID: s.Root.AccessKeyID, SecretAccessKey: randomHex(20)}
}

// UnknownCredentials have an access key the server does not know. versitygw answers
// 404 XAdminUserNotFound where AWS would answer 403 InvalidAccessKeyId.
func (s *S3) UnknownCredentials() S3Credentials { return randomS3Credentials() }

// Pid is the server's process ID, 0 when it is not running (benchmarks read its CPU time).
func (s *S3) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start (re)starts the server on its address and data folder and waits until it serves.
// After Stop it comes back with the same Endpoint, credentials and objects.
func (s *S3) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("S3 server closed")
	}
	if s.cmd != nil {
		return errors.New("S3 server already running")
	}
	if err := s.spawn(); err != nil {
		return err
	}
	if err := s.waitServing(30 * time.Second); err != nil {
		_ = s.stopLocked()
		return err
	}
	return nil
}

func (s *S3) spawn() error {
	if err := os.MkdirAll(filepath.Dir(s.LogPath), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := s.cluster.InClusterCommand(context.Background(), s.bin, "--port", s.addr, "--region", S3Region,
		"--health", s3HealthPath, "posix", s.DataDir)
	// In the environment rather than on the command line, where any `ps` would show them.
	cmd.Env = append(cmd.Env, "ROOT_ACCESS_KEY_ID="+s.Root.AccessKeyID, "ROOT_SECRET_ACCESS_KEY="+s.Root.SecretAccessKey)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	s.cmd, s.exited = cmd, exited
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	return nil
}

// waitServing polls the health endpoint through the cluster netns until it answers 200,
// failing early when the process exits.
func (s *S3) waitServing(timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: s.cluster.DialContext, DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	var last error
	for {
		resp, err := client.Get(s.Endpoint + s3HealthPath)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %s", s3HealthPath, resp.Status)
		}
		last = err
		select {
		case <-s.exited:
			return fmt.Errorf("versitygw exited at start (%s); log tail:\n%s", s.cmd.ProcessState, s.logTail(20))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("versitygw not serving on %s after %s: %v; log tail:\n%s", s.addr, timeout, last, s.logTail(20))
		}
	}
}

// Running reports whether the server process is alive.
func (s *S3) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Stop takes the server down (SIGTERM, SIGKILL after 10 s), keeping its data for Start.
// It returns an error when the server had exited on its own, i.e. crashed during the test.
func (s *S3) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

func (s *S3) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	select {
	case <-exited:
		return fmt.Errorf("versitygw exited before Stop (%s); log tail:\n%s", cmd.ProcessState, s.logTail(20))
	default:
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return nil
	case <-time.After(10 * time.Second):
	}
	// Still draining connections (its graceful shutdown waits for clients' idle keep-alive
	// connections, e.g. the operator's): the server is going either way, so this is no failure
	// of the test. It may also have exited just now.
	err := cmd.Process.Kill()
	<-exited
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// Close stops the server for good and gives its port back.
func (s *S3) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.stopLocked()
	releaseS3Port(s.cluster, s.port)
	return err
}

// HTTPClient is an HTTP client for the test process whose connections are dialed inside
// the cluster netns, where Endpoint's address lives.
func (s *S3) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: s.cluster.DialContext, MaxIdleConnsPerHost: 8}}
}

// Client is an S3 client for the test process with the root credentials; opts adjust it
// (e.g. RetryMaxAttempts=1 to see an outage at once).
func (s *S3) Client(opts ...func(*s3.Options)) *s3.Client { return s.ClientWith(s.Root, opts...) }

// ClientWith is an S3 client for the test process with the given credentials.
func (s *S3) ClientWith(cr S3Credentials, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:       S3Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true, // bucket.10.244.0.1 resolves nowhere
		Credentials:  credentials.NewStaticCredentialsProvider(cr.AccessKeyID, cr.SecretAccessKey, ""),
		HTTPClient:   s.HTTPClient(),
	}, opts...)
}

// CreateBucket creates a bucket (names need at least 3 characters).
func (s *S3) CreateBucket(ctx context.Context, name string) error {
	_, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

// LogTail returns the last n lines of the server's log, for failure messages.
func (s *S3) LogTail(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logTail(n)
}

func (s *S3) logTail(n int) string {
	b, _ := os.ReadFile(s.LogPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
