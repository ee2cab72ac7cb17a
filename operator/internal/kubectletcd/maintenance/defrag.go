package maintenance

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cozystack/etcd-operator/operator/internal/defrag"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
)

// Defragmented is one member's outcome.
type Defragmented struct {
	Member  string `json:"member"`
	Role    string `json:"role"`
	Before  int64  `json:"dbSizeBeforeBytes"`
	After   int64  `json:"dbSizeAfterBytes,omitempty"`
	Outcome string `json:"outcome"`
	// Reason is the plan's (All, FreeSpace, BelowThreshold) and Message its numbers.
	Reason   string        `json:"reason"`
	Message  string        `json:"message,omitempty"`
	Duration time.Duration `json:"durationNanoseconds,omitempty"`
}

// Outcomes.
const (
	OutcomeDefragmented = "Defragmented"
	OutcomeSkipped      = "Skipped"
)

// NewDefragCmd is `kubectl etcd defrag CLUSTER`.
func NewDefragCmd(o *kubectletcd.Options) *cobra.Command {
	var freeAbove int64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "defrag CLUSTER",
		Short: "Defragment the members one at a time: learners and followers first, the leader last after leadership moved",
		Long: "Only on a healthy cluster (every member answers, one leader). A member serves nothing while it is\n" +
			"defragmented; the next starts once it answers healthy again. With --free-space-above, members that would\n" +
			"reclaim less are skipped with the reason.",
		Args:              kubectletcd.ClusterArgs(0),
		ValidArgsFunction: o.CompleteClusters,
		RunE: o.OnCluster(func(cmd *cobra.Command, s *kubectletcd.Session, args []string) error {
			rule := defrag.Rule{All: freeAbove == 0, FreeSpaceAbove: freeAbove}
			res, err := Defrag(cmd.Context(), s, rule, timeout)
			if len(res) > 0 {
				if perr := kubectletcd.Print(o.Out, o.Output, res, func(w io.Writer) { defragTable(w, res) }); perr != nil {
					return perr
				}
			}
			return err
		}),
	}
	cmd.Flags().Int64Var(&freeAbove, "free-space-above", 0, "only members that would reclaim more than this many bytes (default: every member)")
	cmd.Flags().DurationVar(&timeout, "member-timeout", 5*time.Minute, "how long one member's defragmentation may take")
	return cmd
}

// Defrag runs the plan member by member; the results so far come back with an error too.
func Defrag(ctx context.Context, s *kubectletcd.Session, rule defrag.Rule, timeout time.Duration) ([]Defragmented, error) {
	conn, err := s.Dial(ctx, "")
	if err != nil {
		return nil, err
	}
	ls, err := healthy(ctx, s, conn)
	if err != nil {
		return nil, err
	}
	plan := defrag.Plan(planMembers(ls), rule)
	if err := s.Confirm(fmt.Sprintf("Defragment %d member(s) of cluster %s, one at a time (each serves nothing while it runs)?", countPending(plan), s.Cluster.Name)); err != nil {
		return nil, err
	}
	res := make([]Defragmented, len(plan))
	pending := map[string]bool{}
	for i, st := range plan {
		res[i] = Defragmented{Member: st.Name, Role: st.Role(), Before: st.DBSize, Reason: st.Reason, Message: st.Message, Outcome: OutcomeSkipped}
		pending[st.Name] = st.Defragment
	}
	for {
		if ls, err = healthy(ctx, s, conn); err != nil {
			return res, err
		}
		a := defrag.Next(liveOrder(plan, ls, pending))
		switch a.Kind {
		case defrag.Done:
			return res, nil
		case defrag.MoveLeader:
			if err := conn.MoveLeader(ctx, a.Target); err != nil {
				return res, fmt.Errorf("moving leadership off %s before its defragmentation: %w", a.Member, err)
			}
			continue
		}
		i := indexOf(res, a.Member)
		if err := defragOne(ctx, s, conn, &res[i], timeout); err != nil {
			return res, err
		}
		pending[a.Member] = false
	}
}

func defragOne(ctx context.Context, s *kubectletcd.Session, conn etcdaccess.Conn, r *Defragmented, timeout time.Duration) error {
	m, err := s.Member(r.Member)
	if err != nil {
		return err
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, timeout)
	err = conn.Defragment(dctx, resources.ClientURL(m))
	cancel()
	if err != nil {
		return fmt.Errorf("defragmenting member %s: %w", m.Name, err)
	}
	st, err := waitAnswering(ctx, conn, m, timeout)
	if err != nil {
		return err
	}
	r.After, r.Outcome, r.Duration = st.DBSize, OutcomeDefragmented, time.Since(start)
	return nil
}

func planMembers(ls []live) []defrag.Member {
	out := make([]defrag.Member, 0, len(ls))
	for _, l := range ls {
		st := l.status
		out = append(out, defrag.Member{Name: l.member.Name, Leader: st.Leader == st.MemberID, Learner: st.IsLearner,
			DBSize: st.DBSize, DBSizeInUse: st.DBSizeInUse, Quota: st.DBQuota})
	}
	return out
}

// liveOrder is the plan in its order, with leadership as it is now.
func liveOrder(plan []defrag.Step, ls []live, pending map[string]bool) []defrag.Live {
	out := make([]defrag.Live, 0, len(plan))
	for _, st := range plan {
		l := defrag.Live{Name: st.Name, Pending: pending[st.Name]}
		for _, x := range ls {
			if x.member.Name == st.Name {
				l.ID, l.Leader, l.Learner = x.status.MemberID, x.status.Leader == x.status.MemberID, x.status.IsLearner
			}
		}
		out = append(out, l)
	}
	return out
}

func countPending(plan []defrag.Step) int {
	n := 0
	for _, st := range plan {
		if st.Defragment {
			n++
		}
	}
	return n
}

func indexOf(res []Defragmented, name string) int {
	for i := range res {
		if res[i].Member == name {
			return i
		}
	}
	return -1
}

func defragTable(w io.Writer, res []Defragmented) {
	fmt.Fprintln(w, "MEMBER\tROLE\tOUTCOME\tBEFORE\tAFTER\tTOOK\tREASON")
	for _, r := range res {
		after, took := "-", "-"
		if r.Outcome == OutcomeDefragmented {
			after, took = kubectletcd.Bytes(r.After), r.Duration.Round(time.Millisecond).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Member, r.Role, r.Outcome, kubectletcd.Bytes(r.Before), after, took, r.Reason)
	}
}
