package localcluster

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"
)

func TestKubeletConfigIsAValidKubeletConfiguration(t *testing.T) {
	l := realNodeLayout{Dir: "/tmp/lc/x/nodes/2"}
	raw := kubeletConfig(kubeletConfigParams{Layout: l, NodeIP: NodeIP(2), CgroupRoot: "/lc-x-node-2",
		ClusterDomain: "cozy.local", PKI: "/tmp/lc/x/pki", CertFile: "node-2-serving"})
	var c kubeletv1beta1.KubeletConfiguration
	if err := yaml.UnmarshalStrict([]byte(raw), &c); err != nil { // an unknown or misspelt field fails
		t.Fatalf("not a KubeletConfiguration: %v\n%s", err, raw)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"failCgroupV1", *c.FailCgroupV1, false},
		{"failSwapOn", *c.FailSwapOn, false},
		{"cgroupDriver", c.CgroupDriver, "cgroupfs"},
		{"cgroupRoot", c.CgroupRoot, "/lc-x-node-2"},
		{"runtime endpoint", c.ContainerRuntimeEndpoint, "unix:///tmp/lc/x/nodes/2/containerd/containerd.sock"},
		{"address", c.Address, "10.244.2.1"},
		{"healthz address", c.HealthzBindAddress, "10.244.2.1"},
		{"cluster DNS", strings.Join(c.ClusterDNS, ","), GatewayIP},
		{"cluster domain", c.ClusterDomain, "cozy.local"},
		{"pod logs", c.PodLogsDir, "/tmp/lc/x/nodes/2/pod-logs"},
		{"serving cert", c.TLSCertFile, "/tmp/lc/x/pki/node-2-serving.crt"},
		{"client CA", c.Authentication.X509.ClientCAFile, "/tmp/lc/x/pki/ca.crt"},
		{"protectKernelDefaults", c.ProtectKernelDefaults, false},
		{"image GC", *c.ImageGCHighThresholdPercent, int32(100)},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func TestContainerdConfigSettings(t *testing.T) {
	l := realNodeLayout{Dir: "/tmp/lc/x/nodes/1"}
	var c map[string]any
	if _, err := toml.Decode(containerdConfig(l, "registry.k8s.io/pause:3.10.2"), &c); err != nil {
		t.Fatal(err)
	}
	plugins := c["plugins"].(map[string]any)
	runtime := plugins["io.containerd.cri.v1.runtime"].(map[string]any)
	images := plugins["io.containerd.cri.v1.images"].(map[string]any)
	cni := runtime["cni"].(map[string]any)
	checks := []struct {
		what      string
		got, want any
	}{
		{"version", c["version"], int64(3)},
		{"root", c["root"], "/tmp/lc/x/nodes/1/containerd/root"},
		{"socket", c["grpc"].(map[string]any)["address"], "/tmp/lc/x/nodes/1/containerd/containerd.sock"},
		{"restrict_oom_score_adj", runtime["restrict_oom_score_adj"], true},
		{"netns_mounts_under_state_dir", runtime["netns_mounts_under_state_dir"], true},
		{"sandbox image", images["pinned_images"].(map[string]any)["sandbox"], "registry.k8s.io/pause:3.10.2"},
		{"CNI conf dir", cni["conf_dir"], "/tmp/lc/x/nodes/1/cni/net.d"},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.what, ch.got, ch.want)
		}
	}
}

func TestCNIConfigRangeIsInsideTheNodesPodCIDR(t *testing.T) {
	for _, i := range []int{1, 7, 20} {
		var conf struct {
			Plugins []struct {
				Type   string `json:"type"`
				Bridge string `json:"bridge"`
				IPAM   struct {
					Ranges [][]struct{ Subnet, RangeStart, RangeEnd, Gateway string } `json:"ranges"`
				} `json:"ipam"`
			} `json:"plugins"`
		}
		if err := json.Unmarshal([]byte(cniConfig(i)), &conf); err != nil {
			t.Fatal(err)
		}
		br := conf.Plugins[0]
		if br.Type != "bridge" || br.Bridge != BridgeName {
			t.Fatalf("node %d: first plugin %s on %q, want bridge on %s", i, br.Type, br.Bridge, BridgeName)
		}
		r := br.IPAM.Ranges[0][0]
		_, nodeNet, _ := net.ParseCIDR(NodePodCIDR(i))
		for _, ip := range []string{r.RangeStart, r.RangeEnd} {
			if !nodeNet.Contains(net.ParseIP(ip)) || ip == NodeIP(i) {
				t.Errorf("node %d: range bound %s outside %s or the node's own address", i, ip, NodePodCIDR(i))
			}
		}
		if r.Gateway != GatewayIP || r.Subnet != PodCIDR {
			t.Errorf("node %d: gateway %s subnet %s, want %s on %s", i, r.Gateway, r.Subnet, GatewayIP, PodCIDR)
		}
	}
}

