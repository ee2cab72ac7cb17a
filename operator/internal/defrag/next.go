package defrag

import "slices"

// Live is a planned member as it is now, in plan order.
type Live struct {
	Name    string
	ID      uint64
	Leader  bool
	Learner bool
	// Pending: planned for a defrag and not yet done.
	Pending bool
}

// Kind of the next step of a run.
type Kind string

const (
	Done       Kind = "Done"
	Defragment Kind = "Defragment"
	// MoveLeader hands leadership to Target before Member, the leader, is defragmented.
	MoveLeader Kind = "MoveLeader"
)

// Action is the next step.
type Action struct {
	Kind   Kind
	Member string
	Target uint64
}

// Next is the next step over ms: the first pending member, unless it leads a cluster with
// another voter, which first takes leadership (one already defragmented, when there is one).
// Leadership can move during a run, so it is read live, not from the plan.
func Next(ms []Live) Action {
	i := slices.IndexFunc(ms, func(m Live) bool { return m.Pending })
	if i < 0 {
		return Action{Kind: Done}
	}
	m := ms[i]
	if !m.Leader {
		return Action{Kind: Defragment, Member: m.Name}
	}
	var target *Live
	for j := range ms {
		o := &ms[j]
		if o.Leader || o.Learner {
			continue
		}
		if target == nil || (target.Pending && !o.Pending) {
			target = o
		}
	}
	if target == nil {
		return Action{Kind: Defragment, Member: m.Name}
	}
	return Action{Kind: MoveLeader, Member: m.Name, Target: target.ID}
}
