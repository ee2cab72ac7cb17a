// Package defrag decides a defragmentation run: which members the rule selects, with the
// reason for each it skips, and the order they are taken in (learners, then followers, the
// leader last). It is pure: a table test pins every rule.
package defrag

import (
	"cmp"
	"fmt"
	"slices"
)

// Defaults of an absent threshold, as the public API documents them.
const (
	DefaultFreeSpaceAbove = 200 << 20
	DefaultMinReclaim     = 32 << 20
)

// Member is one member as a run sees it when it starts.
type Member struct {
	Name    string
	Leader  bool
	Learner bool
	// DBSize is the database's size on disk, DBSizeInUse the part holding data, Quota the
	// backend quota (0: unknown).
	DBSize, DBSizeInUse, Quota int64
}

// Reclaimable is what a defrag would give back.
func (m Member) Reclaimable() int64 { return max(m.DBSize-m.DBSizeInUse, 0) }

// Role is how the run reports the member.
func (m Member) Role() string {
	switch {
	case m.Leader:
		return "leader"
	case m.Learner:
		return "learner"
	}
	return "follower"
}

// Rule is the spec's rule with its defaults applied.
type Rule struct {
	All bool
	// FreeSpaceAbove: reclaimable space above this selects a member.
	FreeSpaceAbove int64
	// QuotaUsageAbove (percent, 0: unset): a database above this share of its quota is
	// selected when it would reclaim at least MinReclaim.
	QuotaUsageAbove int
	MinReclaim      int64
}

// Step is one member of the plan.
type Step struct {
	Member
	Defragment bool
	// Reason says why: All, FreeSpace, QuotaPressure, or BelowThreshold when skipped; Message
	// gives the numbers.
	Reason, Message string
}

// Reasons of a step.
const (
	ReasonAll            = "All"
	ReasonFreeSpace      = "FreeSpace"
	ReasonQuotaPressure  = "QuotaPressure"
	ReasonBelowThreshold = "BelowThreshold"
)

// Plan orders ms (learners, followers by name, the leader last: a leader busy defragmenting
// stalls every write, so it goes after leadership has moved) and decides each one.
func Plan(ms []Member, r Rule) []Step {
	out := make([]Step, 0, len(ms))
	for _, m := range ms {
		out = append(out, decide(m, r))
	}
	slices.SortStableFunc(out, func(a, b Step) int {
		return cmp.Or(cmp.Compare(rank(a.Member), rank(b.Member)), cmp.Compare(a.Name, b.Name))
	})
	return out
}

func rank(m Member) int {
	switch {
	case m.Learner:
		return 0
	case m.Leader:
		return 2
	}
	return 1
}

func decide(m Member, r Rule) Step {
	free := m.Reclaimable()
	switch {
	case r.All:
		return Step{Member: m, Defragment: true, Reason: ReasonAll, Message: "rule.all"}
	case free > r.FreeSpaceAbove:
		return Step{Member: m, Defragment: true, Reason: ReasonFreeSpace,
			Message: fmt.Sprintf("%s reclaimable > freeSpaceAbove %s", mib(free), mib(r.FreeSpaceAbove))}
	case quotaPressure(m, r) && free >= r.MinReclaim:
		return Step{Member: m, Defragment: true, Reason: ReasonQuotaPressure,
			Message: fmt.Sprintf("database %s is above %d%% of the %s quota; %s reclaimable ≥ minReclaim %s",
				mib(m.DBSize), r.QuotaUsageAbove, mib(m.Quota), mib(free), mib(r.MinReclaim))}
	case quotaPressure(m, r):
		return Step{Member: m, Reason: ReasonBelowThreshold,
			Message: fmt.Sprintf("%s reclaimable < minReclaim %s", mib(free), mib(r.MinReclaim))}
	}
	return Step{Member: m, Reason: ReasonBelowThreshold,
		Message: fmt.Sprintf("%s reclaimable ≤ freeSpaceAbove %s", mib(free), mib(r.FreeSpaceAbove))}
}

func quotaPressure(m Member, r Rule) bool {
	return r.QuotaUsageAbove > 0 && m.Quota > 0 && m.DBSize*100 > m.Quota*int64(r.QuotaUsageAbove)
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
