package schedule

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Status is what !schedules shows about one schedule.
type Status struct {
	Name     string
	Cron     string // expression and zone
	Platform string
	Channel  string
	Thread   string
	Continue bool
	Overlap  Overlap
	// Next is the next instant it runs at (while paused: would run at).
	Next     time.Time
	Paused   bool
	PausedBy string
	PausedAt time.Time
	// Pending is a due run not journaled yet (waiting for the previous
	// run, or retried); LastRun is the id of the last run journaled.
	Pending time.Time
	LastRun string
	// LastError is why the last run that did not start as due did not
	// (refused, skipped, not submitted) on this host, and when; "" none.
	LastError   string
	LastErrorAt time.Time
}

// List returns every schedule's status, in config order. With a Pauses
// store the pauses are read from it; an error means they could not be.
func (s *Scheduler) List(ctx context.Context) ([]Status, error) {
	now := s.clock.Now()
	out := make([]Status, 0, len(s.scheds))
	for _, sc := range s.scheds {
		e, _ := s.ledger.get(sc.Name)
		st := Status{
			Name: sc.Name, Cron: sc.Cron.String(), Platform: sc.Platform, Channel: sc.Channel, Thread: sc.Thread,
			Continue: sc.Continue, Overlap: sc.Overlap, Next: sc.Cron.Next(maxTime(e.Last, now)),
			Paused: e.Paused, PausedBy: e.PausedBy, PausedAt: e.PausedAt, Pending: inZone(e.Pending, sc.Cron.Location()),
			LastRun: e.LastRun, LastError: e.LastError, LastErrorAt: e.LastErrorAt,
		}
		if s.pauses != nil && !st.Paused {
			p, err := s.sharedPause(ctx, sc.Name)
			if err != nil {
				return nil, fmt.Errorf("listing schedules: %w", err)
			}
			st.Paused, st.PausedBy, st.PausedAt = p.Paused, p.By, p.At
			if !p.Paused && p.Resumed.After(e.Last) {
				st.Next = sc.Cron.Next(maxTime(p.Resumed, now))
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// Pause stops name from running until Resume; by (a user id) is recorded
// with it. It reports whether the schedule was running before. A run
// already submitted is not recalled. With a Pauses store the pause is
// kept there, for every host.
func (s *Scheduler) Pause(ctx context.Context, name, by string) (bool, error) {
	if !s.known(name) {
		return false, fmt.Errorf("pausing %q: %w", name, ErrUnknownSchedule)
	}
	was := false
	var err error
	if s.pauses != nil {
		if e, _ := s.ledger.get(name); !e.Paused {
			ctx, cancel := context.WithTimeout(ctx, pausesWait)
			was, err = s.pauses.Pause(ctx, name, by, s.clock.Now())
			cancel()
		}
	} else {
		err = s.ledger.update(name, func(e *entry) {
			was = !e.Paused
			if was {
				e.Paused, e.PausedBy, e.PausedAt = true, by, s.clock.Now()
			}
		})
	}
	if err != nil {
		return false, fmt.Errorf("pausing %q: %w", name, err)
	}
	if was {
		s.log.Info("Schedule paused", "schedule", name, "user_id", by)
	}
	s.Wake()
	return was, nil
}

// Resume lets a paused schedule run again. The instants that passed while
// it was paused are not caught up: it runs next at its next instant from
// now. It reports whether the schedule was paused before. With a Pauses
// store it lifts the pause there, and one this host's ledger kept from
// before the cluster.
func (s *Scheduler) Resume(ctx context.Context, name, by string) (bool, error) {
	if !s.known(name) {
		return false, fmt.Errorf("resuming %q: %w", name, ErrUnknownSchedule)
	}
	now := s.clock.Now()
	was := false
	if s.pauses != nil {
		ctx, cancel := context.WithTimeout(ctx, pausesWait)
		shared, err := s.pauses.Resume(ctx, name, now)
		cancel()
		if err != nil {
			return false, fmt.Errorf("resuming %q: %w", name, err)
		}
		was = shared
	}
	err := s.ledger.update(name, func(e *entry) {
		if e.Paused || was {
			was = true
			e.Paused, e.PausedBy, e.PausedAt = false, "", time.Time{}
			e.Last, e.Pending = maxTime(e.Last, now), time.Time{}
		}
	})
	if err != nil {
		return false, fmt.Errorf("resuming %q: %w", name, err)
	}
	if was {
		s.log.Info("Schedule resumed", "schedule", name, "user_id", by)
	}
	s.Wake()
	return was, nil
}

func inZone(t time.Time, loc *time.Location) time.Time {
	if t.IsZero() {
		return t
	}
	return t.In(loc)
}

func (s *Scheduler) known(name string) bool {
	for _, sc := range s.scheds {
		if sc.Name == name {
			return true
		}
	}
	return false
}

// ListText is the chat text of !schedules: one line per schedule with its
// next run time in its own zone and how far away it is.
func ListText(list []Status, now time.Time) string {
	if len(list) == 0 {
		return "No schedules are configured here."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Schedules (%d):", len(list))
	for _, st := range list {
		where := st.Platform + "/" + st.Channel
		switch {
		case st.Thread != "":
			where += ", in thread " + st.Thread
		case st.Continue:
			where += ", one conversation"
		default:
			where += ", a new thread each run"
		}
		fmt.Fprintf(&b, "\n• %s: %s → %s", st.Name, st.Cron, where)
		switch {
		case st.Paused:
			fmt.Fprintf(&b, "; paused by %s since %s", orDash(st.PausedBy), st.PausedAt.UTC().Format("2006-01-02 15:04 UTC"))
		case st.Next.IsZero():
			b.WriteString("; no further run")
		default:
			fmt.Fprintf(&b, "; next run %s (%s)", st.Next.Format("2006-01-02 15:04 MST"), until(st.Next, now))
		}
		if !st.Pending.IsZero() && !st.Paused {
			fmt.Fprintf(&b, "; the run of %s waits for the previous one", st.Pending.Format("2006-01-02 15:04 MST"))
		}
		if st.LastError != "" {
			fmt.Fprintf(&b, "; last error %s: %s", st.LastErrorAt.UTC().Format("2006-01-02 15:04 UTC"), st.LastError)
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// until says how far t is from now, to the minute.
func until(t, now time.Time) string {
	d := t.Sub(now).Round(time.Minute)
	switch {
	case d < time.Minute:
		return "in less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("in %dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("in %dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("in %dd", int(d/(24*time.Hour)))
}
