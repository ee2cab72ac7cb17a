package localcluster

import (
	"cmp"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestComponentFlags(t *testing.T) {
	l := Layout{Dir: "/s/c1"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"etcd on netns loopback", etcdArgs("etcd", l),
			[]string{"--listen-client-urls=http://127.0.0.1:12379", "--data-dir=/s/c1/etcd"}},
		{"apiserver advertises the bridge", apiServerArgs("kube-apiserver", l, "cluster.local"),
			[]string{"--advertise-address=10.244.0.1", "--bind-address=0.0.0.0", "--secure-port=6443",
				"--service-cluster-ip-range=10.96.0.0/16", "--default-unreachable-toleration-seconds=30",
				"--default-not-ready-toleration-seconds=30", "--client-ca-file=/s/c1/pki/ca.crt",
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local"}},
		{"apiserver issuer in another cluster domain", apiServerArgs("kube-apiserver", l, "cozy.local"),
			[]string{"--service-account-issuer=https://kubernetes.default.svc.cozy.local"}},
		{"kcm fast node lifecycle, flexvolume inside state dir", controllerManagerArgs("kcm", l, "c1"),
			[]string{"--node-monitor-grace-period=20s", "--flex-volume-plugin-dir=/s/c1/flexvolume", "--controllers=*",
				"--kubeconfig=/s/c1/kubeconfigs/controller-manager.kubeconfig"}},
		{"scheduler", schedulerArgs("sched", l), []string{"--leader-elect=false", "--secure-port=10259"}},
		{"kube-proxy nftables with SNAT", kubeProxyArgs("kp", l, "lc-c1-node-1"),
			[]string{"--proxy-mode=nftables", "--masquerade-all", "--conntrack-max-per-core=0"}},
		{"node agent contract", nodeAgentArgs("na", l, "c1", "cluster.local", 2, "/tools", ""),
			[]string{"--node-name=lc-c1-node-2", "--node-ip=10.244.2.1", "--pod-cidr=10.244.2.0/24",
				"--bridge=lcbr0", "--netns-prefix=lc-c1-p", "--state-dir=/s/c1/nodes/2", "--tools-dir=/tools",
				"--cluster-dns=10.244.0.1", "--cluster-domain=cluster.local", "--listen-addr=10.244.2.1:10250",
				"--tls-cert=/s/c1/pki/node-2-serving.crt", "--client-ca=/s/c1/pki/ca.crt",
				"--kubeconfig=/s/c1/kubeconfigs/node-2.kubeconfig", "--operator-binary=", "--stop-pods-on-exit"}},
		{"node agent in another cluster domain", nodeAgentArgs("na", l, "c1", "cozy.local", 1, "/tools", ""),
			[]string{"--cluster-domain=cozy.local"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, w := range tt.want {
				if !slices.Contains(tt.args, w) {
					t.Errorf("missing %q in %v", w, tt.args)
				}
			}
		})
	}
}

func TestCorefile(t *testing.T) {
	for _, domain := range []string{"cluster.local", "cozy.local"} {
		cf := corefile("/k/admin.kubeconfig", domain)
		for _, w := range []string{"bind 10.244.0.1", "kubernetes " + domain + " in-addr.arpa ip6.arpa {", "kubeconfig /k/admin.kubeconfig", "pods insecure"} {
			if !strings.Contains(cf, w) {
				t.Errorf("Corefile lacks %q:\n%s", w, cf)
			}
		}
		if strings.Contains(cf, "forward") {
			t.Errorf("Corefile must not forward (no uplink):\n%s", cf)
		}
	}
}

func TestResolvConfSearchesTheClusterDomain(t *testing.T) {
	want := "nameserver 10.244.0.1\nsearch svc.cozy.local cozy.local\noptions ndots:5\n"
	if got := resolvConf("cozy.local"); got != want {
		t.Errorf("resolvConf(cozy.local) = %q, want %q", got, want)
	}
}

func TestNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{NetnsName("a1"), "lc-a1"},
		{PodNetnsPrefix("a1"), "lc-a1-p"},
		{NodeName("a1", 3), "lc-a1-node-3"},
		{NodeIP(3), "10.244.3.1"},
		{NodePodCIDR(3), "10.244.3.0/24"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		ok   bool
	}{
		{"default name", Options{}, true},
		{"valid", Options{Name: "smoke-1234", Nodes: 3}, true},
		{"upper case", Options{Name: "Smoke"}, false},
		{"too long", Options{Name: strings.Repeat("a", 21)}, false},
		{"negative nodes", Options{Name: "a", Nodes: -1}, false},
		{"cluster domain", Options{Name: "a", ClusterDomain: "cozy.local"}, true},
		{"cluster domain with a trailing dot", Options{Name: "a", ClusterDomain: "cozy.local."}, false},
		{"cluster domain upper case", Options{Name: "a", ClusterDomain: "Cozy.Local"}, false},
		{"real nodes only", Options{Name: "a", RealNodes: 2, ImagesDir: "/images"}, true},
		{"real nodes without an images folder", Options{Name: "a", RealNodes: 1}, false},
		{"negative real nodes", Options{Name: "a", RealNodes: -1, ImagesDir: "/images"}, false},
		{"more than 20 nodes in all", Options{Name: "a", Nodes: 10, RealNodes: 11, ImagesDir: "/images"}, false},
	}
	t.Setenv("LC_IMAGES_DIR", "") // the folder comes from the options only
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.o.withDefaults()
			if (err == nil) != tt.ok {
				t.Errorf("withDefaults() error = %v, want ok=%v", err, tt.ok)
			}
			if want := cmp.Or(tt.o.ClusterDomain, DefaultClusterDomain); err == nil && o.ClusterDomain != want {
				t.Errorf("cluster domain %q, want %q", o.ClusterDomain, want)
			}
		})
	}
}

