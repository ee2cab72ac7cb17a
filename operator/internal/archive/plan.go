package archive

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// TargetKind names what a restore aims at.
type TargetKind string

const (
	// TargetLatest is the newest recoverable revision.
	TargetLatest TargetKind = "Latest"
	// TargetRevision is one revision of the original cluster.
	TargetRevision TargetKind = "Revision"
	// TargetTime is the keyspace as the archiver saw it at a time: every revision whose mark is
	// at or before it (see Mark for the precision).
	TargetTime TargetKind = "Time"
)

// Target is a restore's aim; Revision and Time are read for their kinds only.
type Target struct {
	Kind     TargetKind
	Revision int64
	Time     time.Time
}

func (t Target) String() string {
	switch t.Kind {
	case TargetRevision:
		return fmt.Sprintf("revision %d", t.Revision)
	case TargetTime:
		return "time " + t.Time.UTC().Format(time.RFC3339Nano)
	}
	return "the latest revision"
}

// Plan restores Base, then applies Steps in order. Revision is the last revision it may reach;
// for a time target StopTime is set and the last step stops before the first revision marked
// after it (the segment's marks decide, read when it is applied).
type Plan struct {
	Base     Base
	Steps    []Step
	Revision int64
	StopTime time.Time
}

// ErrUnreachable is wrapped by PlanRestore when no chain reaches the target.
var ErrUnreachable = errors.New("the archive cannot reach the target")

// PlanRestore picks the newest base whose chain reaches the target and the segments from it.
func PlanRestore(bases []Base, segs []Ref, t Target) (Plan, error) {
	r := Analyze(bases, segs)
	if len(r.Chains) == 0 {
		return Plan{}, fmt.Errorf("%w: there is no full snapshot", ErrUnreachable)
	}
	c, ok := pick(r.Chains, t)
	if !ok {
		return Plan{}, fmt.Errorf("%w: %s is outside every recoverable range (%s)", ErrUnreachable, t, describe(r))
	}
	sorted := slices.Clone(segs)
	sortRefs(sorted)
	p := Plan{Base: c.Base, Revision: c.Reach}
	switch t.Kind {
	case TargetRevision:
		p.Revision = t.Revision
	case TargetTime:
		p.StopTime = t.Time
		p.Revision = reachBy(c, sorted, t.Time)
	}
	p.Steps, _ = walk(sorted, c.Base.Revision, p.Revision)
	return p, nil
}

// pick is the newest chain that holds the target.
func pick(chains []Chain, t Target) (Chain, bool) {
	if t.Kind != TargetRevision && t.Kind != TargetTime {
		return slices.MaxFunc(chains, compareReach), true
	}
	for i := len(chains) - 1; i >= 0; i-- {
		c := chains[i]
		switch t.Kind {
		case TargetRevision:
			if c.Base.Revision <= t.Revision && t.Revision <= c.Reach {
				return c, true
			}
		case TargetTime:
			if !c.Base.Time.After(t.Time) && !c.ReachTime.Before(t.Time) {
				return c, true
			}
		}
	}
	return Chain{}, false
}

// compareReach orders chains by reach, then by base revision (the newer base replays less).
func compareReach(a, b Chain) int {
	return cmp.Or(cmp.Compare(a.Reach, b.Reach), cmp.Compare(a.Base.Revision, b.Base.Revision))
}

// reachBy is the last revision of the chain's segments a time target can need: the end of the
// first segment whose last mark is at or after t (its marks cut it further when applied).
func reachBy(c Chain, segs []Ref, t time.Time) int64 {
	steps, _ := walk(segs, c.Base.Revision, c.Reach)
	for _, s := range steps {
		if !s.Segment.LastTime.Before(t) {
			return s.To
		}
	}
	return c.Reach
}

func describe(r Report) string {
	var parts []string
	for _, c := range r.Chains {
		parts = append(parts, fmt.Sprintf("revisions %d-%d from %s, times %s to %s", c.Base.Revision, c.Reach, c.Base.Name,
			c.Base.Time.UTC().Format(time.RFC3339), c.ReachTime.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// Expired returns what retention deletes so that every point of the last `window` stays
// reachable, deleting whole chains only: it keeps every base taken inside the window, the newest
// base taken before it (whose chain reaches the window's start) and the newest base in any case,
// and the segments any kept base can need (those past the oldest kept base's revision); older
// bases and the segments that end at or before it go.
func Expired(bases []Base, segs []Ref, now time.Time, window time.Duration) (oldBases, oldSegs []string) {
	sorted := sortBases(bases)
	if len(sorted) == 0 {
		return nil, nil
	}
	cutoff := now.Add(-window)
	keepFrom := len(sorted) - 1
	for i := len(sorted) - 1; i >= 0; i-- {
		keepFrom = i
		if !sorted[i].Time.After(cutoff) {
			break
		}
	}
	oldest := sorted[keepFrom].Revision
	for _, b := range sorted[:keepFrom] {
		oldBases = append(oldBases, b.Name)
	}
	for _, s := range segs {
		if s.Last <= oldest {
			oldSegs = append(oldSegs, s.Name)
		}
	}
	slices.Sort(oldSegs)
	return oldBases, oldSegs
}
