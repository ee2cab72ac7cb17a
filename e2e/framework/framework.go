// Package framework gives e2e tests a local cluster (e2e/localcluster): start it once
// per test binary, get clients, dial into the cluster network, inject faults.
//
//	func TestMain(m *testing.M) { framework.Main(m, framework.Options{}) }
//	func TestX(t *testing.T)    { c := framework.Shared(t); ... }
//
// The cluster's supervisor watches the test binary: if the binary dies (timeout,
// panic, SIGKILL) the cluster is torn down anyway. LC_KEEP=1 keeps it running.
package framework

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

// Options of a test cluster; zero values give 3 nodes and a name unique to the test binary.
type Options struct {
	Name  string
	Nodes int // node agents; default 3; use -1 for none (a control plane only, or real nodes only)
	// RealNodes are kubelets with containerd running the images of ImagesDir, numbered after the
	// node agents (Nodes+1..Nodes+RealNodes). Faults act on them by kind (see realnode.go).
	RealNodes int
	// ImagesDir holds the image tarballs (`make images`) imported into every real node; default
	// $LC_IMAGES_DIR (the Makefile's E2E_ENV sets it to bin/images).
	ImagesDir   string
	NoKubeProxy bool
	// ClusterDomain is the cluster's DNS domain; default localcluster.DefaultClusterDomain.
	ClusterDomain string
	OperatorBin   string
	StateRoot     string
	// Scheme for the controller-runtime client; default client-go's scheme.
	Scheme *runtime.Scheme
}

// Cluster is a running local cluster.
type Cluster struct {
	Name       string
	State      *localcluster.State
	Kubeconfig string // host kubeconfig (https://127.0.0.1:<port>)
	Config     *rest.Config
	Client     client.Client
	Kube       kubernetes.Interface
	// Dialer dials inside the cluster netns (pod IPs, 10.244.0.1, Service IPs).
	Dialer localcluster.Dialer
	// UpTime is how long `up` took, for benchmarks and logs.
	UpTime time.Duration

	root    string
	control *localcluster.ControlClient
	once    sync.Once
	downErr error
}

// DialContext dials addr inside the cluster netns; host may be a cluster DNS name
// (resolved by the cluster's CoreDNS). Use it as grpc/etcd client dialer.
func (c *Cluster) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.Dialer.DialResolving(ctx, network, addr)
}

// Start brings up a cluster for tb and tears it down in tb.Cleanup.
func Start(tb testing.TB, o Options) *Cluster {
	tb.Helper()
	c, err := StartCluster(context.Background(), o)
	if err != nil {
		tb.Fatalf("local cluster: %v", err)
	}
	tb.Logf("local cluster %s up in %s (kubeconfig %s)", c.Name, c.UpTime.Round(time.Millisecond), c.Kubeconfig)
	tb.Cleanup(func() {
		start := time.Now()
		if err := c.Down(); err != nil {
			tb.Errorf("local cluster down: %v", err)
		}
		tb.Logf("local cluster %s down in %s", c.Name, time.Since(start).Round(time.Millisecond))
	})
	return c
}

// StartCluster brings up a cluster; the caller must call Down.
func StartCluster(ctx context.Context, o Options) (*Cluster, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("e2e tests need root (network namespaces, mounts)")
	}
	lo, err := o.localOptions()
	if err != nil {
		return nil, err
	}
	bin, err := supervisorBinary(lo)
	if err != nil {
		return nil, err
	}
	if lo.Nodes > 0 { // built before the clock starts: UpTime measures the cluster, not the compiler
		if lo.NodeAgentBin, err = localcluster.EnsureNodeAgent(lo); err != nil {
			return nil, err
		}
	}
	owner := os.Getpid()
	if os.Getenv("LC_KEEP") == "1" {
		owner = 0
	}
	start := time.Now()
	st, err := localcluster.Up(ctx, lo, localcluster.UpOptions{SupervisorBin: bin, OwnerPID: owner})
	if err != nil {
		return nil, err
	}
	c, err := connect(st, o)
	if err != nil {
		_ = localcluster.Down(lo.StateRoot, lo.Name)
		return nil, err
	}
	c.UpTime = time.Since(start)
	return c, nil
}

