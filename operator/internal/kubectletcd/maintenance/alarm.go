package maintenance

import (
	"cmp"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// Alarm is one active alarm, with the member's name when it is one of the cluster's.
type Alarm struct {
	Member string `json:"member"`
	ID     string `json:"memberID"`
	Type   string `json:"type"`
}

// NewAlarmCmd is `kubectl etcd alarm list|disarm CLUSTER`.
func NewAlarmCmd(o *kubectletcd.Options) *cobra.Command {
	cmd := &cobra.Command{Use: "alarm", Short: "List or disarm the cluster's alarms (NOSPACE, CORRUPT)"}
	list := &cobra.Command{
		Use: "list CLUSTER", Short: "The active alarms", Args: kubectletcd.ClusterArgs(0), ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, _ []string) error {
			_, as, _, err := alarms(cmd.Context(), s)
			if err != nil {
				return err
			}
			return kubectletcd.Print(o.Out, o.Output, as, func(w io.Writer) { alarmTable(w, as) })
		}),
	}
	disarm := &cobra.Command{
		Use: "disarm CLUSTER", Short: "Disarm every active alarm (free space first: a NOSPACE alarm comes back while the database is over its quota)",
		Args: kubectletcd.ClusterArgs(0), ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, _ []string) error {
			conn, as, raw, err := alarms(cmd.Context(), s)
			if err != nil {
				return err
			}
			if len(raw) == 0 {
				fmt.Fprintln(o.ErrOut, "no active alarm")
				return kubectletcd.Print(o.Out, o.Output, as, func(io.Writer) {})
			}
			if err := o.Confirm(fmt.Sprintf("Disarm %d alarm(s) of cluster %s?", len(raw), s.Cluster.Name)); err != nil {
				return err
			}
			for _, a := range raw {
				if err := conn.AlarmDisarm(cmd.Context(), a); err != nil {
					return fmt.Errorf("disarming %s of member %s: %w", a.Type, etcd.FormatID(a.MemberID), err)
				}
			}
			return kubectletcd.Print(o.Out, o.Output, as, func(w io.Writer) {
				for _, a := range as {
					fmt.Fprintf(w, "disarmed %s on %s\n", a.Type, a.Member)
				}
			})
		}),
	}
	cmd.AddCommand(list, disarm)
	return cmd
}

// alarms are the cluster's active alarms, raw and by member name, and the client they came through.
func alarms(ctx context.Context, s *kubectletcd.Session) (etcdaccess.Conn, []Alarm, []etcd.Alarm, error) {
	conn, err := s.Dial(ctx, "")
	if err != nil {
		return conn, nil, nil, err
	}
	raw, err := conn.AlarmList(ctx)
	if err != nil {
		return conn, nil, nil, err
	}
	names := map[uint64]string{}
	for _, m := range s.Members {
		names[etcd.ParseID(m.Status.MemberID)] = m.Name
	}
	as := []Alarm{}
	for _, a := range raw {
		as = append(as, Alarm{Member: cmp.Or(names[a.MemberID], "-"), ID: etcd.FormatID(a.MemberID), Type: a.Type})
	}
	return conn, as, raw, nil
}

func alarmTable(w io.Writer, as []Alarm) {
	fmt.Fprintln(w, "MEMBER\tID\tALARM")
	for _, a := range as {
		fmt.Fprintf(w, "%s\t%s\t%s\n", a.Member, a.ID, a.Type)
	}
}
