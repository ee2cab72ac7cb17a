// Command localcluster runs a local Kubernetes cluster for the e2e tests: a real
// control plane and node agents inside a network namespace (see e2e/README.md).
//
//	localcluster up [--name N] [--nodes 3] [--real-nodes 0 --images-dir DIR] [--cluster-domain D]
//	                                           start (background supervisor) and wait until ready
//	localcluster down [--name N]               stop and remove everything of the cluster
//	localcluster status [--name N]             print the published state
//	localcluster kubeconfig [--name N]         print the host kubeconfig path
//	localcluster exec [--name N] -- CMD ARGS   run CMD inside the cluster network (cluster DNS,
//	                                           KUBECONFIG=in-cluster admin), e.g. the operator
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/cozystack/etcd-operator/e2e/localcluster"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "up":
		err = up(args)
	case "down":
		err = down(args)
	case "status":
		err = status(args)
	case "kubeconfig":
		err = kubeconfig(args)
	case "exec":
		err = execIn(args)
	case "supervise": // hidden: the daemon `up` starts
		err = supervise(args)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: localcluster up|down|status|kubeconfig|exec [--name N] [--state-root DIR] (up: [--nodes 3] [--real-nodes 0] [--images-dir DIR] [--cluster-domain cluster.local] [--no-kube-proxy] [--nodeagent-bin P] [--operator-bin P])")
	os.Exit(2)
}

type common struct {
	name, root string
}

func newFlags(cmd string, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&c.name, "name", "dev", "cluster name")
	fs.StringVar(&c.root, "state-root", localcluster.DefaultStateRoot, "folder holding one folder per cluster")
	return fs
}

func up(args []string) error {
	var c common
	var o localcluster.Options
	fs := newFlags("up", &c)
	fs.IntVar(&o.Nodes, "nodes", 3, "node agents")
	fs.IntVar(&o.RealNodes, "real-nodes", 0, "real nodes (kubelet + containerd), after the node agents")
	fs.StringVar(&o.ImagesDir, "images-dir", "", "OCI image tarballs imported into every real node (default $LC_IMAGES_DIR; `make images` writes bin/images)")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", localcluster.DefaultClusterDomain, "the cluster's DNS domain (CoreDNS, Pods' search path, the apiserver's names); Cozystack uses cozy.local")
	fs.BoolVar(&o.NoKubeProxy, "no-kube-proxy", false, "do not run kube-proxy (no ClusterIP Services)")
	fs.StringVar(&o.NodeAgentBin, "nodeagent-bin", "", "node agent binary (default $LC_NODEAGENT_BIN or go build ./e2e/cmd/nodeagent)")
	fs.StringVar(&o.OperatorBin, "operator-bin", "", "passed to the node agents as --operator-binary")
	fs.StringVar(&o.ToolsDir, "tools-dir", "", "tools cache (default $ETCD_OPERATOR_TOOLS or ~/.cache/etcd-operator-tools)")
	owner := fs.Int("owner-pid", 0, "tear the cluster down when this process exits (0: keep it until `down`)")
	_ = fs.Parse(args)
	o.Name, o.StateRoot = c.name, c.root
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	st, err := localcluster.Up(ctx, o, localcluster.UpOptions{OwnerPID: *owner})
	if err != nil {
		return err
	}
	fmt.Printf("cluster %s ready in %s (supervisor pid %d, netns %s)\n", st.Name, time.Since(start).Round(time.Millisecond), st.SupervisorPID, st.Netns)
	for _, t := range st.Timings {
		fmt.Printf("  %-45s %s\n", t.Phase, t.Elapsed.Round(time.Millisecond))
	}
	fmt.Printf("export KUBECONFIG=%s\n", st.Kubeconfig)
	return nil
}

func down(args []string) error {
	var c common
	_ = newFlags("down", &c).Parse(args)
	start := time.Now()
	if err := localcluster.Down(c.root, c.name); err != nil {
		return err
	}
	fmt.Printf("cluster %s down in %s\n", c.name, time.Since(start).Round(time.Millisecond))
	return nil
}

func status(args []string) error {
	var c common
	_ = newFlags("status", &c).Parse(args)
	st, err := localcluster.ReadState(c.root, c.name)
	if err != nil {
		return fmt.Errorf("cluster %s: %w (known clusters: %v)", c.name, err, localcluster.List(c.root))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(st)
}

func kubeconfig(args []string) error {
	var c common
	_ = newFlags("kubeconfig", &c).Parse(args)
	st, err := localcluster.ReadState(c.root, c.name)
	if err != nil {
		return err
	}
	if !st.Ready {
		return fmt.Errorf("cluster %s is not ready", c.name)
	}
	fmt.Println(st.Kubeconfig)
	return nil
}

func execIn(args []string) error {
	var c common
	fs := newFlags("exec", &c)
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		return fmt.Errorf("exec: no command")
	}
	st, err := localcluster.ReadState(c.root, c.name)
	if err != nil {
		return err
	}
	cmd := localcluster.InClusterCommand(context.Background(), st, fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		return err
	}
	return nil
}

func supervise(args []string) error {
	fs := flag.NewFlagSet("supervise", flag.ExitOnError)
	options := fs.String("options", "", "options.json written by up")
	owner := fs.Int("owner-pid", 0, "tear down when this process exits (0: never)")
	_ = fs.Parse(args)
	return localcluster.Supervise(*options, *owner)
}
