package archive

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// SegmentExt ends every segment's name.
const SegmentExt = ".seg"

// revisionDigits pads revisions so that names sort by first revision: an int64 has at most 19
// decimal digits. timeDigits pads Unix milliseconds likewise (13 digits last until year 2286).
const (
	revisionDigits = 19
	timeDigits     = 13
)

// Ref is what a segment's name says of it: its revision range and the archiver's wall-clock
// times of its first and last revision (zero when unknown). Listing a store is enough to plan a
// restore and retention; the header, read when the segment is applied, is authoritative.
type Ref struct {
	// Name is the object's name relative to the cluster's prefix (no directory).
	Name        string
	First, Last int64
	FirstTime   time.Time
	LastTime    time.Time
}

// SegmentName is <first>-<last>_<first ms>-<last ms>.seg, revisions padded to 19 digits and Unix
// milliseconds to 13, so that names sort by first revision (and, for one first revision, by last).
func SegmentName(first, last int64, firstTime, lastTime time.Time) string {
	return fmt.Sprintf("%0*d-%0*d_%0*d-%0*d%s", revisionDigits, first, revisionDigits, last,
		timeDigits, millis(firstTime), timeDigits, millis(lastTime), SegmentExt)
}

// SegmentKey is name under a cluster's prefix (e.g. "ns/cluster/segments").
func SegmentKey(prefix, name string) string { return path.Join(prefix, name) }

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// ParseSegmentName reads a name SegmentName made (a directory before it is ignored).
func ParseSegmentName(name string) (Ref, error) {
	base := path.Base(name)
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%q is not a segment name (<first>-<last>_<ms>-<ms>%s): %s", name, SegmentExt, why)
	}
	stem, ok := strings.CutSuffix(base, SegmentExt)
	if !ok {
		return bad("no " + SegmentExt + " suffix")
	}
	revs, times, ok := strings.Cut(stem, "_")
	if !ok {
		return bad("no _ between revisions and times")
	}
	first, last, err := pair(revs, revisionDigits)
	if err != nil {
		return bad("revisions: " + err.Error())
	}
	if first < 1 || last < first {
		return bad(fmt.Sprintf("revision range %d-%d is empty or starts below 1", first, last))
	}
	t0, t1, err := pair(times, timeDigits)
	if err != nil {
		return bad("times: " + err.Error())
	}
	return Ref{Name: base, First: first, Last: last, FirstTime: fromMillis(t0), LastTime: fromMillis(t1)}, nil
}

// pair reads "<a>-<b>", each exactly digits decimal digits.
func pair(s string, digits int) (int64, int64, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok || len(a) != digits || len(b) != digits {
		return 0, 0, fmt.Errorf("want two %d-digit numbers joined by -", digits)
	}
	x, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	y, err := strconv.ParseInt(b, 10, 64)
	if err != nil {
		return 0, 0, err
	}
	return x, y, nil
}

// ParseSegmentNames keeps the names that are segments, sorted by first revision; other names
// (a store's sidecars, foreign files) are skipped, as the listing of a shared prefix holds them.
func ParseSegmentNames(names []string) []Ref {
	var out []Ref
	for _, n := range names {
		if r, err := ParseSegmentName(n); err == nil {
			out = append(out, r)
		}
	}
	sortRefs(out)
	return out
}
