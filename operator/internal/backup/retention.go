package backup

import (
	"slices"
	"time"
)

// Snapshot is what retention knows of one snapshot of a schedule.
type Snapshot struct {
	Name string
	// Complete or Failed; neither means in flight, which retention never touches.
	Complete, Failed bool
	// At is when it completed or failed (its creation while in flight).
	At time.Time
	// InUse: a restore reads it.
	InUse bool
}

// Policy is spec.retention with its defaults applied.
type Policy struct {
	KeepLast   int
	MaxAge     time.Duration // 0: no age limit
	KeepFailed int
}

// Expired returns the snapshots retention deletes: Complete ones beyond the newest KeepLast or
// older than MaxAge, and Failed ones beyond the newest KeepFailed. The newest Complete snapshot
// is always kept, whatever its age, and so is every snapshot a restore reads.
func Expired(snaps []Snapshot, p Policy, now time.Time) []string {
	var complete, failed []Snapshot
	for _, s := range snaps {
		switch {
		case s.Complete:
			complete = append(complete, s)
		case s.Failed:
			failed = append(failed, s)
		}
	}
	newestFirst := func(a, b Snapshot) int { return b.At.Compare(a.At) }
	slices.SortStableFunc(complete, newestFirst)
	slices.SortStableFunc(failed, newestFirst)
	var out []string
	for i, s := range complete {
		tooMany := i >= max(p.KeepLast, 1)
		tooOld := p.MaxAge > 0 && now.Sub(s.At) > p.MaxAge
		if i > 0 && (tooMany || tooOld) && !s.InUse {
			out = append(out, s.Name)
		}
	}
	for i, s := range failed {
		if i >= p.KeepFailed && !s.InUse {
			out = append(out, s.Name)
		}
	}
	return out
}
