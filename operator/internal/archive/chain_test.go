package archive

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// seg is a segment ref over first-last whose times are t0 + revision seconds.
func seg(first, last int64) Ref {
	return Ref{Name: SegmentName(first, last, at(first), at(last)), First: first, Last: last, FirstTime: at(first), LastTime: at(last)}
}

// dup is a second archiver's copy of the same range (its clock a little later).
func dup(first, last int64) Ref {
	r := seg(first, last)
	r.LastTime = r.LastTime.Add(time.Millisecond)
	r.Name = SegmentName(first, last, r.FirstTime, r.LastTime)
	return r
}

func at(rev int64) time.Time { return t0.Add(time.Duration(rev) * time.Second) }

func base(rev int64) Base {
	return Base{Name: fmt.Sprintf("full-%d", rev), Revision: rev, Time: at(rev)}
}

func TestAnalyze(t *testing.T) {
	for name, tc := range map[string]struct {
		bases       []Base
		segs        []Ref
		recoverable []Range
		gaps        []Range
		dups, overs int
	}{
		"a base alone": {
			bases: []Base{base(100)}, recoverable: []Range{{100, 100}},
		},
		"continuous": {
			bases: []Base{base(100)}, segs: []Ref{seg(101, 150), seg(151, 200)}, recoverable: []Range{{100, 200}},
		},
		"a gap without a new base": {
			bases: []Base{base(100)}, segs: []Ref{seg(101, 150), seg(171, 200)},
			recoverable: []Range{{100, 150}}, gaps: []Range{{151, 200}},
		},
		"a gap healed by a new base": {
			bases: []Base{base(100), base(180)}, segs: []Ref{seg(101, 150), seg(171, 200)},
			recoverable: []Range{{100, 150}, {180, 200}}, gaps: []Range{{151, 179}},
		},
		"overlap after a restart": {
			bases: []Base{base(100)}, segs: []Ref{seg(101, 150), seg(140, 200)},
			recoverable: []Range{{100, 200}}, overs: 1,
		},
		"duplicates after a crash": {
			bases: []Base{base(100)}, segs: []Ref{seg(101, 150), dup(101, 150), seg(151, 160)},
			recoverable: []Range{{100, 160}}, dups: 1,
		},
		"segments before the base are not needed": {
			bases: []Base{base(100)}, segs: []Ref{seg(50, 99), seg(101, 120)}, recoverable: []Range{{100, 120}},
		},
		"a segment straddling the base": {
			bases: []Base{base(100)}, segs: []Ref{seg(90, 130)}, recoverable: []Range{{100, 130}},
		},
		"two bases, one chain": {
			bases: []Base{base(150), base(100)}, segs: []Ref{seg(101, 200)}, recoverable: []Range{{100, 200}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := Analyze(tc.bases, tc.segs)
			if !slices.Equal(r.Recoverable, tc.recoverable) || !slices.Equal(r.Gaps, tc.gaps) ||
				len(r.Duplicates) != tc.dups || len(r.Overlaps) != tc.overs {
				t.Errorf("recoverable %v gaps %v duplicates %v overlaps %v", r.Recoverable, r.Gaps, r.Duplicates, r.Overlaps)
			}
		})
	}
}

