package archive

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSegmentNameRoundTrip(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 19, 0, 0, 123e6, time.UTC)
	for _, tc := range []struct {
		first, last int64
		t0, t1      time.Time
	}{
		{1, 1, time.Time{}, time.Time{}},
		{101, 250, t0, t0.Add(9 * time.Second)},
		{1<<63 - 2, 1<<63 - 1, t0, t0},
	} {
		name := SegmentName(tc.first, tc.last, tc.t0, tc.t1)
		r, err := ParseSegmentName("ns/cluster/segments/" + name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if r.Name != name || r.First != tc.first || r.Last != tc.last || !r.FirstTime.Equal(tc.t0) || !r.LastTime.Equal(tc.t1) {
			t.Errorf("%s parsed as %+v", name, r)
		}
	}
}

func TestSegmentNamesSortByFirstRevision(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	names := []string{
		SegmentName(1000, 1200, t0, t0), SegmentName(9, 99, t0, t0), SegmentName(100, 999, t0, t0), SegmentName(9, 12, t0, t0),
	}
	slices.Sort(names)
	var firsts []int64
	for _, r := range ParseSegmentNames(names) {
		firsts = append(firsts, r.First)
	}
	for i, n := range names {
		r, _ := ParseSegmentName(n)
		if r.First != firsts[i] {
			t.Fatalf("lexical order %v differs from revision order %v", names, firsts)
		}
	}
}

func TestParseSegmentNameRefuses(t *testing.T) {
	good := SegmentName(5, 9, time.Time{}, time.Time{})
	for name, want := range map[string]string{
		"snap.db":                                   "suffix",
		strings.Replace(good, "_", "+", 1):          "no _",
		strings.Replace(good, "-", "", 1):           "revisions",
		SegmentName(9, 5, time.Time{}, time.Time{}): "empty",
		SegmentName(0, 5, time.Time{}, time.Time{}): "below 1",
		good[:len(good)-6] + "x-0.seg":              "times",
		good + ".part":                              "suffix",
	} {
		if _, err := ParseSegmentName(name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", name, err, want)
		}
	}
	if refs := ParseSegmentNames([]string{good + ".owner", "x", good}); len(refs) != 1 || refs[0].Name != good {
		t.Errorf("ParseSegmentNames kept %+v", refs)
	}
}
