// Package localcluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kube-proxy, CoreDNS) plus node agents that
// run Pods as processes, all inside one network namespace per cluster. Binaries come
// from the project's tools cache (hack/tools.sh); nothing runs in containers.
package localcluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Network layout inside the cluster netns lc-<name>. Every cluster uses the same
// addresses: they live only inside its own netns, so clusters never collide.
const (
	BridgeName    = "lcbr0"
	GatewayIP     = "10.244.0.1" // bridge address: apiserver, CoreDNS and pods' default gateway
	PodCIDR       = "10.244.0.0/16"
	ServiceCIDR   = "10.96.0.0/16"
	KubernetesSvc = "10.96.0.1"
	DNSServiceIP  = "10.96.0.10" // ClusterIP of kube-system/kube-dns (served by CoreDNS on GatewayIP)
	APIServerPort = 6443
	etcdPort      = 12379 // control-plane etcd, on 127.0.0.1 of the cluster netns
	kcmPort       = 10257
	schedulerPort = 10259
	kubeletPort   = 10250

	// StorageClassName is the default StorageClass; its provisioner runs in the supervisor.
	StorageClassName = "local"
	// Provisioner is the provisioner name of StorageClassName.
	Provisioner = "etcd-operator.local/hostpath"
)

// DefaultClusterDomain is the cluster's DNS domain unless Options.ClusterDomain names another.
const DefaultClusterDomain = "cluster.local"

// DefaultStateRoot holds one folder per cluster name.
const DefaultStateRoot = "/tmp/etcd-operator-lc"

// Default tool versions; hack/versions.env of the module overrides them when found.
var defaultVersions = map[string]string{
	"KUBERNETES_VERSION":   "v1.37.2",
	"ETCD_DEFAULT_VERSION": "v3.7.3",
	"COREDNS_VERSION":      "v1.15.0",
	"CERT_MANAGER_VERSION": "v1.21.2",
	"VERSITYGW_VERSION":    "v1.8.0",
	"PROMETHEUS_VERSION":   "v0.316.0",
	"CONTAINERD_VERSION":   "v2.3.7",
}

// Options configure a local cluster. The zero value plus a Name is usable.
type Options struct {
	Name  string // cluster name: [a-z0-9-], at most 20 characters
	Nodes int    // node agents to start; default 3, 0 allowed (control plane only)
	// RealNodes are kubelets with containerd (see realnode.go), started after the node agents:
	// nodes Nodes+1..Nodes+RealNodes. They run the image tarballs of ImagesDir.
	RealNodes int
	// ImagesDir holds the OCI image tarballs (`make images`) imported into every real node;
	// default $LC_IMAGES_DIR.
	ImagesDir string

	StateRoot string // default DefaultStateRoot; the cluster's folder is StateRoot/Name
	ToolsDir  string // default $ETCD_OPERATOR_TOOLS or ~/.cache/etcd-operator-tools
	// ModuleRoot is the repository root (for hack/versions.env and go build); found from cwd if empty.
	ModuleRoot string
	// NodeAgentBin is the node agent binary; default $LC_NODEAGENT_BIN or built from ./e2e/cmd/nodeagent.
	NodeAgentBin string
	// OperatorBin is passed to the node agents as --operator-binary (may be empty).
	OperatorBin string
	// PodToolsDir is the --tools-dir of the node agents: a world-readable mirror of the
	// tools cache's etcd folders, set by Up.
	PodToolsDir string
	// NoKubeProxy skips kube-proxy (ClusterIP Services then do not work; headless ones do).
	NoKubeProxy bool
	// ClusterDomain is the cluster's DNS domain (default DefaultClusterDomain): CoreDNS serves it,
	// Pods search it, the apiserver's certificate and service-account issuer name it. Cozystack
	// runs with cozy.local.
	ClusterDomain string
}

var domainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

var nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$`)

// withDefaults validates o and fills the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Name == "" {
		o.Name = "dev"
	}
	if !nameRE.MatchString(o.Name) {
		return o, fmt.Errorf("cluster name %q: want 1-20 characters of [a-z0-9-]", o.Name)
	}
	if o.Nodes < 0 || o.RealNodes < 0 || o.Nodes+o.RealNodes > 20 {
		return o, fmt.Errorf("nodes %d, real nodes %d: want 0..20 in all", o.Nodes, o.RealNodes)
	}
	if o.ImagesDir == "" {
		o.ImagesDir = os.Getenv("LC_IMAGES_DIR")
	}
	if o.RealNodes > 0 && o.ImagesDir == "" {
		return o, fmt.Errorf("real nodes need an images folder (--images-dir or $LC_IMAGES_DIR; `make images` writes bin/images)")
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = DefaultClusterDomain
	}
	if !domainRE.MatchString(o.ClusterDomain) || len(o.ClusterDomain) > 253 {
		return o, fmt.Errorf("cluster domain %q: want a DNS name (lower-case labels separated by dots)", o.ClusterDomain)
	}
	if o.StateRoot == "" {
		o.StateRoot = DefaultStateRoot
	}
	if o.ToolsDir == "" {
		o.ToolsDir = os.Getenv("ETCD_OPERATOR_TOOLS")
	}
	if o.ToolsDir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return o, err
		}
		o.ToolsDir = filepath.Join(home, ".cache", "etcd-operator-tools")
	}
	if o.ModuleRoot == "" {
		o.ModuleRoot, _ = FindModuleRoot()
	}
	if o.NodeAgentBin == "" {
		o.NodeAgentBin = os.Getenv("LC_NODEAGENT_BIN")
	}
	return o, nil
}

// Layout names every path of one cluster.
type Layout struct {
	Dir string // StateRoot/Name
}

func (l Layout) path(p ...string) string { return filepath.Join(append([]string{l.Dir}, p...)...) }

func (l Layout) PKI() string             { return l.path("pki") }
func (l Layout) Logs() string            { return l.path("logs") }
func (l Layout) StateFile() string       { return l.path("state.json") }
func (l Layout) LockFile() string        { return l.path("supervisor.pid") }
func (l Layout) ControlSocket() string   { return l.path("control.sock") }
func (l Layout) AdminKubeconfig() string { return l.path("admin.kubeconfig") }
func (l Layout) InnerKubeconfig() string { return l.path("kubeconfigs", "admin-incluster.kubeconfig") }
func (l Layout) Kubeconfigs() string     { return l.path("kubeconfigs") }
func (l Layout) NodeDir(i int) string    { return l.path("nodes", fmt.Sprint(i)) }
func (l Layout) PVDir() string           { return l.path("pv") }
func (l Layout) BinDir() string          { return l.path("bin") }
func (l Layout) SupervisorLog() string   { return l.path("logs", "supervisor.log") }
func (l Layout) ComponentLog(c string) string {
	return l.path("logs", c+".log")
}

// NetnsName is the cluster's network namespace.
func NetnsName(cluster string) string { return "lc-" + cluster }

// PodNetnsPrefix is the prefix of the pod network namespaces the node agents create.
func PodNetnsPrefix(cluster string) string { return "lc-" + cluster + "-p" }

// NodeName is the Node object name of node i (1-based).
func NodeName(cluster string, i int) string { return fmt.Sprintf("lc-%s-node-%d", cluster, i) }

// NodeIP is node i's InternalIP: a /16 secondary address on the bridge in the cluster netns.
func NodeIP(i int) string { return fmt.Sprintf("10.244.%d.1", i) }

// NodePodCIDR is the pod range node i allocates from.
func NodePodCIDR(i int) string { return fmt.Sprintf("10.244.%d.0/24", i) }

// FindModuleRoot walks up from the working directory to this module's go.mod.
func FindModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/cozystack/etcd-operator\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("go.mod of github.com/cozystack/etcd-operator not found above the working directory")
		}
		dir = parent
	}
}

// toolVersions reads hack/versions.env (KEY=value lines) over the defaults.
func toolVersions(moduleRoot string) map[string]string {
	v := map[string]string{}
	for k, val := range defaultVersions {
		v[k] = val
	}
	f, err := os.Open(filepath.Join(moduleRoot, "hack", "versions.env"))
	if err != nil {
		return v
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		k, val, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if _, known := v[k]; known {
			v[k] = strings.Trim(val, `"'`)
		}
	}
	return v
}

