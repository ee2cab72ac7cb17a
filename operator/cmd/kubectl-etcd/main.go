// Command kubectl-etcd is a kubectl plugin (`kubectl etcd ...`) that operates an etcd cluster
// of this operator by its EtcdCluster name, from anywhere a kubeconfig reaches the API server.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/etcdctl"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/maintenance"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/snapshot"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd/status"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	root := newRoot(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := kubectletcd.CodeOf(err)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") { // cobra's, for a verb it does not have
		code = kubectletcd.ExitUsage
	}
	if pe, ok := err.(*kubectletcd.Error); !ok || !pe.Silent {
		if err != nil {
			fmt.Fprintln(streams.ErrOut, "error:", err)
		}
	}
	return code
}

func newRoot(streams genericiooptions.IOStreams) *cobra.Command {
	o := &kubectletcd.Options{Kube: genericclioptions.NewConfigFlags(true), IOStreams: streams}
	root := &cobra.Command{
		Use:   "kubectl-etcd",
		Short: "Operate an etcd cluster of the etcd-operator by its EtcdCluster name",
		Long: "kubectl etcd finds a cluster's members, TLS material and credentials from its objects and reaches etcd\n" +
			"through port-forwards to the member Pods: a kubeconfig is all it needs. It acts with the operator's\n" +
			"client certificate and etcd user, so it needs read access to those Secrets and pods/portforward.",
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl etcd"},
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(*cobra.Command, []string) error { return kubectletcd.CheckFormat(o.Output) },
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &kubectletcd.Error{Code: kubectletcd.ExitUsage, Err: err}
	})
	o.AddFlags(root)
	root.AddCommand(status.NewCmd(o), status.NewMembersCmd(o), snapshot.NewCmd(o), snapshot.NewRestoreCmd(o),
		maintenance.NewDefragCmd(o), maintenance.NewMoveLeaderCmd(o), maintenance.NewAlarmCmd(o), etcdctl.NewCmd(o))
	return root
}
