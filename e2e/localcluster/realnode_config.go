package localcluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// A real node is a containerd and a kubelet of the tools cache, run inside a private mount
// namespace entered in the cluster's network namespace. Everything they write lives in the
// node's folder: the paths they hard-code (/var/log/containers, /var/lib/cni, /run/containerd,
// /var/lib/kubelet/device-plugins) are under overlays of their parents, and the three sysctls
// the kubelet sets at start are bind-mounted over inside that namespace, so the host's files and
// values stay untouched.

// realNodeLayout names the files of real node i.
type realNodeLayout struct {
	Dir string // Layout.NodeDir(i)
}

func (r realNodeLayout) path(p ...string) string {
	return filepath.Join(append([]string{r.Dir}, p...)...)
}

func (r realNodeLayout) ContainerdConfig() string { return r.path("containerd.toml") }
func (r realNodeLayout) ContainerdRoot() string   { return r.path("containerd", "root") }
func (r realNodeLayout) ContainerdState() string  { return r.path("containerd", "state") }
func (r realNodeLayout) Socket() string           { return r.path("containerd", "containerd.sock") }
func (r realNodeLayout) CNIConfDir() string       { return r.path("cni", "net.d") }
func (r realNodeLayout) KubeletConfig() string    { return r.path("kubelet.yaml") }
func (r realNodeLayout) KubeletRoot() string      { return r.path("kubelet") }
func (r realNodeLayout) PodLogs() string          { return r.path("pod-logs") }
func (r realNodeLayout) VolumePlugins() string    { return r.path("volume-plugins") }
func (r realNodeLayout) NamespaceReady() string   { return r.path("mntns.ready") }

// overlayMount shadows a host folder inside the node's mount namespace: the host's files show
// through, what the node writes lands in Upper (in the node folder).
type overlayMount struct {
	Target, Upper, Work string
	Volatile            bool // emptied at every boot of the node (a tmpfs on a machine)
}

// overlayMounts cover the host paths containerd, the CNI plugins and the kubelet use whatever
// their configuration says: /var/log/containers, /var/lib/cni, /var/lib/kubelet/device-plugins,
// /run/containerd (its shim sockets). A bind mount over each would need its mount point created
// on the host first; an overlay of the parent creates nothing there.
func (r realNodeLayout) overlayMounts() []overlayMount {
	var out []overlayMount
	for _, m := range []struct {
		target, name string
		volatile     bool
	}{{"/var/log", "var-log", false}, {"/var/lib", "var-lib", false}, {"/run", "run", true}} {
		out = append(out, overlayMount{Target: m.target, Upper: r.path("host", m.name), Work: r.path("host", m.name+".work"), Volatile: m.volatile})
	}
	return out
}

// sysctlMounts are the kernel settings the kubelet writes at start (unless
// protectKernelDefaults, which makes it refuse to start instead), each shadowed by a file of
// the value it wants: its write lands in the file, the host keeps its own value.
func (r realNodeLayout) sysctlMounts() []sysctlMount {
	return []sysctlMount{
		{File: r.path("sysctl", "vm.overcommit_memory"), Path: "/proc/sys/vm/overcommit_memory", Value: "1"},
		{File: r.path("sysctl", "kernel.panic"), Path: "/proc/sys/kernel/panic", Value: "10"},
		{File: r.path("sysctl", "kernel.panic_on_oops"), Path: "/proc/sys/kernel/panic_on_oops", Value: "1"},
	}
}

type sysctlMount struct{ File, Path, Value string }

// bootIDMount shadows the kernel's boot ID with a file written anew at each boot of the node
// (bootRealNode): the kubelet reports it as status.nodeInfo.bootID, so a node stopped and
// started reports a new one, as a rebooted machine does and as a node agent does (the
// operator tells a tmpfs member's data lost by it). Unshadowed, every real node would report
// the host's boot ID, unchanged by StopNode.
func (r realNodeLayout) bootIDMount() sysctlMount {
	return sysctlMount{File: r.path("sysctl", "boot_id"), Path: "/proc/sys/kernel/random/boot_id"}
}

