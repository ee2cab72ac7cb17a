package status

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// NewCmd is `kubectl etcd status CLUSTER`.
func NewCmd(o *kubectletcd.Options) *cobra.Command {
	return &cobra.Command{
		Use:               "status CLUSTER",
		Short:             "Members with their roles, versions, database sizes, raft indexes and health; alarms; the last backup",
		Args:              kubectletcd.ClusterArgs(0),
		ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, args []string) error {
			view, err := Collect(cmd.Context(), s)
			if err != nil {
				return err
			}
			return kubectletcd.Print(o.Out, o.Output, view, func(w io.Writer) { Table(w, view, time.Now()) })
		}),
	}
}

// Collect asks every registered member for its status, and etcd for its alarms.
func Collect(ctx context.Context, s *kubectletcd.Session) (Cluster, error) {
	conn, err := s.Dial(ctx, "")
	if err != nil {
		return Cluster{}, err
	}
	probes := s.Probe(ctx, conn)
	actx, cancel := context.WithTimeout(ctx, kubectletcd.ProbeTimeout)
	defer cancel()
	alarms, alarmsErr := conn.AlarmList(actx)
	snaps := &v1alpha2.EtcdSnapshotList{}
	if err := s.Client.List(ctx, snaps, client.InNamespace(s.Namespace)); err != nil {
		return Cluster{}, err
	}
	view := Build(s.Cluster, probes, alarms, alarmsErr, snaps.Items)
	view.Sorted()
	return view, nil
}

// NewMembersCmd is `kubectl etcd members CLUSTER`.
func NewMembersCmd(o *kubectletcd.Options) *cobra.Command {
	return &cobra.Command{
		Use:               "members CLUSTER",
		Short:             "etcd's member list joined with the cluster's EtcdMembers and their Pods",
		Args:              kubectletcd.ClusterArgs(0),
		ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, args []string) error {
			conn, err := s.Dial(cmd.Context(), "")
			if err != nil {
				return err
			}
			list, err := conn.MemberList(cmd.Context())
			if err != nil {
				return err
			}
			es := Entries(list, s.Members)
			return kubectletcd.Print(o.Out, o.Output, es, func(w io.Writer) { MembersTable(w, es) })
		}),
	}
}