func TestMountNamespaceScriptShadowsHostPathsAndSysctls(t *testing.T) {
	s := realNodeLayout{Dir: "/n"}.mountNamespaceScript()
	for _, want := range []string{
		"mount -t overlay overlay -o lowerdir=/var/log,upperdir=/n/host/var-log,workdir=/n/host/var-log.work /var/log",
		"mount -t overlay overlay -o lowerdir=/var/lib,upperdir=/n/host/var-lib,workdir=/n/host/var-lib.work /var/lib",
		"mount -t overlay overlay -o lowerdir=/run,upperdir=/n/host/run,workdir=/n/host/run.work /run",
		"mount --bind /n/sysctl/vm.overcommit_memory /proc/sys/vm/overcommit_memory",
		"mount --bind /n/sysctl/kernel.panic /proc/sys/kernel/panic",
		"mount --bind /n/sysctl/kernel.panic_on_oops /proc/sys/kernel/panic_on_oops",
		"mount --bind /n/sysctl/boot_id /proc/sys/kernel/random/boot_id",
	} {
		if !strings.Contains(s, want+"\n") {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if !strings.HasPrefix(s, "set -e\n") || !strings.HasSuffix(s, "exec sleep infinity\n") {
		t.Errorf("script must stop at the first failed mount and then hold the namespace:\n%s", s)
	}
}

func TestParseCgroupMounts(t *testing.T) {
	mountinfo := `25 1 0:23 / /sys rw,nosuid shared:7 - sysfs sysfs rw
30 25 0:26 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
31 30 0:27 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw
32 30 0:28 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup rw,xattr,name=systemd
33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid shared:12 - cgroup cgroup rw,cpu,cpuacct
34 30 0:30 / /sys/fs/cgroup/cpuset rw,nosuid shared:13 - cgroup cgroup rw,cpuset
35 99 0:30 / /other/cpuset rw,nosuid shared:13 - cgroup cgroup rw,cpuset
`
	got, err := parseCgroupMounts(strings.NewReader(mountinfo))
	if err != nil {
		t.Fatal(err)
	}
	want := "/sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup/cpu,cpuacct /sys/fs/cgroup/cpuset /other/cpuset"
	if strings.Join(got, " ") != want {
		t.Errorf("hierarchies = %v, want %s", got, want)
	}
}

func TestCopyCgroupValue(t *testing.T) {
	tests := []struct {
		name          string
		parent, child *string // nil: the file does not exist
		want          string
	}{
		{"v1 cpuset: empty child gets the parent's", strp("0-1\n"), strp("\n"), "0-1\n"},
		{"child already set", strp("0-1\n"), strp("0\n"), "0\n"},
		{"v2 root has no cpuset.cpus", nil, strp(""), ""},
		{"hierarchy without cpuset", strp("0-1\n"), nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			child := filepath.Join(parent, "lc-x-node-1")
			if err := os.Mkdir(child, 0o755); err != nil {
				t.Fatal(err)
			}
			for dir, v := range map[string]*string{parent: tt.parent, child: tt.child} {
				if v != nil {
					if err := os.WriteFile(filepath.Join(dir, "cpuset.cpus"), []byte(*v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := copyCgroupValue(parent, child, "cpuset.cpus"); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(child, "cpuset.cpus"))
			if string(got) != tt.want {
				t.Errorf("child's cpuset.cpus = %q, want %q", got, tt.want)
			}
		})
	}
}

func strp(s string) *string { return &s }
