//go:build e2e

package e2eutil

import (
	"context"
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

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/manager"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// AgentImage is the operator image the e2e operators pass as --agent-image: the node agents run
// any <registry>/etcd-operator:<tag> image as the operator binary ($LC_OPERATOR_BIN).
const AgentImage = "registry.local/etcd-operator:e2e"

// NodeGracePeriod is the in-process operator's wait before replacing tmpfs members of a
// NotReady node: shorter than the default so that a stopped-node scenario takes a minute.
const NodeGracePeriod = 20 * time.Second

// PVCNodeGracePeriod is the in-process operator's wait before replacing members with a PVC on a
// NotReady node (5 minutes by default).
const PVCNodeGracePeriod = 30 * time.Second

// StartInProcess runs the operator's two controllers in the test binary (fast to start, easy
// to debug); their etcd clients dial into the cluster network.
func StartInProcess(c *framework.Cluster) error {
	mgr, err := ctrl.NewManager(c.Config, ctrl.Options{Scheme: Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		Cache: cache.Options{ByObject: tlsmaterial.CacheByObject()}})
	if err != nil {
		return err
	}
	src := tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	access := etcdaccess.NewPooled(mgr.GetClient(), ClusterDialer(c), src)
	if err := manager.Setup(mgr, access, src, manager.Options{Workers: 4, ClusterDomain: c.ClusterDomain(),
		ImageRepository: v1alpha2.DefaultImageRepository, AgentImage: AgentImage, NodeGracePeriod: NodeGracePeriod,
		PVCNodeGracePeriod: PVCNodeGracePeriod}); err != nil {
		return err
	}
	go func() { _ = mgr.Start(context.Background()) }()
	return nil
}

var (
	inProcessOnce sync.Once
	inProcessErr  error
)

// InProcessCluster returns the shared local cluster with the CRDs installed and the operator's
// controllers running in this test binary (started once per binary).
func InProcessCluster(t *testing.T) *framework.Cluster {
	t.Helper()
	c := framework.Shared(t)
	inProcessOnce.Do(func() {
		if inProcessErr = InstallCRDs(c); inProcessErr == nil {
			inProcessErr = StartInProcess(c)
		}
	})
	if inProcessErr != nil {
		t.Fatalf("operator: %v", inProcessErr)
	}
	return c
}

// Where an operator process serves metrics and probes inside the cluster netns (CoreDNS has
// 18080 and 18181 there).
// OperatorMetricsAddr is where an operator started by these helpers serves /metrics inside the
// cluster netns (a Prometheus in the netns scrapes it there).
const OperatorMetricsAddr = metricsAddr

const (
	metricsAddr = "127.0.0.1:19080"
	probeAddr   = "127.0.0.1:19081"
)

// Operator is the real operator binary running inside the cluster network, as it would in a Pod.
type Operator struct {
	c       *framework.Cluster
	bin     string
	args    []string
	logPath string

	mu  sync.Mutex
	cmd *exec.Cmd
	// env is added to the next process' environment (Arm).
	env []string
	// exited is closed when the running process has been reaped.
	exited chan struct{}
}

// StartOperator builds (or takes $LC_OPERATOR_BIN) and starts the operator; it is killed with
// the test. extra flags are appended to the defaults.
func StartOperator(t testing.TB, c *framework.Cluster, extra ...string) *Operator {
	t.Helper()
	bin, err := OperatorBinary(c)
	if err != nil {
		t.Fatal(err)
	}
	return StartOperatorFrom(t, c, bin, append([]string{"--agent-image=" + AgentImage}, extra...)...)
}

// StartOperatorFrom starts the operator binary bin (another build, e.g. a previous release);
// it is killed with the test.
func StartOperatorFrom(t testing.TB, c *framework.Cluster, bin string, extra ...string) *Operator {
	t.Helper()
	o := &Operator{c: c, bin: bin, logPath: filepath.Join(c.State.Dir, "operator.log"),
		args: append([]string{"--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=" + probeAddr,
			"--leader-elect=false"}, extra...)}
	if err := o.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Kill() })
	return o
}

// OperatorBinary is $LC_OPERATOR_BIN, or this tree's operator built for c.
func OperatorBinary(c *framework.Cluster) (string, error) {
	return BuildOperatorBinary(filepath.Dir(c.State.Dir))
}

