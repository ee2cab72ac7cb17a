package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const netnsDir = "/var/run/netns"

// run executes a command and returns its error with the combined output.
func run(ctx context.Context, name string, args ...string) error {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// netnsSetupCommands is the topology of a fresh cluster netns: lo up, the bridge
// with the gateway address, forwarding on (inside the netns only) and no ICMP
// redirects (pods routed through the gateway must keep using it, for kube-proxy's NAT).
func netnsSetupCommands(ns string) [][]string {
	return [][]string{
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "link", "add", BridgeName, "type", "bridge"},
		{"ip", "-n", ns, "addr", "add", GatewayIP + "/16", "dev", BridgeName},
		{"ip", "-n", ns, "link", "set", BridgeName, "up"},
		// Locally generated traffic to a ClusterIP needs a route before kube-proxy's DNAT applies.
		{"ip", "-n", ns, "route", "add", ServiceCIDR, "dev", BridgeName, "src", GatewayIP},
		{"ip", "netns", "exec", ns, "sh", "-c",
			"echo 1 > /proc/sys/net/ipv4/ip_forward; " +
				"echo 0 > /proc/sys/net/ipv4/conf/all/send_redirects; " +
				"echo 0 > /proc/sys/net/ipv4/conf/" + BridgeName + "/send_redirects"},
	}
}

// createClusterNetns creates lc-<cluster> with its bridge.
func createClusterNetns(ctx context.Context, cluster string) error {
	ns := NetnsName(cluster)
	if err := run(ctx, "ip", "netns", "add", ns); err != nil {
		return err
	}
	for _, c := range netnsSetupCommands(ns) {
		if err := run(ctx, c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// addNodeAddress puts node i's InternalIP on the bridge (idempotent).
func addNodeAddress(ctx context.Context, cluster string, i int) error {
	err := run(ctx, "ip", "-n", NetnsName(cluster), "addr", "replace", NodeIP(i)+"/16", "dev", BridgeName)
	return err
}

// clusterNetnsNames lists the cluster netns and every pod netns of the cluster that exist.
func clusterNetnsNames(cluster string) []string {
	entries, _ := os.ReadDir(netnsDir)
	var out []string
	for _, e := range entries {
		n := e.Name()
		if n == NetnsName(cluster) || strings.HasPrefix(n, PodNetnsPrefix(cluster)) {
			out = append(out, n)
		}
	}
	return out
}

// netnsInode identifies a named netns.
func netnsInode(name string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(netnsDir, name), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// pidsInNetns lists the processes whose network namespace is one of names (like `ip netns pids`).
func pidsInNetns(names []string) []int {
	inodes := map[uint64]bool{}
	for _, n := range names {
		if ino, err := netnsInode(n); err == nil {
			inodes[ino] = true
		}
	}
	procs, _ := os.ReadDir("/proc")
	var pids []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if allThreadsIn(p.Name(), inodes) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// allThreadsIn: every thread of the process is in one of the namespaces. A process that only
// has a thread in there for a moment (a test binary dialing a member through Dialer, whose
// thread may be its main one) is no Pod of the cluster and must survive its teardown.
func allThreadsIn(pid string, inodes map[uint64]bool) bool {
	tasks, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", pid, "task", t.Name(), "ns", "net"), &st) != nil || !inodes[st.Ino] {
			return false
		}
	}
	return true
}

// Dialer opens connections from inside a named network namespace.
type Dialer struct {
	Netns string
}

// DialContext dials addr (an IP literal and port) from inside the netns. The socket
// is created on an OS thread switched into the netns and the thread switched back;
// a socket keeps the netns it was created in.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	var dialErr error
	if err := d.inNetns(func() { conn, dialErr = (&net.Dialer{}).DialContext(ctx, network, addr) }); err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err
	}
	return conn, dialErr
}

// Listen opens a listener inside the netns (same technique as DialContext), e.g. to find
// a free port there for a server started later inside it.
func (d Dialer) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	var listenErr error
	if err := d.inNetns(func() { ln, listenErr = net.Listen(network, addr) }); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	return ln, listenErr
}

// inNetns runs fn on a fresh goroutine whose OS thread is switched into the netns for
// the duration of fn: Go may move other goroutines onto that thread otherwise.
func (d Dialer) inNetns(fn func()) error {
	ch := make(chan error, 1)
	go func() { ch <- d.onThreadInNetns(fn) }()
	return <-ch
}

func (d Dialer) onThreadInNetns(fn func()) error {
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	target, err := os.Open(filepath.Join(netnsDir, d.Netns))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", d.Netns, err)
	}
	fn()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread stays locked and dies with this goroutine: never reuse a thread in the wrong netns.
		return fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return nil
}

// Resolver resolves names with the cluster's CoreDNS, reached inside the netns.
func (d Dialer) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, net.JoinHostPort(GatewayIP, "53"))
	}}
}

// DialResolving dials host:port where host may be a cluster DNS name (e.g.
// etcd-0.etcd.ns.svc.cluster.local), resolved by the cluster's CoreDNS.
func (d Dialer) DialResolving(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) != nil {
		return d.DialContext(ctx, network, addr)
	}
	ips, err := d.Resolver().LookupHost(ctx, host)
	if err != nil {
		return nil, err
	}
	var lastErr error
	for _, ip := range ips {
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip, port))
		if err == nil {
			return conn, nil
		}
		lastErr = err
	}
	return nil, lastErr
}