func TestPlanRestore(t *testing.T) {
	bases := []Base{base(100), base(180)}
	segs := []Ref{seg(101, 150), dup(101, 150), seg(141, 160), seg(181, 220), seg(221, 260)}
	for name, tc := range map[string]struct {
		target   Target
		base     int64
		steps    []Range
		revision int64
		unreach  bool
	}{
		"latest: the newest base, its chain": {target: Target{Kind: TargetLatest}, base: 180, steps: []Range{{181, 220}, {221, 260}}, revision: 260},
		"a revision in the old chain":        {target: Target{Kind: TargetRevision, Revision: 155}, base: 100, steps: []Range{{101, 150}, {151, 155}}, revision: 155},
		"the base's own revision":            {target: Target{Kind: TargetRevision, Revision: 180}, base: 180, revision: 180},
		"a revision inside one segment":      {target: Target{Kind: TargetRevision, Revision: 200}, base: 180, steps: []Range{{181, 200}}, revision: 200},
		"a revision in the gap":              {target: Target{Kind: TargetRevision, Revision: 170}, unreach: true},
		"a revision past the archive":        {target: Target{Kind: TargetRevision, Revision: 261}, unreach: true},
		"a revision before every base":       {target: Target{Kind: TargetRevision, Revision: 99}, unreach: true},
		"a time: the segment that holds it": {target: Target{Kind: TargetTime, Time: at(230).Add(-time.Millisecond)}, base: 180,
			steps: []Range{{181, 220}, {221, 260}}, revision: 260},
		"a time on a segment's end":    {target: Target{Kind: TargetTime, Time: at(220)}, base: 180, steps: []Range{{181, 220}}, revision: 220},
		"a time in the old chain":      {target: Target{Kind: TargetTime, Time: at(120)}, base: 100, steps: []Range{{101, 150}}, revision: 150},
		"a time in the gap":            {target: Target{Kind: TargetTime, Time: at(170)}, unreach: true},
		"a time after the last mark":   {target: Target{Kind: TargetTime, Time: at(261)}, unreach: true},
		"a time before the first base": {target: Target{Kind: TargetTime, Time: at(99)}, unreach: true},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := PlanRestore(bases, segs, tc.target)
			if tc.unreach {
				if !errors.Is(err, ErrUnreachable) {
					t.Fatalf("plan %+v, err %v; want ErrUnreachable", p, err)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var steps []Range
			for _, s := range p.Steps {
				steps = append(steps, Range{s.From, s.To})
			}
			if p.Base.Revision != tc.base || !slices.Equal(steps, tc.steps) || p.Revision != tc.revision ||
				(tc.target.Kind == TargetTime) != !p.StopTime.IsZero() {
				t.Errorf("base %d steps %v revision %d stop %s", p.Base.Revision, steps, p.Revision, p.StopTime)
			}
		})
	}
	if _, err := PlanRestore(nil, segs, Target{Kind: TargetLatest}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("no base: %v", err)
	}
}

func TestExpired(t *testing.T) {
	bases := []Base{base(100), base(200), base(300)}
	segs := []Ref{seg(101, 150), seg(151, 200), seg(190, 250), seg(251, 300), seg(301, 350)}
	for name, tc := range map[string]struct {
		now          time.Time
		window       time.Duration
		bases, segms []string
	}{
		"everything inside the window": {now: at(350), window: 300 * time.Second},
		"the window starts in the second chain": {now: at(350), window: 100 * time.Second,
			bases: []string{"full-100"}, segms: []string{seg(101, 150).Name, seg(151, 200).Name}},
		"the window starts on a base": {now: at(350), window: 150 * time.Second,
			bases: []string{"full-100"}, segms: []string{seg(101, 150).Name, seg(151, 200).Name}},
		"a window inside the newest chain": {now: at(350), window: 10 * time.Second,
			bases: []string{"full-100", "full-200"}, segms: []string{seg(101, 150).Name, seg(151, 200).Name, seg(190, 250).Name, seg(251, 300).Name}},
		"the newest base stays, however old": {now: at(10_000), window: time.Second,
			bases: []string{"full-100", "full-200"}, segms: []string{seg(101, 150).Name, seg(151, 200).Name, seg(190, 250).Name, seg(251, 300).Name}},
	} {
		t.Run(name, func(t *testing.T) {
			b, s := Expired(bases, segs, tc.now, tc.window)
			if !slices.Equal(b, tc.bases) || !slices.Equal(s, tc.segms) {
				t.Errorf("bases %v segments %v", b, s)
			}
			// Every point of the window is still reachable from what is left.
			left := slices.DeleteFunc(slices.Clone(bases), func(x Base) bool { return slices.Contains(b, x.Name) })
			leftSegs := slices.DeleteFunc(slices.Clone(segs), func(x Ref) bool { return slices.Contains(s, x.Name) })
			for rev := int64(100); rev <= 350; rev++ {
				if at(rev).Before(tc.now.Add(-tc.window)) {
					continue
				}
				if _, err := PlanRestore(left, leftSegs, Target{Kind: TargetRevision, Revision: rev}); err != nil {
					t.Fatalf("revision %d lost: %v", rev, err)
				}
			}
		})
	}
}