// BuildOperatorBinary is $LC_OPERATOR_BIN or a build of ./operator/cmd/manager in
// <stateRoot>/.bin, next to the other binaries the framework builds: what a suite passes as
// framework.Options.OperatorBin before its cluster exists, so the node agents run it for
// etcd-operator images (an operator chart's Pods, snapshot and restore agents).
func BuildOperatorBinary(stateRoot string) (string, error) {
	if b := os.Getenv("LC_OPERATOR_BIN"); b != "" {
		return b, nil
	}
	root, err := localcluster.FindModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(stateRoot, ".bin", "manager")
	return out, localcluster.BuildBinary(root, "./operator/cmd/manager", out)
}

// Upgrade kills the running operator and starts the binary bin in its place, with the same flags.
func (o *Operator) Upgrade(bin string) error {
	if err := o.Kill(); err != nil {
		return err
	}
	o.mu.Lock()
	o.bin = bin
	o.mu.Unlock()
	return o.Start()
}

// Start runs a new operator process (after Kill).
func (o *Operator) Start() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	logf, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := localcluster.InClusterCommand(context.Background(), o.c.State, o.bin, o.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(cmd.Env, o.env...)
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	o.cmd, o.exited = cmd, exited
	return o.waitReady(exited)
}

// waitReady waits for /readyz, or fails as soon as the process exits.
func (o *Operator) waitReady(exited <-chan struct{}) error {
	deadline := time.After(time.Minute)
	for {
		if resp, err := o.get(context.Background(), "http://"+probeAddr+"/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("the operator exited while starting:\n%s", o.LogTail(20))
		case <-deadline:
			return fmt.Errorf("the operator was not ready within a minute:\n%s", o.LogTail(20))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// get fetches a URL inside the cluster netns.
func (o *Operator) get(ctx context.Context, url string) (*http.Response, error) {
	hc := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return o.c.DialContext(ctx, network, addr)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	return hc.Do(req)
}

// Kill sends SIGKILL — no graceful shutdown, no deferred cleanup — and waits until it is reaped.
func (o *Operator) Kill() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil {
		return nil
	}
	err := o.cmd.Process.Signal(syscall.SIGKILL)
	<-o.exited
	o.cmd = nil
	return err
}

// Pid is the running process' ID (the unshare/nsenter wrappers exec into the operator).
func (o *Operator) Pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cmd == nil {
		return 0
	}
	return o.cmd.Process.Pid
}

// LogTail returns the end of the operator's log, for failure messages.
func (o *Operator) LogTail(n int) string {
	b, _ := os.ReadFile(o.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// RSSBytes is the process' resident set size.
func (o *Operator) RSSBytes() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.Pid()))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", o.Pid())
}

// APIWrites is the number of mutating requests (POST, PUT, PATCH, DELETE) the operator has sent
// to the apiserver since it started, from client-go's request metrics.
func (o *Operator) APIWrites(ctx context.Context) (float64, error) {
	families, err := o.Metrics(ctx)
	if err != nil {
		return 0, err
	}
	return countWrites(families)
}

// Metrics scrapes the operator's metrics endpoint.
func (o *Operator) Metrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	hc := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return o.c.DialContext(ctx, network, addr)
		}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Gauge is the value of the gauge name whose labels include want; ok=false when there is none.
func Gauge(families map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	for _, m := range families[name].GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && have[k] == v
		}
		if match {
			return value(m), true
		}
	}
	return 0, false
}

// value is a gauge's or a counter's value, or a histogram's sample count.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetGauge().GetValue()
}

func countWrites(families map[string]*dto.MetricFamily) (float64, error) {
	fam, ok := families["rest_client_requests_total"]
	if !ok {
		return 0, fmt.Errorf("no rest_client_requests_total in the operator's metrics")
	}
	var n float64
	for _, m := range fam.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "method" && strings.Contains("POST PUT PATCH DELETE", l.GetValue()) {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n, nil
}

// StartSuiteOperator installs the CRDs into the shared cluster and starts the operator binary,
// whose last logLines lines are logged if the test fails: how a suite that tests the real
// binary begins.
func StartSuiteOperator(t *testing.T, c *framework.Cluster, logLines int, extra ...string) *Operator {
	t.Helper()
	if err := InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	op := StartOperator(t, c, extra...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log, last lines:\n%s", op.LogTail(logLines))
		}
	})
	return op
}
