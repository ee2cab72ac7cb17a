// Package backup holds the pure decisions of scheduled backups: when a run is due (cron
// arithmetic in a time zone, missed runs, the starting deadline) and which snapshots retention
// deletes. The EtcdBackupSchedule controller acts on them.
package backup

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed cron schedule in its time zone.
type Schedule struct{ cron.Schedule }

// Parse reads a standard cron expression (five fields, or a descriptor such as @hourly or
// @every 30m) in the IANA time zone tz (UTC when empty). The zone belongs in tz: an
// expression that carries its own CRON_TZ= or TZ= is refused, so one field says it.
func Parse(expr, tz string) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return Schedule{}, fmt.Errorf("schedule %q: set the time zone in spec.timeZone, not in the schedule", expr)
	}
	if tz == "" {
		tz = "UTC"
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return Schedule{}, fmt.Errorf("time zone %q: %w", tz, err)
	}
	s, err := cron.ParseStandard("CRON_TZ=" + tz + " " + expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}
	// Runs are named by their minute: two in one minute would be one snapshot.
	if every, ok := s.(cron.ConstantDelaySchedule); ok && every.Delay < time.Minute {
		return Schedule{}, fmt.Errorf("schedule %q: runs at most once a minute; use @every 1m or more", expr)
	}
	return Schedule{s}, nil
}

// maxMissed bounds the walk over missed runs (a schedule every minute, an operator down for
// weeks): past it the count is reported as at least this many.
const maxMissed = 1000

// Run is what is due at now.
type Run struct {
	// Due is the scheduled time of the run to start now; zero when none is due.
	Due time.Time
	// Latest is the latest scheduled time not after now that was not handled yet, started or
	// not (zero when there is none): the next pass counts from it.
	Latest time.Time
	// Missed counts the scheduled times since the last run that are not started: all but the
	// latest, and the latest too when it is past the starting deadline.
	Missed int64
	// Next is the first scheduled time after now.
	Next time.Time
}

// Next says which run is due at now, given the scheduled time of the last run started (zero:
// none yet, counting from created). Only the latest missed time is ever started, and only
// within deadline of it when deadline > 0.
func (s Schedule) Next(last, created, now time.Time, deadline time.Duration) Run {
	from := last
	if from.IsZero() {
		from = created
	}
	var latest time.Time
	var count int64
	for t := s.Schedule.Next(from); !t.After(now); t = s.Schedule.Next(t) {
		latest, count = t, count+1
		if count >= maxMissed {
			latest = s.latestBefore(t, now)
			break
		}
	}
	run := Run{Next: s.Schedule.Next(now), Latest: latest}
	switch {
	case count == 0:
	case deadline > 0 && now.Sub(latest) > deadline:
		run.Missed = count
	default:
		run.Due, run.Missed = latest, count-1
	}
	return run
}

// latestBefore is the last scheduled time not after now, walking on from t.
func (s Schedule) latestBefore(t, now time.Time) time.Time {
	for n := s.Schedule.Next(t); !n.After(now); n = s.Schedule.Next(n) {
		t = n
	}
	return t
}
