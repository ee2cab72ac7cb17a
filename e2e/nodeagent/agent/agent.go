package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/images"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/network"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/podfiles"
	"github.com/cozystack/etcd-operator/e2e/nodeagent/provider"
)

// KubeletVersion is what the Node reports.
const KubeletVersion = "v1.37.2"

// Agent is a running node agent.
type Agent struct {
	Provider *provider.Provider
	node     *nodeutil.Node
	opts     Options
	client   kubernetes.Interface
	cancel   context.CancelFunc
}

// Start registers the node and starts serving pods. restConfig may be nil (then --kubeconfig is
// used); self is the nodeagent binary that runs container-init.
func Start(ctx context.Context, o Options, restConfig *rest.Config, self string, log *slog.Logger) (*Agent, error) {
	if restConfig == nil {
		// virtual-kubelet builds a default client from $KUBECONFIG before taking ours; keep it quiet.
		_ = os.Setenv("KUBECONFIG", o.Kubeconfig)
		var err error
		if restConfig, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig); err != nil {
			return nil, err
		}
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	vklog.L = vkslog.FromSlog(log)
	if o.BootID, err = loadBootID(o.StateDir); err != nil {
		return nil, fmt.Errorf("boot ID: %w", err)
	}
	netCfg, err := bridgeConfig(ctx, o.Bridge, o.NodeIP)
	if err != nil {
		return nil, err
	}
	ipam, err := network.NewIPAM(o.PodCIDR, filepath.Join(o.StateDir, "ipam.json"))
	if err != nil {
		return nil, err
	}
	apiHost, apiPort := apiServerAddress(ctx, client, restConfig.Host)
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p, err := provider.New(runCtx, provider.Config{
		NodeName: o.NodeName, NodeIP: o.NodeIP, Client: client,
		Images:  images.Table{ToolsDir: o.ToolsDir, OperatorBinary: o.OperatorBinary},
		Network: netCfg, NetnsPrefix: o.NetnsPrefix, IPAM: ipam, StateDir: o.StateDir, BootID: o.BootID,
		DNS:  podfiles.DNS{Nameserver: o.ClusterDNS, Domain: o.ClusterDomain},
		Self: self, APIServerHost: apiHost, APIServerPort: apiPort, Log: log,
	})
	if err != nil {
		cancel()
		return nil, err
	}
	pods, err := nodePods(ctx, client, o.NodeName)
	if err != nil {
		cancel()
		return nil, err
	}
	p.SweepOrphans(ctx, uids(pods))
	p.AdoptTerminal(ctx, pods)
	if err := p.WatchVolumeSources(runCtx, o.volumeResync()); err != nil {
		cancel()
		return nil, err
	}
	n, err := nodeutil.NewNode(o.NodeName, func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		describeNode(pc.Node, o)
		return p, nil, nil // nil NodeProvider: virtual-kubelet's naive provider with Lease heartbeats
	}, nodeOptions(o, client)...)
	if err != nil {
		cancel()
		return nil, err
	}
	go func() { _ = n.Run(runCtx) }()
	if err := n.WaitReady(ctx, 2*time.Minute); err != nil {
		cancel()
		return nil, err
	}
	// WaitReady returns before the Ready condition reaches the API; callers expect it there.
	if err := waitNodeReady(ctx, client, o.NodeName, time.Minute); err != nil {
		cancel()
		return nil, err
	}
	go sweepPeriodically(runCtx, client, p, o.NodeName, o.sweepInterval())
	return &Agent{Provider: p, node: n, opts: o, client: client, cancel: cancel}, nil
}

// sweepPeriodically cleans up after terminal pods deleted later (virtual-kubelet never hands
// them to the provider) until ctx ends.
func sweepPeriodically(ctx context.Context, client kubernetes.Interface, p *provider.Provider, nodeName string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = sweepOrphans(ctx, client, p, nodeName)
		}
	}
}

