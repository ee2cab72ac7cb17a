package kubectletcd

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// Options are the flags every verb shares: kubectl's own (--kubeconfig, --context, -n, ...),
// -o and --yes.
type Options struct {
	Kube   *genericclioptions.ConfigFlags
	Output string
	Yes    bool
	genericiooptions.IOStreams
}

// AddFlags registers the shared flags on the root command.
func (o *Options) AddFlags(cmd *cobra.Command) {
	o.Kube.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().StringVarP(&o.Output, "output", "o", OutputTable, "output format: table, json or yaml")
	cmd.PersistentFlags().BoolVarP(&o.Yes, "yes", "y", false, "do not ask before a disruptive or destructive operation")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(Formats, cobra.ShellCompDirectiveNoFileComp))
}

// Client is a client of the API server the kubeconfig names, and its namespace.
func (o *Options) Client() (client.WithWatch, *rest.Config, string, error) {
	cfg, err := o.Kube.ToRESTConfig()
	if err != nil {
		return nil, nil, "", err
	}
	ns, _, err := o.Kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, nil, "", err
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, "", err
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return nil, nil, "", err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	return c, cfg, ns, err
}

// Session is one cluster, found by its EtcdCluster name, and the way to its etcd.
type Session struct {
	*Options
	Client    client.WithWatch
	Namespace string
	Cluster   *v1alpha2.EtcdCluster
	// Members are the cluster's EtcdMembers, by name.
	Members []v1alpha2.EtcdMember
	Access  *etcdaccess.Access
	forward *Forwarder
}

// Open finds the cluster and its members. Close it when done.
func (o *Options) Open(ctx context.Context, name string) (*Session, error) {
	c, cfg, ns, err := o.Client()
	if err != nil {
		return nil, err
	}
	ec := &v1alpha2.EtcdCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, Errorf(ExitNotFound, "etcdcluster %q not found in namespace %q", name, ns)
		}
		return nil, err
	}
	members, err := topology.ListMembers(ctx, c, ns, name, ec.UID)
	if err != nil {
		return nil, err
	}
	fw, err := NewForwarder(cfg)
	if err != nil {
		return nil, err
	}
	return &Session{Options: o, Client: c, Namespace: ns, Cluster: ec, Members: members,
		Access: etcdaccess.NewThrough(c, fw.Dial), forward: fw}, nil
}

// OnCluster is the RunE of a verb whose first argument is the cluster: it opens the session,
// runs the verb with the remaining arguments and closes it.
func (o *Options) OnCluster(run func(cmd *cobra.Command, s *Session, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		s, err := o.Open(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		defer s.Close()
		return run(cmd, s, args[1:])
	}
}

// Close ends the session's etcd clients and port-forwards.
func (s *Session) Close() {
	s.Access.Close()
	s.forward.Close()
}

// Dial is the cluster's client, balanced over its members, or pinned to one ("": balanced).
func (s *Session) Dial(ctx context.Context, member string) (etcdaccess.Conn, error) {
	conn, err := s.Access.Dial(ctx, etcdaccess.Request{Cluster: s.Cluster, Members: s.Members, Member: member})
	if err != nil {
		return conn, fmt.Errorf("reaching etcd of cluster %s: %w", s.Cluster.Name, err)
	}
	return conn, nil
}

// LocalEndpoint forwards a loopback port to the member's client port and returns it as a URL
// (https when tls): for programs that dial by address, such as etcdctl.
func (s *Session) LocalEndpoint(ctx context.Context, m *v1alpha2.EtcdMember, tls bool) (string, error) {
	u, err := url.Parse(resources.ClientURL(m))
	if err != nil {
		return "", err
	}
	pod, _, ok := topology.MemberPodOfHost(u.Hostname())
	if !ok {
		return "", fmt.Errorf("member %s advertises %s, which names no Pod", m.Name, u)
	}
	local, err := s.forward.Local(ctx, pod.Namespace, pod.Name, v1alpha2.ClientPort)
	if err != nil {
		return "", err
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d", scheme, local), nil
}

// Member is the EtcdMember of that name, or an ExitNotFound error naming the ones there are.
func (s *Session) Member(name string) (*v1alpha2.EtcdMember, error) {
	i := slices.IndexFunc(s.Members, func(m v1alpha2.EtcdMember) bool { return m.Name == name })
	if i < 0 {
		names := make([]string, 0, len(s.Members))
		for _, m := range s.Members {
			names = append(names, m.Name)
		}
		return nil, Errorf(ExitNotFound, "cluster %s has no member %q (members: %s)", s.Cluster.Name, name, strings.Join(names, ", "))
	}
	return &s.Members[i], nil
}

// Registered are the members etcd knows (those the plugin can reach).
func (s *Session) Registered() []v1alpha2.EtcdMember {
	var out []v1alpha2.EtcdMember
	for _, m := range s.Members {
		if topology.Registered(&m) {
			out = append(out, m)
		}
	}
	return out
}

// Confirm asks before a disruptive step, unless --yes. A declined or unanswered question is
// ExitAborted.
func (o *Options) Confirm(question string) error {
	if o.Yes {
		return nil
	}
	fmt.Fprintf(o.ErrOut, "%s [y/N] ", question)
	answer, _ := bufio.NewReader(o.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return Errorf(ExitAborted, "aborted: not confirmed (pass --yes to skip the question)")
}

// CompleteClusters completes an EtcdCluster name in the namespace of the flags.
func (o *Options) CompleteClusters(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, _, ns, err := o.Client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list := &v1alpha2.EtcdClusterList{}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(list.Items))
	for _, ec := range list.Items {
		names = append(names, ec.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// ClusterArgs takes exactly the cluster's name (plus n more arguments), as a usage error.
func ClusterArgs(more int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 1+more:
			return nil
		case more == 0:
			return Errorf(ExitUsage, "expected the EtcdCluster's name, got %d argument(s)", len(args))
		}
		return Errorf(ExitUsage, "expected the EtcdCluster's name and %d more argument(s), got %d argument(s)", more, len(args))
	}
}