// Tools are the absolute paths of the binaries the cluster runs.
type Tools struct {
	APIServer, ControllerManager, Scheduler, KubeProxy, Kubectl string
	Etcd, CoreDNS                                               string
}

func resolveTools(toolsDir, moduleRoot string) (Tools, error) {
	v := toolVersions(moduleRoot)
	k8s := filepath.Join(toolsDir, "kubernetes-"+v["KUBERNETES_VERSION"])
	t := Tools{
		APIServer:         filepath.Join(k8s, "kube-apiserver"),
		ControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Scheduler:         filepath.Join(k8s, "kube-scheduler"),
		KubeProxy:         filepath.Join(k8s, "kube-proxy"),
		Kubectl:           filepath.Join(k8s, "kubectl"),
		Etcd:              filepath.Join(toolsDir, "etcd-"+v["ETCD_DEFAULT_VERSION"], "etcd"),
		CoreDNS:           filepath.Join(toolsDir, "coredns-"+v["COREDNS_VERSION"], "coredns"),
	}
	for _, p := range []string{t.APIServer, t.ControllerManager, t.Scheduler, t.Etcd, t.CoreDNS} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("tool missing (run `make tools`): %w", err)
		}
	}
	return t, nil
}

// ResolveKubectl is the tools cache's kubectl for o (its ToolsDir and ModuleRoot defaults
// apply), of the Kubernetes version the cluster runs.
func ResolveKubectl(o Options) (string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return "", err
	}
	t, err := resolveTools(o.ToolsDir, o.ModuleRoot)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(t.Kubectl); err != nil {
		return "", fmt.Errorf("kubectl missing from the tools cache (run `make tools`): %w", err)
	}
	return t.Kubectl, nil
}

// KubernetesVersion is the Kubernetes version the tools cache holds for o ("v1.37.2"): the
// version of <registry>/kube-apiserver images the node agents run.
func KubernetesVersion(o Options) (string, error) {
	o, err := o.withDefaults()
	if err != nil {
		return "", err
	}
	return toolVersions(o.ModuleRoot)["KUBERNETES_VERSION"], nil
}

// AllNodes is the number of nodes of both kinds.
func (o Options) AllNodes() int { return o.Nodes + o.RealNodes }

// RealNodeTools are the binaries of the real nodes: the kubelet and containerd's.
type RealNodeTools struct {
	Kubelet, Containerd, Ctr string
}

func resolveRealNodeTools(toolsDir, moduleRoot string) (RealNodeTools, error) {
	v := toolVersions(moduleRoot)
	cd := filepath.Join(toolsDir, "containerd-"+v["CONTAINERD_VERSION"])
	t := RealNodeTools{
		Kubelet:    filepath.Join(toolsDir, "kubelet-"+v["KUBERNETES_VERSION"], "kubelet"),
		Containerd: filepath.Join(cd, "containerd"),
		Ctr:        filepath.Join(cd, "ctr"),
	}
	for _, p := range []string{t.Kubelet, t.Containerd, t.Ctr, filepath.Join(cd, "containerd-shim-runc-v2")} {
		if _, err := os.Stat(p); err != nil {
			return t, fmt.Errorf("real-node tool missing (run `make tools`): %w", err)
		}
	}
	for _, p := range []string{"runc", "/usr/lib/cni/bridge", "/usr/lib/cni/host-local", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			return t, fmt.Errorf("real nodes need %s (hack/e2e-deps.sh installs runc and containernetworking-plugins): %w", p, err)
		}
	}
	return t, nil
}
