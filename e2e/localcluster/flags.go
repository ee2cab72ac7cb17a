package localcluster

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Pure builders of every component's command line; table-tested in flags_test.go.

func pki(l Layout, f string) string { return filepath.Join(l.PKI(), f) }

func etcdArgs(bin string, l Layout) []string {
	url := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", etcdPort+1)
	return []string{bin, "--name=cp", "--data-dir=" + l.path("etcd"),
		"--listen-client-urls=" + url, "--advertise-client-urls=" + url,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=cp=" + peer, "--listen-metrics-urls=" + fmt.Sprintf("http://127.0.0.1:%d", etcdPort+2),
		// The store of a throw-away cluster: no fsync cost on every write.
		"--unsafe-no-fsync", "--quota-backend-bytes=2147483648", "--log-level=warn"}
}

func apiServerArgs(bin string, l Layout, domain string) []string {
	return []string{bin,
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", etcdPort),
		"--bind-address=0.0.0.0", "--advertise-address=" + GatewayIP, fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--tls-cert-file=" + pki(l, "apiserver.crt"), "--tls-private-key-file=" + pki(l, "apiserver.key"),
		"--client-ca-file=" + pki(l, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc." + domain,
		"--service-account-key-file=" + pki(l, "sa.pub"), "--service-account-signing-key-file=" + pki(l, "sa.key"),
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--authorization-mode=RBAC", "--allow-privileged=true", "--profiling=false",
		"--kubelet-client-certificate=" + pki(l, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + pki(l, "apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + pki(l, "ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		// Pods leave a stopped node after 30 s instead of 300 s (DefaultTolerationSeconds admission).
		"--default-not-ready-toleration-seconds=30", "--default-unreachable-toleration-seconds=30",
		"--v=1"}
}

func controllerManagerArgs(bin string, l Layout, cluster string) []string {
	kc := filepath.Join(l.Kubeconfigs(), "controller-manager.kubeconfig")
	return []string{bin,
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kcmPort), "--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + pki(l, "sa.key"), "--root-ca-file=" + pki(l, "ca.crt"),
		"--cluster-signing-cert-file=" + pki(l, "ca.crt"), "--cluster-signing-key-file=" + pki(l, "ca.key"),
		"--controllers=*", "--cluster-name=lc-" + cluster,
		// KCM would create a folder on the host otherwise.
		"--flex-volume-plugin-dir=" + l.path("flexvolume"),
		"--service-cluster-ip-range=" + ServiceCIDR, "--cluster-cidr=" + PodCIDR, "--allocate-node-cidrs=false",
		// A stopped node turns NotReady after 20 s (default 50 s).
		"--node-monitor-grace-period=20s", "--node-monitor-period=2s",
		"--v=1"}
}

func schedulerArgs(bin string, l Layout) []string {
	kc := filepath.Join(l.Kubeconfigs(), "scheduler.kubeconfig")
	return []string{bin,
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedulerPort), "--leader-elect=false", "--v=1"}
}

// kubeProxyArgs: nftables mode inside the cluster netns. --masquerade-all makes
// replies of Service traffic come back through the gateway (pods share one L2
// bridge, so without SNAT a reply would bypass the DNAT). Conntrack sysctls that
// are global to the host are left alone.
func kubeProxyArgs(bin string, l Layout, nodeName string) []string {
	return []string{bin,
		"--kubeconfig=" + filepath.Join(l.Kubeconfigs(), "kube-proxy.kubeconfig"),
		"--proxy-mode=nftables", "--hostname-override=" + nodeName,
		"--bind-address=" + GatewayIP, "--cluster-cidr=" + PodCIDR, "--masquerade-all",
		"--conntrack-max-per-core=0", "--conntrack-tcp-timeout-established=0s", "--conntrack-tcp-timeout-close-wait=0s",
		"--healthz-bind-address=127.0.0.1:10256", "--metrics-bind-address=127.0.0.1:10249", "--v=1"}
}

func coreDNSArgs(bin, corefile string) []string {
	return []string{bin, "-conf", corefile}
}

// corefile serves the cluster domain from the API (kubernetes plugin) on the gateway address.
// No forward plugin: the cluster netns has no uplink.
func corefile(kubeconfig, domain string) string {
	return strings.Join([]string{
		".:53 {",
		"    bind " + GatewayIP,
		"    errors",
		"    health 127.0.0.1:18080",
		"    ready 127.0.0.1:18181",
		"    kubernetes " + domain + " in-addr.arpa ip6.arpa {",
		"        kubeconfig " + kubeconfig,
		"        pods insecure",
		"        fallthrough in-addr.arpa ip6.arpa",
		"        ttl 5",
		"    }",
		"    cache 5",
		"    loadbalance",
		"}",
		"",
	}, "\n")
}

// nodeAgentArgs is the node agent contract (see e2e/README.md).
func nodeAgentArgs(bin string, l Layout, cluster, domain string, i int, toolsDir, operatorBin string) []string {
	dir := l.NodeDir(i)
	return []string{bin,
		"--kubeconfig=" + nodeKubeconfig(l, i),
		"--node-name=" + NodeName(cluster, i),
		"--node-ip=" + NodeIP(i),
		"--pod-cidr=" + NodePodCIDR(i),
		"--bridge=" + BridgeName,
		"--netns-prefix=" + PodNetnsPrefix(cluster),
		"--state-dir=" + dir,
		"--tools-dir=" + toolsDir,
		"--cluster-dns=" + GatewayIP,
		"--cluster-domain=" + domain,
		"--listen-addr=" + fmt.Sprintf("%s:%d", NodeIP(i), kubeletPort),
		"--tls-cert=" + pki(l, fmt.Sprintf("node-%d-serving.crt", i)),
		"--tls-key=" + pki(l, fmt.Sprintf("node-%d-serving.key", i)),
		"--client-ca=" + pki(l, "ca.crt"),
		"--operator-binary=" + operatorBin,
		// A stopped node is a machine that went down: its pods die with the agent.
		"--stop-pods-on-exit",
	}
}
