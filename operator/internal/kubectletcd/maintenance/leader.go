package maintenance

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
)

// Moved is what move-leader reports.
type Moved struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// NewMoveLeaderCmd is `kubectl etcd move-leader CLUSTER [MEMBER]`.
func NewMoveLeaderCmd(o *kubectletcd.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "move-leader CLUSTER [MEMBER]",
		Short: "Hand leadership to MEMBER (an EtcdMember name), or to the most caught-up follower",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return kubectletcd.Errorf(kubectletcd.ExitUsage, "expected the EtcdCluster's name and optionally a member, got %d argument(s)", len(args))
			}
			return nil
		},
		ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, args []string) error {
			to := ""
			if len(args) == 1 {
				to = args[0]
			}
			moved, err := MoveLeader(cmd.Context(), s, to)
			if err != nil {
				return err
			}
			return kubectletcd.Print(o.Out, o.Output, moved, func(w io.Writer) {
				fmt.Fprintf(w, "leadership moved from %s to %s\n", moved.From, moved.To)
			})
		}),
	}
}

// MoveLeader moves leadership on a healthy cluster to a voting member other than the leader.
func MoveLeader(ctx context.Context, s *kubectletcd.Session, to string) (Moved, error) {
	conn, err := s.Dial(ctx, "")
	if err != nil {
		return Moved{}, err
	}
	ls, err := healthy(ctx, s, conn)
	if err != nil {
		return Moved{}, err
	}
	leader, _ := byID(ls, ls[0].status.Leader)
	target, err := transferee(ls, leader, to)
	if err != nil {
		return Moved{}, err
	}
	if err := conn.MoveLeader(ctx, target.status.MemberID); err != nil {
		return Moved{}, fmt.Errorf("moving leadership to %s: %w", target.member.Name, err)
	}
	return Moved{From: leader.member.Name, To: target.member.Name}, nil
}

// transferee is the named member, or the voter with the highest applied index.
func transferee(ls []live, leader live, to string) (live, error) {
	var best *live
	for i := range ls {
		l := &ls[i]
		if to != "" && l.member.Name != to {
			continue
		}
		switch {
		case l.status.IsLearner && to != "":
			return live{}, kubectletcd.Errorf(kubectletcd.ExitUsage, "member %s is a learner: leadership goes only to a voting member", l.member.Name)
		case l.status.MemberID == leader.status.MemberID && to != "":
			return live{}, kubectletcd.Errorf(kubectletcd.ExitUsage, "member %s already leads", to)
		case l.status.IsLearner, l.status.MemberID == leader.status.MemberID:
			continue
		}
		if best == nil || l.status.RaftAppliedIndex > best.status.RaftAppliedIndex {
			best = l
		}
	}
	if best == nil {
		if to != "" {
			return live{}, kubectletcd.Errorf(kubectletcd.ExitNotFound, "no registered member %q", to)
		}
		return live{}, kubectletcd.Errorf(kubectletcd.ExitUnhealthy, "no other voting member to take leadership from %s", leader.member.Name)
	}
	return *best, nil
}
