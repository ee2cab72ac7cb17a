// Package agent wires the node agent: flags, the virtual-kubelet node and the process provider.
package agent

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/provider"
)

// Options are the node agent's flags (the harness's fixed contract).
type Options struct {
	Kubeconfig     string
	NodeName       string
	NodeIP         string
	PodCIDR        string
	Bridge         string
	NetnsPrefix    string
	StateDir       string
	ToolsDir       string
	ClusterDNS     string
	ClusterDomain  string
	ListenAddr     string
	TLSCert        string
	TLSKey         string
	ClientCA       string
	OperatorBinary string
	StopPodsOnExit bool
	// BootID is reported as the Node's status.nodeInfo.bootID (no flag: Start loads it).
	BootID string
	// SweepInterval paces the clean-up of deleted terminal pods (no flag; tests shorten it).
	SweepInterval time.Duration
	// VolumeResync is how often Secret and ConfigMap volumes are re-checked without an event
	// (no flag; tests shorten it).
	VolumeResync time.Duration
}

func (o Options) volumeResync() time.Duration {
	if o.VolumeResync > 0 {
		return o.VolumeResync
	}
	return provider.VolumeResync
}

func (o Options) sweepInterval() time.Duration {
	if o.SweepInterval > 0 {
		return o.SweepInterval
	}
	return 30 * time.Second
}

// ParseFlags parses the command line of `nodeagent`.
func ParseFlags(args []string, stderr io.Writer) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("nodeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the node's API client")
	fs.StringVar(&o.NodeName, "node-name", "", "name of the Node object")
	fs.StringVar(&o.NodeIP, "node-ip", "", "InternalIP of the node (on the bridge)")
	fs.StringVar(&o.PodCIDR, "pod-cidr", "", "CIDR pod addresses are taken from, e.g. 10.244.1.0/24")
	fs.StringVar(&o.Bridge, "bridge", "lcbr0", "bridge pods' veths attach to")
	fs.StringVar(&o.NetnsPrefix, "netns-prefix", "", "prefix of the per-pod network namespaces")
	fs.StringVar(&o.StateDir, "state-dir", "", "directory for pod state, logs and volumes")
	fs.StringVar(&o.ToolsDir, "tools-dir", "", "tools cache holding etcd-v<version>/ folders")
	fs.StringVar(&o.ClusterDNS, "cluster-dns", "10.244.0.1", "nameserver of pods")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", "cluster.local", "cluster DNS domain")
	fs.StringVar(&o.ListenAddr, "listen-addr", "", "address of the kubelet API (logs, exec, port-forward)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "serving certificate of the kubelet API")
	fs.StringVar(&o.TLSKey, "tls-key", "", "serving key of the kubelet API")
	fs.StringVar(&o.ClientCA, "client-ca", "", "CA that signs the certificates of kubelet API clients")
	fs.StringVar(&o.OperatorBinary, "operator-binary", "", "binary run for etcd-operator images (may be empty)")
	fs.BoolVar(&o.StopPodsOnExit, "stop-pods-on-exit", false, "kill all pods and remove their netns on SIGTERM")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.validate()
}

func (o Options) validate() error {
	var missing []error
	for name, v := range map[string]string{"node-name": o.NodeName, "node-ip": o.NodeIP, "pod-cidr": o.PodCIDR,
		"netns-prefix": o.NetnsPrefix, "state-dir": o.StateDir, "tools-dir": o.ToolsDir, "bridge": o.Bridge} {
		if v == "" {
			missing = append(missing, fmt.Errorf("--%s is required", name))
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		missing = append(missing, errors.New("--tls-cert and --tls-key go together"))
	}
	return errors.Join(missing...)
}
