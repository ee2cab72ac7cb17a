package archive

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Base is a full snapshot: its name, the revision it holds and when it was taken.
type Base struct {
	Name     string
	Revision int64
	Time     time.Time
}

// Range is a closed revision range.
type Range struct{ From, To int64 }

func (r Range) String() string { return fmt.Sprintf("%d-%d", r.From, r.To) }

// Chain is a base and how far its segments reach without a gap: every revision in
// [Base.Revision, Reach] is recoverable from it; ReachTime is the archiver's time of Reach (the
// base's time when no segment continues it).
type Chain struct {
	Base      Base
	Reach     int64
	ReachTime time.Time
}

// Report is the state of an archive.
type Report struct {
	// Chains, one per base, oldest first.
	Chains []Chain
	// Recoverable are the revision ranges some chain reaches, merged, ascending.
	Recoverable []Range
	// Gaps are revisions between the first recoverable and the newest archived one that no chain
	// reaches: changes lost until the next base (a compaction outran the archiver, segments
	// were deleted).
	Gaps []Range
	// Duplicates are groups of segments with the same range (two archivers after a crash wrote
	// it twice); Overlaps are pairs of segments whose ranges intersect otherwise. Both are
	// harmless: restore applies each revision once.
	Duplicates [][]string
	Overlaps   [][2]string
}

func sortRefs(refs []Ref) {
	slices.SortFunc(refs, func(a, b Ref) int {
		return cmp.Or(cmp.Compare(a.First, b.First), cmp.Compare(a.Last, b.Last), cmp.Compare(a.Name, b.Name))
	})
}

func sortBases(bases []Base) []Base {
	out := slices.Clone(bases)
	slices.SortFunc(out, func(a, b Base) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), a.Time.Compare(b.Time), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Step is one segment of a plan and the revisions to apply from it (those outside From-To the
// segment holds are skipped: an earlier segment applied them, or they lie past the target).
type Step struct {
	Segment  Ref
	From, To int64
}

// walk follows segments from revision `from` (the last one already recoverable) up to limit,
// taking at each point the segment that reaches furthest; it returns the steps and the last
// revision reached.
func walk(segs []Ref, from, limit int64) ([]Step, int64) {
	var steps []Step
	at := from
	for at < limit {
		best := -1
		for i, s := range segs {
			if s.First <= at+1 && s.Last > at && (best < 0 || s.Last > segs[best].Last) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		to := min(segs[best].Last, limit)
		steps = append(steps, Step{Segment: segs[best], From: at + 1, To: to})
		at = to
	}
	return steps, at
}

// chainOf is the chain of base b.
func chainOf(b Base, segs []Ref) Chain {
	steps, reach := walk(segs, b.Revision, maxRevision)
	c := Chain{Base: b, Reach: reach, ReachTime: b.Time}
	if len(steps) > 0 {
		c.ReachTime = steps[len(steps)-1].Segment.LastTime
	}
	return c
}

const maxRevision = int64(1<<63 - 1)

// Analyze reports the chains, recoverable ranges, gaps, duplicates and overlaps of an archive.
func Analyze(bases []Base, segs []Ref) Report {
	segs = slices.Clone(segs)
	sortRefs(segs)
	var r Report
	for _, b := range sortBases(bases) {
		r.Chains = append(r.Chains, chainOf(b, segs))
	}
	r.Recoverable = merge(r.Chains)
	r.Gaps = gaps(r.Recoverable, segs)
	r.Duplicates, r.Overlaps = overlaps(segs)
	return r
}

func merge(chains []Chain) []Range {
	var out []Range
	for _, c := range chains { // sorted by base revision
		n := len(out)
		if n > 0 && c.Base.Revision <= out[n-1].To+1 {
			out[n-1].To = max(out[n-1].To, c.Reach)
			continue
		}
		out = append(out, Range{c.Base.Revision, c.Reach})
	}
	return out
}

// gaps are the holes between recoverable ranges, and after the last one up to the newest
// archived revision.
func gaps(rec []Range, segs []Ref) []Range {
	var out []Range
	for i := 1; i < len(rec); i++ {
		out = append(out, Range{rec[i-1].To + 1, rec[i].From - 1})
	}
	if len(rec) > 0 && len(segs) > 0 {
		newest := slices.MaxFunc(segs, func(a, b Ref) int { return cmp.Compare(a.Last, b.Last) }).Last
		if newest > rec[len(rec)-1].To {
			out = append(out, Range{rec[len(rec)-1].To + 1, newest})
		}
	}
	return out
}

func overlaps(segs []Ref) (dups [][]string, over [][2]string) {
	for i := 0; i < len(segs); i++ {
		j := i + 1
		for j < len(segs) && segs[j].First == segs[i].First && segs[j].Last == segs[i].Last {
			j++
		}
		if j > i+1 {
			var names []string
			for _, s := range segs[i:j] {
				names = append(names, s.Name)
			}
			dups = append(dups, names)
		}
		for k := j; k < len(segs) && segs[k].First <= segs[i].Last; k++ {
			over = append(over, [2]string{segs[i].Name, segs[k].Name})
		}
		i = j - 1
	}
	return dups, over
}
