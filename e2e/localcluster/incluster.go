package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// resolvConf makes cluster DNS names resolvable for processes run with InClusterCommand.
func resolvConf(domain string) string {
	return "nameserver " + GatewayIP + "\nsearch svc." + domain + " " + domain + "\noptions ndots:5\n"
}

func (l Layout) ResolvConf() string { return l.path("resolv.conf") }

// InClusterCommand runs a program as if it were inside the cluster (like the operator
// under development): in the cluster netns, with a private mount namespace whose
// /etc/resolv.conf points at CoreDNS, and KUBECONFIG set to the in-cluster admin
// kubeconfig (https://10.244.0.1:6443). The host's /etc is not modified.
func InClusterCommand(ctx context.Context, st *State, name string, args ...string) *exec.Cmd {
	l := Layout{Dir: st.Dir}
	script := `mount --bind "$0" /etc/resolv.conf && exec nsenter --net="$1" -- "${@:2}"`
	full := append([]string{"--mount", "--propagation", "private", "bash", "-c", script,
		l.ResolvConf(), filepath.Join(netnsDir, st.Netns), name}, args...)
	cmd := exec.CommandContext(ctx, "unshare", full...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+st.InnerKubeconfig)
	return cmd
}
