//go:build e2e

// Package integration runs the node agent in-process against a real kube-apiserver (envtest) and
// proves that pods become real processes: etcd from the tools cache, volumes, restarts, deletion.
//
// The test binary re-executes itself inside a throwaway "cluster" network namespace holding the
// bridge, so the agent (and envtest) run exactly as in the local cluster and nothing touches the
// host's network. The parent removes that namespace and every pod namespace afterwards, even when
// the child crashed.
package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/e2e/nodeagent/containerinit"
)

const (
	netnsEnv = "NODEAGENT_E2E_NETNS"
	bridge   = "lcbr0"
	nodeIP   = "10.244.1.1"
)

func TestMain(m *testing.M) {
	// The agent starts containers through its own binary; in this test that binary is the test.
	if len(os.Args) > 1 && os.Args[1] == containerinit.Subcommand {
		err := containerinit.Main(os.Args[2:])
		fmt.Fprintf(os.Stderr, "container-init: %v\n", err)
		os.Exit(128)
	}
	ctrllog.SetLogger(logr.Discard()) // envtest logs through controller-runtime
	if os.Geteuid() != 0 || os.Getenv(netnsEnv) != "" {
		os.Exit(m.Run()) // the tests skip when not root
	}
	os.Exit(runInClusterNetns())
}

// runInClusterNetns creates the cluster netns, runs the tests inside it and cleans up.
func runInClusterNetns() int {
	ns := fmt.Sprintf("lct%d", os.Getpid())
	defer sweep(ns)
	for _, args := range [][]string{
		{"netns", "add", ns},
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "add", bridge, "type", "bridge"},
		{"-n", ns, "addr", "add", "10.244.0.1/16", "dev", bridge},
		{"-n", ns, "addr", "add", nodeIP + "/16", "dev", bridge},
		{"-n", ns, "link", "set", bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "ip %s: %v: %s\n", strings.Join(args, " "), err, out)
			return 1
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, self}, os.Args[1:]...)...)
	cmd.Stdout, cmd.Stderr, cmd.Stdin = os.Stdout, os.Stderr, os.Stdin
	cmd.Env = append(os.Environ(), netnsEnv+"="+ns)
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// sweep kills whatever still runs in the test's namespaces and deletes them.
func sweep(prefix string) {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || (f[0] != prefix && !strings.HasPrefix(f[0], prefix+"-")) {
			continue
		}
		pids, _ := exec.Command("ip", "netns", "pids", f[0]).Output()
		for _, p := range strings.Fields(string(pids)) {
			var pid int
			if _, err := fmt.Sscan(p, &pid); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if out, err := exec.Command("ip", "netns", "del", f[0]).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "cleanup: ip netns del %s: %v: %s\n", f[0], err, out)
		}
	}
}
