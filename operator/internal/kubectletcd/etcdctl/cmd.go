// Package etcdctl is `kubectl etcd etcdctl CLUSTER -- ARGS`: etcdctl run against the cluster
// with its TLS material and credentials, through port-forwards.
package etcdctl

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// NewCmd is the verb.
func NewCmd(o *kubectletcd.Options) *cobra.Command {
	var binary string
	cmd := &cobra.Command{
		Use:   "etcdctl CLUSTER -- ARGS...",
		Short: "Run a local etcdctl against the cluster, with its endpoints, certificates and credentials set",
		Long: "Forwards a loopback port to each registered member, writes the client TLS material the operator dials\n" +
			"with into a private temporary directory, and runs etcdctl with ETCDCTL_ENDPOINTS, ETCDCTL_CACERT,\n" +
			"ETCDCTL_CERT, ETCDCTL_KEY and ETCDCTL_USER set (the password never appears on a command line). The\n" +
			"exit code is etcdctl's. Server certificates must name 127.0.0.1 (the operator's do).",
		Example:           "  kubectl etcd etcdctl my-cluster -- endpoint status -w table\n  kubectl etcd etcdctl my-cluster -- get --prefix /registry --keys-only",
		ValidArgsFunction: o.CompleteClusters,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if dash != 1 || len(args) < 2 {
				return kubectletcd.Errorf(kubectletcd.ExitUsage, "expected: kubectl etcd etcdctl CLUSTER -- ARGS...")
			}
			path, err := exec.LookPath(binary)
			if err != nil {
				return kubectletcd.Errorf(kubectletcd.ExitUsage, "%s not found: put etcdctl on PATH or pass --etcdctl: %v", binary, err)
			}
			return o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, etcdctlArgs []string) error {
				return run(cmd, s, path, etcdctlArgs)
			})(cmd, args)
		},
	}
	cmd.Flags().StringVar(&binary, "etcdctl", "etcdctl", "the etcdctl binary to run")
	return cmd
}

func run(cmd *cobra.Command, s *kubectletcd.Session, path string, args []string) error {
	ctx := cmd.Context()
	dir, err := os.MkdirTemp("", "kubectl-etcd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files, err := s.Access.Export(ctx, etcdaccess.Request{Cluster: s.Cluster, Members: s.Members}, dir)
	if err != nil {
		return err
	}
	var endpoints []string
	for _, m := range s.Registered() {
		ep, err := s.LocalEndpoint(ctx, &m, files.CAFile != "")
		if err != nil {
			return err
		}
		endpoints = append(endpoints, ep)
	}
	c := exec.CommandContext(ctx, path, args...)
	c.Stdin, c.Stdout, c.Stderr = s.In, s.Out, s.ErrOut
	c.Env = append(os.Environ(), Env(files, endpoints)...)
	err = c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return &kubectletcd.Error{Code: exit.ExitCode(), Err: err, Silent: true}
	}
	return err
}

// Env is etcdctl's environment for the exported material and the forwarded endpoints.
func Env(f etcdaccess.Files, endpoints []string) []string {
	env := []string{"ETCDCTL_ENDPOINTS=" + strings.Join(endpoints, ",")}
	if f.CAFile != "" {
		env = append(env, "ETCDCTL_CACERT="+f.CAFile)
	}
	if f.CertFile != "" {
		env = append(env, "ETCDCTL_CERT="+f.CertFile, "ETCDCTL_KEY="+f.KeyFile)
	}
	if f.Username != "" {
		env = append(env, "ETCDCTL_USER="+f.Username+":"+f.Password)
	}
	return env
}