// mountNamespaceScript is run by `unshare --mount --propagation private`: it makes the bind
// mounts, marks the namespace ready and then holds it (containerd and the kubelet enter it by
// the holder's pid) until it is killed.
func (r realNodeLayout) mountNamespaceScript() string {
	var b strings.Builder
	b.WriteString("set -e\n")
	for _, m := range r.overlayMounts() {
		fmt.Fprintf(&b, "mount -t overlay overlay -o lowerdir=%s,upperdir=%s,workdir=%s %s\n", m.Target, m.Upper, m.Work, m.Target)
	}
	for _, m := range append(r.sysctlMounts(), r.bootIDMount()) {
		fmt.Fprintf(&b, "mount --bind %s %s\n", m.File, m.Path)
	}
	fmt.Fprintf(&b, "touch %s\nexec sleep infinity\n", r.NamespaceReady())
	return b.String()
}

// cniBinDir is where Debian's containernetworking-plugins puts bridge and host-local.
const cniBinDir = "/usr/lib/cni"

// containerdConfig is the node's containerd configuration (version 3).
//   - restrict_oom_score_adj: this machine's bounding set may lack CAP_SYS_RESOURCE, and runc then
//     fails to set a negative oom_score_adj (Guaranteed Pods get 0 instead of -997).
//   - netns_mounts_under_state_dir: Pod network namespaces are mounted in the node's state folder,
//     not in the host's /var/run/netns.
//   - the NRI and opt plugins are disabled: they would create /var/run/nri and /opt/containerd.
func containerdConfig(r realNodeLayout, sandboxImage string) string {
	return fmt.Sprintf(`version = 3
root = %q
state = %q
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"]

[grpc]
  address = %q

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = %q

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_cdi = false
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [%q]
    conf_dir = %q
    max_conf_num = 1
`, r.ContainerdRoot(), r.ContainerdState(), r.Socket(), sandboxImage, cniBinDir, r.CNIConfDir())
}

// cniConfig attaches node i's Pods to the cluster's bridge, with addresses from the node's pod
// range (host-local, its state under the bind-mounted /var/lib/cni) and the cluster gateway as
// their default route. The bridge plugin neither makes itself the gateway nor masquerades: the
// gateway address belongs to the cluster netns, as for the node agents' Pods.
func cniConfig(i int) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "lc",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0", "gw": %q}]
      }
    },
    {"type": "loopback"}
  ]
}
`, BridgeName, PodCIDR, fmt.Sprintf("10.244.%d.2", i), fmt.Sprintf("10.244.%d.254", i), GatewayIP, GatewayIP)
}

// kubeletConfigParams are what differs between nodes and clusters in kubeletConfig.
type kubeletConfigParams struct {
	Layout        realNodeLayout
	NodeIP        string
	CgroupRoot    string
	ClusterDomain string
	PKI           string // the cluster's PKI folder
	CertFile      string // base name of the node's serving certificate there
}

// kubeletConfig is the node's KubeletConfiguration:
//   - failCgroupV1: false: this machine may be cgroup v1 (the kubelet refuses it by default);
//   - cgroupfs below a cgroupRoot of its own: no systemd, and each node's Pods apart;
//   - eviction and image GC off: the images cannot be pulled again, and the disk is the host's;
//   - the API and healthz bound to the node's own address, authenticated by the cluster CA.
func kubeletConfig(p kubeletConfigParams) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %q
cgroupsPerQOS: true
containerRuntimeEndpoint: %q
address: %q
port: %d
readOnlyPort: 0
healthzBindAddress: %q
healthzPort: 10248
clusterDNS: [%q]
clusterDomain: %q
resolvConf: ""
podLogsDir: %q
volumePluginDir: %q
tlsCertFile: %q
tlsPrivateKeyFile: %q
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %q}
authorization:
  mode: AlwaysAllow
evictionHard: {"memory.available": "0%%", "nodefs.available": "0%%", "nodefs.inodesFree": "0%%", "imagefs.available": "0%%"}
imageGCHighThresholdPercent: 100
serializeImagePulls: false
protectKernelDefaults: false
`, p.CgroupRoot, "unix://"+p.Layout.Socket(), p.NodeIP, kubeletPort, p.NodeIP, GatewayIP, p.ClusterDomain,
		p.Layout.PodLogs(), p.Layout.VolumePlugins(),
		filepath.Join(p.PKI, p.CertFile+".crt"), filepath.Join(p.PKI, p.CertFile+".key"), filepath.Join(p.PKI, "ca.crt"))
}