func nodeOptions(o Options, client kubernetes.Interface) []nodeutil.NodeOpt {
	mux := http.NewServeMux()
	opts := []nodeutil.NodeOpt{
		nodeutil.WithClient(client),
		func(c *nodeutil.NodeConfig) error {
			c.NumWorkers = 4
			c.InformerResyncPeriod = time.Minute
			// The provider resolves env vars itself, at container start, when status.podIP is known.
			c.SkipDownwardAPIResolution = true
			if o.ListenAddr != "" {
				c.HTTPListenAddr = o.ListenAddr
			}
			// TLS with RequireAndVerifyClientCert against --client-ca authenticates callers
			// (the apiserver's kubelet client); every verified caller may use the API.
			c.Handler = nodeutil.WithAuth(nodeutil.NoAuth(), mux)
			return nil
		},
		nodeutil.AttachProviderRoutes(mux),
	}
	if o.TLSCert != "" {
		tlsOpts := []func(*tls.Config) error{nodeutil.WithKeyPairFromPath(o.TLSCert, o.TLSKey)}
		if o.ClientCA != "" {
			tlsOpts = append(tlsOpts, nodeutil.WithCAFromPath(o.ClientCA))
		}
		opts = append(opts, nodeutil.WithTLSConfig(tlsOpts...))
	}
	return opts
}

func waitNodeReady(ctx context.Context, client kubernetes.Interface, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready in the API after %s (last error: %v)", name, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sweepOrphans cleans up after pods deleted while no agent ran (virtual-kubelet only re-creates
// the pods still bound to the node).
func sweepOrphans(ctx context.Context, client kubernetes.Interface, p *provider.Provider, nodeName string) error {
	pods, err := nodePods(ctx, client, nodeName)
	if err != nil {
		return err
	}
	p.SweepOrphans(ctx, uids(pods))
	return nil
}

// nodePods lists the Pods bound to the node.
func nodePods(ctx context.Context, client kubernetes.Interface, nodeName string) ([]corev1.Pod, error) {
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	if err != nil {
		return nil, fmt.Errorf("listing the node's pods: %w", err)
	}
	return pods.Items, nil
}

func uids(pods []corev1.Pod) map[string]bool {
	live := make(map[string]bool, len(pods))
	for _, pod := range pods {
		live[string(pod.UID)] = true
	}
	return live
}

// describeNode fills in the Node object virtual-kubelet registers.
func describeNode(n *corev1.Node, o Options) {
	n.Labels["kubernetes.io/hostname"] = o.NodeName
	n.Labels["kubernetes.io/os"] = runtime.GOOS
	n.Labels["kubernetes.io/arch"] = runtime.GOARCH
	n.Labels["beta.kubernetes.io/os"] = runtime.GOOS
	n.Labels["beta.kubernetes.io/arch"] = runtime.GOARCH
	n.Spec.PodCIDR, n.Spec.PodCIDRs = o.PodCIDR, []string{o.PodCIDR}
	n.Status.Capacity = podfiles.NodeCapacity()
	n.Status.Allocatable = podfiles.NodeCapacity()
	n.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: o.NodeIP},
		{Type: corev1.NodeHostName, Address: o.NodeName},
	}
	port := int32(10250)
	if _, p, err := net.SplitHostPort(o.ListenAddr); err == nil {
		fmt.Sscanf(p, "%d", &port)
	}
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: port}}
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion: KubeletVersion, OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		ContainerRuntimeVersion: "local://nodeagent", OSImage: "local processes", BootID: o.BootID,
	}
	now := metav1.Now()
	reasons := map[corev1.NodeConditionType]string{
		corev1.NodeDiskPressure: "KubeletHasNoDiskPressure", corev1.NodeMemoryPressure: "KubeletHasSufficientMemory",
		corev1.NodePIDPressure: "KubeletHasSufficientPID", corev1.NodeNetworkUnavailable: "RouteCreated",
	}
	for i, c := range n.Status.Conditions {
		if reason, ok := reasons[c.Type]; ok {
			n.Status.Conditions[i].Status, n.Status.Conditions[i].Reason = corev1.ConditionFalse, reason
			n.Status.Conditions[i].LastHeartbeatTime, n.Status.Conditions[i].LastTransitionTime = now, now
		}
	}
}