func TestPKIAndKubeconfigs(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if err := writePKI(l.PKI(), "c1", "cozy.local", 2); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(l.PKI(), "ca.crt"))
	pool.AppendCertsFromPEM(caPEM)
	tests := []struct {
		file  string
		usage x509.ExtKeyUsage
		name  string // DNS name or IP to verify, "" for client certs
		org   string
	}{
		{"apiserver", x509.ExtKeyUsageServerAuth, "127.0.0.1", ""},
		{"apiserver", x509.ExtKeyUsageServerAuth, "10.96.0.1", ""},
		{"apiserver", x509.ExtKeyUsageServerAuth, "kubernetes.default.svc.cozy.local", ""},
		{"admin", x509.ExtKeyUsageClientAuth, "", "system:masters"},
		{"node-2-serving", x509.ExtKeyUsageServerAuth, "10.244.2.1", ""},
		{"node-1", x509.ExtKeyUsageClientAuth, "", "system:nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(l.PKI(), tt.file+".crt"))
			if err != nil {
				t.Fatal(err)
			}
			blk, _ := pem.Decode(b)
			cert, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: tt.name, KeyUsages: []x509.ExtKeyUsage{tt.usage}}); err != nil {
				t.Errorf("verify: %v", err)
			}
			if tt.org != "" && !slices.Contains(cert.Subject.Organization, tt.org) {
				t.Errorf("organizations %v lack %s", cert.Subject.Organization, tt.org)
			}
		})
	}
	for _, spec := range kubeconfigSpecs(l, 2) {
		if err := writeKubeconfig(l.PKI(), spec, "lc-c1"); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", spec.Path)
		if err != nil {
			t.Fatalf("%s: %v", spec.Path, err)
		}
		if cfg.Host != "https://10.244.0.1:6443" || len(cfg.CertData) == 0 || len(cfg.CAData) == 0 {
			t.Errorf("%s: host %s, cert %d bytes", spec.Path, cfg.Host, len(cfg.CertData))
		}
	}
}

func TestMountsUnderUnescape(t *testing.T) {
	if got := unescapeMount(`/a\040b/c`); got != "/a b/c" {
		t.Errorf("unescapeMount = %q", got)
	}
}