func (o Options) localOptions() (localcluster.Options, error) {
	lo := localcluster.Options{Name: o.Name, Nodes: o.Nodes, RealNodes: o.RealNodes, ImagesDir: o.ImagesDir, NoKubeProxy: o.NoKubeProxy,
		OperatorBin: o.OperatorBin, StateRoot: o.StateRoot, ClusterDomain: o.ClusterDomain}
	switch {
	case o.Nodes == 0:
		lo.Nodes = 3
	case o.Nodes < 0:
		lo.Nodes = 0
	}
	if lo.StateRoot == "" {
		lo.StateRoot = localcluster.DefaultStateRoot
	}
	if lo.OperatorBin == "" {
		// Pods of the operator's image (its snapshot and restore agents) run this build.
		lo.OperatorBin = os.Getenv("LC_OPERATOR_BIN")
	}
	if lo.Name == "" {
		lo.Name = uniqueName()
	}
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		return lo, err
	}
	lo.ModuleRoot = root
	return lo, nil
}

// uniqueName is <package folder>-<pid>: parallel test binaries never share a cluster.
func uniqueName() string {
	wd, _ := os.Getwd()
	base := strings.ToLower(filepath.Base(wd))
	var b strings.Builder
	for _, r := range base {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	short := b.String()
	if len(short) > 10 {
		short = short[:10]
	}
	if short == "" {
		short = "e2e"
	}
	return fmt.Sprintf("%s-%d", short, os.Getpid())
}

// supervisorBinary is $LC_LOCALCLUSTER_BIN or a build of ./e2e/cmd/localcluster.
func supervisorBinary(lo localcluster.Options) (string, error) {
	if b := os.Getenv("LC_LOCALCLUSTER_BIN"); b != "" {
		return b, nil
	}
	out := filepath.Join(lo.StateRoot, ".bin", "localcluster")
	return out, localcluster.BuildBinary(lo.ModuleRoot, "./e2e/cmd/localcluster", out)
}

func connect(st *localcluster.State, o Options) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", st.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	scheme := o.Scheme
	if scheme == nil {
		scheme = clientgoscheme.Scheme
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Cluster{Name: st.Name, State: st, Kubeconfig: st.Kubeconfig, Config: cfg, Client: cl, Kube: kube,
		Dialer: localcluster.Dialer{Netns: st.Netns}, root: filepath.Dir(st.Dir),
		control: localcluster.NewControlClient(st.ControlSocket)}, nil
}

// ClusterDomain is the running cluster's DNS domain (what its CoreDNS serves and its Pods search).
func (c *Cluster) ClusterDomain() string {
	if c.State.ClusterDomain == "" { // a state written before the domain was recorded
		return localcluster.DefaultClusterDomain
	}
	return c.State.ClusterDomain
}

// Down tears the cluster down (once); with LC_KEEP=1 it leaves it running.
func (c *Cluster) Down() error {
	c.once.Do(func() {
		if os.Getenv("LC_KEEP") == "1" {
			fmt.Fprintf(os.Stderr, "LC_KEEP=1: cluster %s left running; KUBECONFIG=%s; remove with `localcluster down --name %s`\n",
				c.Name, c.Kubeconfig, c.Name)
			return
		}
		c.downErr = localcluster.Down(c.root, c.Name)
	})
	return c.downErr
}

var (
	sharedMu   sync.Mutex
	shared     *Cluster
	sharedErr  error
	sharedOpts Options
)

// Main runs the package's tests against one shared cluster and tears it down after
// them. Call it from TestMain. The cluster starts lazily on the first Shared call.
func Main(m *testing.M, o Options) { os.Exit(Run(m, o)) }

// Run is Main without the exit: it returns the exit code, so a TestMain can report on its
// tests after the cluster is down.
func Run(m *testing.M, o Options) int {
	sharedOpts = o
	// controller-runtime prints a stack trace when its logger is never set; tests may set their own later.
	ctrllog.SetLogger(logr.Discard())
	code := m.Run()
	sharedMu.Lock()
	if shared != nil {
		start := time.Now()
		if err := shared.Down(); err != nil {
			fmt.Fprintf(os.Stderr, "local cluster down: %v\n", err)
			code = 1
		}
		fmt.Fprintf(os.Stderr, "local cluster %s down in %s\n", shared.Name, time.Since(start).Round(time.Millisecond))
	}
	sharedMu.Unlock()
	return code
}

// Shared returns the test binary's cluster, starting it on first use. Without Main
// the supervisor still tears it down when the test binary exits.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = StartCluster(context.Background(), sharedOpts)
		if sharedErr == nil {
			tb.Logf("local cluster %s up in %s", shared.Name, shared.UpTime.Round(time.Millisecond))
		}
	}
	if sharedErr != nil {
		tb.Fatalf("local cluster: %v", sharedErr)
	}
	return shared
}
