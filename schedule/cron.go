package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads standard five-field cron expressions (minute hour
// day-of-month month day-of-week) and the @hourly/@daily/@weekly/@monthly/
// @yearly descriptors. Seconds are not offered: a run is identified by its
// minute, and nothing unattended needs finer.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's mark of a field written "*" (spec.go): an hour
// field with it set means "every hour".
const starBit = 1 << 63

// Cron is a parsed cron expression in a time zone.
//
// Daylight saving time follows the rule of Vixie cron, which cron users
// know. Fields are matched against the wall clock of the zone, so a daily
// 02:30 run stays at 02:30 in winter and in summer, and:
//   - a wall time that a spring-forward skips (02:30 on the night clocks go
//     from 02:00 to 03:00) runs once, at the first instant after the gap
//     (03:00);
//   - a wall time that a fall-back repeats (01:30 happens twice) runs once,
//     at its first occurrence.
//
// An expression whose hour field is "*" (every hour, every 15 minutes)
// follows elapsed time instead, as in Vixie cron: it runs at each of the
// repeated hour's instants and simply has no runs inside a skipped hour.
type Cron struct {
	expr   string // as written, without a CRON_TZ= prefix
	loc    *time.Location
	wall   *cron.SpecSchedule // matched in UTC on wall-clock times
	actual *cron.SpecSchedule // matched in loc on real instants; nil unless hour is "*"
}

// ErrCron wraps every parse error, for callers that branch.
var ErrCron = errors.New("invalid cron expression")

// ParseCron parses expr in the zone named zone ("" or "Local" for the
// host's zone, "UTC", or an IANA name such as "Europe/Paris"). The
// expression may instead start with CRON_TZ=<zone> (or TZ=<zone>), as
// robfig/cron and many crontabs accept; naming a zone both ways is refused,
// so that there is one answer to "which zone is this". @every is refused:
// a run's identity is its instant on the calendar, which an interval
// counted from whenever cc-connect started does not have.
func ParseCron(expr, zone string) (*Cron, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, fmt.Errorf("%w: empty", ErrCron)
	}
	body := expr
	if strings.HasPrefix(body, "CRON_TZ=") || strings.HasPrefix(body, "TZ=") {
		prefix, rest, ok := strings.Cut(body, " ")
		if !ok {
			return nil, fmt.Errorf("%w: %q has a time zone but no schedule", ErrCron, expr)
		}
		inline := prefix[strings.IndexByte(prefix, '=')+1:]
		if zone != "" {
			return nil, fmt.Errorf("%w: %q names its zone (%s) and a zone is also given (%s): keep one", ErrCron, expr, inline, zone)
		}
		zone, body = inline, strings.TrimSpace(rest)
	}
	if strings.HasPrefix(body, "@every") {
		return nil, fmt.Errorf("%w: %q: @every is not supported (write the times, e.g. \"*/30 * * * *\")", ErrCron, expr)
	}
	loc, err := LoadZone(zone)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCron, err)
	}
	parsed, err := parser.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrCron, body, err)
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a calendar schedule", ErrCron, body)
	}
	wall := *spec
	wall.Location = time.UTC
	c := &Cron{expr: body, loc: loc, wall: &wall}
	if spec.Hour&starBit != 0 {
		actual := *spec
		actual.Location = loc
		c.actual = &actual
	}
	if c.Next(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).IsZero() {
		return nil, fmt.Errorf("%w: %q never runs (no such date)", ErrCron, body)
	}
	return c, nil
}

// LoadZone loads a time zone by name; "" and "Local" are the host's zone.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (use an IANA name such as \"Europe/Paris\", or \"UTC\")", name)
	}
	return loc, nil
}

// String is the expression and its zone, as !schedules shows them.
func (c *Cron) String() string { return c.expr + " (" + c.loc.String() + ")" }

// Location is the zone the expression is read in.
func (c *Cron) Location() *time.Location { return c.loc }

// Next returns the first run instant strictly after t, in the schedule's
// zone, or the zero time when there is none within five years.
func (c *Cron) Next(t time.Time) time.Time {
	if c.actual != nil {
		return c.actual.Next(t).In(c.loc)
	}
	w := naive(t.In(c.loc))
	for range 64 { // each turn passes one candidate; see the end of the loop
		w = c.wall.Next(w)
		if w.IsZero() {
			return time.Time{}
		}
		if at := resolve(w, c.loc); at.After(t) {
			return at.In(c.loc)
		}
		// The candidate maps to t or earlier: the first occurrence of a
		// repeated wall time that already passed, or a time in a gap
		// that collapsed onto the run just made. Try the next one.
	}
	return time.Time{}
}

// naive is t's wall clock read as if it were UTC.
func naive(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// resolve turns a wall-clock time (naive, in UTC) into the real instant it
// names in loc: the first one when the wall time happens twice, the end of
// the gap when it does not happen at all.
func resolve(w time.Time, loc *time.Location) time.Time {
	// Offsets a day either side are those before and after any change
	// near w (real zones never change twice within two days).
	_, before := w.Add(-24 * time.Hour).In(loc).Zone()
	_, after := w.Add(24 * time.Hour).In(loc).Zone()
	valid := func(off int) (time.Time, bool) {
		at := w.Add(-time.Duration(off) * time.Second)
		_, got := at.In(loc).Zone()
		return at, got == off
	}
	first, okBefore := valid(before)
	second, okAfter := valid(after)
	switch {
	case okBefore && okAfter:
		if second.Before(first) {
			return second
		}
		return first
	case okBefore:
		return first
	case okAfter:
		return second
	}
	// In a gap: the clock jumped over w. The change happened between the
	// two candidates; find its instant (to the second).
	lo, hi := second, first // lo reads the old offset, hi the new one
	if hi.Before(lo) {
		lo, hi = hi, lo
	}
	_, old := lo.In(loc).Zone()
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if _, off := mid.In(loc).Zone(); off == old {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