// bridgeConfig reads the bridge's subnet: pods get its prefix length and route via its first address.
func bridgeConfig(ctx context.Context, bridge, nodeIP string) (network.Config, error) {
	out, err := exec.CommandContext(ctx, "ip", "-o", "-4", "addr", "show", "dev", bridge).Output()
	if err != nil {
		return network.Config{}, fmt.Errorf("bridge %s: %w", bridge, err)
	}
	ip, err := netip.ParseAddr(nodeIP)
	if err != nil {
		return network.Config{}, fmt.Errorf("--node-ip: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] != "inet" {
				continue
			}
			prefix, err := netip.ParsePrefix(f[i+1])
			if err == nil && prefix.Contains(ip) {
				return network.Config{Bridge: bridge, PrefixLen: prefix.Bits(), Gateway: prefix.Masked().Addr().Next().String()}, nil
			}
		}
	}
	return network.Config{}, fmt.Errorf("bridge %s has no address whose subnet contains the node IP %s", bridge, nodeIP)
}

// apiServerAddress is what pods get as KUBERNETES_SERVICE_HOST/PORT: the agent's own API address
// unless that is loopback (not reachable from a pod), then the kubernetes Service's ClusterIP.
func apiServerAddress(ctx context.Context, client kubernetes.Interface, host string) (string, string) {
	if u, err := url.Parse(host); err == nil {
		h, p := u.Hostname(), u.Port()
		if p == "" {
			p = "443"
		}
		if ip, err := netip.ParseAddr(h); err == nil && !ip.IsLoopback() {
			return h, p
		}
	}
	svc, err := client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP == "" {
		return "", ""
	}
	return svc.Spec.ClusterIP, "443"
}

// Stop ends the agent: with --stop-pods-on-exit the pods' processes are killed first, otherwise
// they keep running for the next agent to re-adopt.
func (a *Agent) Stop() {
	if a.opts.StopPodsOnExit {
		a.Provider.StopAll()
		_ = endBoot(a.opts.StateDir) // on failure the next start keeps the ID: a reboot that goes unseen, as before boot IDs

	}
	a.cancel()
	select {
	case <-a.node.Done():
	case <-time.After(10 * time.Second):
	}
}

// ShutdownNode is a graceful node shutdown (the kubelet's GracefulNodeShutdown): the pods are
// stopped within provider.ShutdownGracePeriod and reported Failed/Terminated, then the agent
// stops and its Node is reported NotReady ("node is shutting down"). The pods stay terminal:
// the next agent does not restart them. The agent is done afterwards, as after Stop.
func (a *Agent) ShutdownNode(ctx context.Context) error {
	err := a.Provider.ShutdownNode(ctx, provider.ShutdownGracePeriod)
	err = errors.Join(err, endBoot(a.opts.StateDir))
	a.cancel()
	select {
	case <-a.node.Done():
	case <-time.After(10 * time.Second):
	}
	// After the node controller stopped, so that no heartbeat turns it Ready again.
	return errors.Join(err, setNodeNotReady(ctx, a.client, a.opts.NodeName, "node is shutting down"))
}

// setNodeNotReady reports the Node's Ready condition False, as the kubelet does while it shuts down.
func setNodeNotReady(ctx context.Context, client kubernetes.Interface, name, message string) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
		i := slices.IndexFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
		if i < 0 {
			n.Status.Conditions = append(n.Status.Conditions, ready)
		} else {
			n.Status.Conditions[i] = ready
		}
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// Done is closed when the virtual-kubelet node stopped.
func (a *Agent) Done() <-chan struct{} { return a.node.Done() }

// Err is why the node stopped.
func (a *Agent) Err() error { return a.node.Err() }

// SelfPath is the running binary, for container-init.
func SelfPath() (string, error) { return os.Executable() }
