package backup

import (
	"slices"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr, tz string
		ok       bool
	}{
		{"*/30 * * * *", "", true},
		{"0 3 * * 1-5", "Europe/Berlin", true},
		{"@hourly", "", true},
		{"@every 15m", "", true},
		{"@every 1m", "", true},
		{"@every 10s", "", false},            // runs are named by their minute
		{"* * * *", "", false},               // four fields
		{"61 * * * *", "", false},            // minute out of range
		{"0 3 * * *", "Mars/Olympus", false}, // no such zone
		{"CRON_TZ=UTC 0 3 * * *", "", false}, // the zone belongs in spec.timeZone
		{"0 0 30 2 *", "", true},             // parses; it simply never runs
	} {
		_, err := Parse(tc.expr, tc.tz)
		if (err == nil) != tc.ok {
			t.Errorf("Parse(%q, %q) error = %v, want ok=%v", tc.expr, tc.tz, err, tc.ok)
		}
	}
}

func TestNextRun(t *testing.T) {
	created := at("2026-12-03T10:00:30Z")
	cases := []struct {
		name      string
		expr, tz  string
		last, now string
		deadline  time.Duration
		due       string // "" for none
		missed    int64
		next      string
	}{
		{"first run not yet due", "*/30 * * * *", "", "", "2026-12-03T10:29:59Z", 0, "", 0, "2026-12-03T10:30:00Z"},
		{"first run due", "*/30 * * * *", "", "", "2026-12-03T10:30:05Z", 0, "2026-12-03T10:30:00Z", 0, "2026-12-03T11:00:00Z"},
		{"already ran this slot", "*/30 * * * *", "", "2026-12-03T10:30:00Z", "2026-12-03T10:45:00Z", 0, "", 0, "2026-12-03T11:00:00Z"},
		{"operator down: only the latest missed run", "*/30 * * * *", "", "2026-12-03T10:30:00Z", "2026-12-03T12:10:00Z", 0,
			"2026-12-03T12:00:00Z", 2, "2026-12-03T12:30:00Z"},
		{"latest missed run past the deadline", "*/30 * * * *", "", "2026-12-03T10:30:00Z", "2026-12-03T12:10:00Z", 5 * time.Minute,
			"", 3, "2026-12-03T12:30:00Z"},
		{"within the deadline", "*/30 * * * *", "", "2026-12-03T10:30:00Z", "2026-12-03T12:03:00Z", 5 * time.Minute,
			"2026-12-03T12:00:00Z", 2, "2026-12-03T12:30:00Z"},
		// 03:00 in Berlin is 02:00 UTC in winter.
		{"time zone", "0 3 * * *", "Europe/Berlin", "", "2026-12-04T02:00:01Z", 0, "2026-12-04T02:00:00Z", 0, "2026-12-05T02:00:00Z"},
		{"every minute, many missed", "* * * * *", "", "2026-12-03T10:01:00Z", "2026-12-04T10:01:30Z", 0,
			"2026-12-04T10:01:00Z", maxMissed - 1, "2026-12-04T10:02:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.expr, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			var last time.Time
			if tc.last != "" {
				last = at(tc.last)
			}
			run := s.Next(last, created, at(tc.now), tc.deadline)
			var wantDue time.Time
			if tc.due != "" {
				wantDue = at(tc.due)
			}
			if !run.Due.Equal(wantDue) || run.Missed != tc.missed || !run.Next.Equal(at(tc.next)) {
				t.Errorf("got due %v missed %d next %v; want due %v missed %d next %v",
					run.Due, run.Missed, run.Next, wantDue, tc.missed, tc.next)
			}
		})
	}
}

func TestExpired(t *testing.T) {
	now := at("2026-12-10T00:00:00Z")
	day := func(d int) time.Time { return now.Add(-time.Duration(d) * 24 * time.Hour) }
	c := func(name string, d int) Snapshot { return Snapshot{Name: name, Complete: true, At: day(d)} }
	f := func(name string, d int) Snapshot { return Snapshot{Name: name, Failed: true, At: day(d)} }
	inFlight := Snapshot{Name: "running", At: day(30)}
	cases := []struct {
		name  string
		snaps []Snapshot
		p     Policy
		want  []string
	}{
		{"keep the last three", []Snapshot{c("a", 5), c("b", 4), c("c", 3), c("d", 2), c("e", 1)}, Policy{KeepLast: 3},
			[]string{"b", "a"}},
		{"order does not matter", []Snapshot{c("e", 1), c("a", 5), c("c", 3), c("d", 2), c("b", 4)}, Policy{KeepLast: 3},
			[]string{"b", "a"}},
		{"max age, the newest kept whatever its age", []Snapshot{c("old", 20), c("older", 30)}, Policy{KeepLast: 5, MaxAge: 7 * 24 * time.Hour},
			[]string{"older"}},
		{"age and count together", []Snapshot{c("a", 1), c("b", 2), c("c", 10)}, Policy{KeepLast: 3, MaxAge: 7 * 24 * time.Hour},
			[]string{"c"}},
		{"in use by a restore", []Snapshot{c("a", 1), c("b", 2), {Name: "c", Complete: true, At: day(3), InUse: true}}, Policy{KeepLast: 1},
			[]string{"b"}},
		{"failed ones beyond keepFailed", []Snapshot{c("a", 1), f("x", 1), f("y", 2), f("z", 3)}, Policy{KeepLast: 3, KeepFailed: 1},
			[]string{"y", "z"}},
		{"in flight never", []Snapshot{inFlight, c("a", 1)}, Policy{KeepLast: 1, MaxAge: time.Hour}, nil},
		{"keepLast 0 still keeps the newest", []Snapshot{c("a", 1), c("b", 2)}, Policy{}, []string{"b"}},
	}
	for _, tc := range cases {
		if got := Expired(tc.snaps, tc.p, now); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Expired = %v, want %v", tc.name, got, tc.want)
		}
	}
}
