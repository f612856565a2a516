// Package schedule starts runs on a calendar: each configured schedule has
// a cron expression in a time zone, and when an instant comes due the
// scheduler hands a trigger.Run to the engine (trigger.Submitter), which
// journals it like a chat message. A small ledger on disk (ledger.go)
// makes every scheduled instant run once across crashes and restarts; runs
// missed while cc-connect was down are caught up at start-up within a
// bound, several collapsing to one; a run never overlaps its schedule's
// previous run. The package decides when, never what: it does not import
// the engine, post to a chat or run a turn.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/cc-connect/cc-connect/trigger"
)

// Overlap says what a due run does while its schedule's previous run still
// works.
type Overlap string

// The overlap policies.
const (
	// OverlapSkip logs the due run as skipped.
	OverlapSkip Overlap = "skip"
	// OverlapWait holds it until the previous run is done, then runs it;
	// runs that come due meanwhile collapse into the latest.
	OverlapWait Overlap = "wait"
)

// Timing of the scheduler.
const (
	// minGrace: a run is never "missed" in its first minute, so that a
	// timer firing a little late, or a start-up right after the instant,
	// still runs it whatever catch_up says.
	minGrace = time.Minute
	// busyPoll is how often a waiting run asks again whether the previous
	// one is done (Wake makes it sooner).
	busyPoll = 30 * time.Second
	// retryMin and retryMax bound the backoff after a failed submission.
	retryMin = 30 * time.Second
	retryMax = 10 * time.Minute
	// submitTimeout bounds one Submit.
	submitTimeout = time.Minute
	// recentScan is how far back due looks first, so that a minutely
	// schedule after a long outage is not walked minute by minute.
	recentScan = 48 * time.Hour
)

// NamePattern is what a schedule's name may look like: it is typed in chat
// (!schedules pause NAME) and is part of every run's id.
var NamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Schedule is one configured schedule.
type Schedule struct {
	Name string
	Cron *Cron
	// Platform and Channel are where runs are posted (a binding routes
	// them); Thread, when set, is the thread every run continues in.
	Platform string
	Channel  string
	Thread   string
	// Continue makes every run continue one conversation (the thread
	// Thread names, else the one the first run's header started) rather
	// than start a new thread each time.
	Continue bool
	Prompt   string
	// CatchUp is the age up to which a missed run still runs at start-up.
	CatchUp time.Duration
	Overlap Overlap
}

// Options configure a Scheduler.
type Options struct {
	Schedules []Schedule
	Ledger    *Ledger
	Submitter trigger.Submitter
	// Clock is the scheduler's time; nil is the real clock. Tests pass a
	// clockwork.FakeClock and drive it.
	Clock  clockwork.Clock
	Logger *slog.Logger
	// Serves, when set, says whether this host may fire a schedule of
	// platform and channel now: in a cluster, whether it holds the lease
	// of the binding that routes them. While it is false the schedule
	// waits, its ledger untouched, so that the host that holds the lease
	// next fires what is due (call Wake when that changes).
	Serves func(platform, channel string) bool
	// Pauses, when set, keeps the pauses of !schedules pause where every
	// host that may fire a schedule reads them (a cluster's bucket), in
	// place of this host's ledger. Nil: the ledger keeps them.
	Pauses Pauses
}

// Pause is a schedule's pause as a Pauses store keeps it.
type Pause struct {
	Paused bool      `json:"paused"`
	By     string    `json:"by,omitempty"`
	At     time.Time `json:"at,omitzero"`
	// Resumed is when the last pause was lifted: the instants before it
	// passed while the schedule was paused and are not caught up, on any
	// host (each host's ledger has its own last instant settled).
	Resumed time.Time `json:"resumed,omitzero"`
}

// Pauses keeps the pauses of schedules for every host (cluster/pauses).
// Pause and Resume report whether they changed anything; Get's zero Pause
// is a schedule never paused.
type Pauses interface {
	Get(ctx context.Context, name string) (Pause, error)
	Pause(ctx context.Context, name, by string, at time.Time) (bool, error)
	Resume(ctx context.Context, name string, at time.Time) (bool, error)
}

// pausesWait bounds one call to a Pauses store; pausesRetry is when a step
// whose read failed looks again (the schedule does not fire meanwhile: a
// pause it could not read may be there).
const (
	pausesWait  = 5 * time.Second
	pausesRetry = 30 * time.Second
)

// Scheduler runs the schedules. Run is its one goroutine, which makes every
// decision; Pause, Resume and Wake may be called from any goroutine.
type Scheduler struct {
	scheds []Schedule
	ledger *Ledger
	sub    trigger.Submitter
	clock  clockwork.Clock
	log    *slog.Logger
	serves func(platform, channel string) bool // nil: always
	pauses Pauses                              // nil: the ledger keeps pauses
	wake   chan struct{}                       // capacity 1: something changed, look again

	// Owned by Run's goroutine: retry state of failed submissions.
	retryAt map[string]time.Time
	backoff map[string]time.Duration
}

// Errors callers branch on.
var (
	// ErrUnknownSchedule: no schedule has that name. Tell the user which
	// exist (List).
	ErrUnknownSchedule = errors.New("no such schedule")
)

// New checks the options and builds a Scheduler. It starts nothing.
func New(opts Options) (*Scheduler, error) {
	if opts.Ledger == nil || opts.Submitter == nil {
		return nil, errors.New("schedule: a ledger and a submitter are required")
	}
	seen := map[string]bool{}
	for i, sc := range opts.Schedules {
		switch {
		case !NamePattern.MatchString(sc.Name):
			return nil, fmt.Errorf("schedule %d: name %q is not a valid name", i, sc.Name)
		case seen[sc.Name]:
			return nil, fmt.Errorf("schedule %q is defined twice", sc.Name)
		case sc.Cron == nil:
			return nil, fmt.Errorf("schedule %q has no cron expression", sc.Name)
		case sc.Overlap != OverlapSkip && sc.Overlap != OverlapWait:
			return nil, fmt.Errorf("schedule %q: overlap %q is not skip or wait", sc.Name, sc.Overlap)
		}
		seen[sc.Name] = true
	}
	clock := opts.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{
		scheds:  slices.Clone(opts.Schedules),
		ledger:  opts.Ledger,
		sub:     opts.Submitter,
		clock:   clock,
		log:     log,
		serves:  opts.Serves,
		pauses:  opts.Pauses,
		wake:    make(chan struct{}, 1),
		retryAt: map[string]time.Time{},
		backoff: map[string]time.Duration{},
	}, nil
}

// RunID is the identity of the run of schedule name due at instant at: the
// message id the engine journals it under. Minutes are enough (cron has no
// seconds), and UTC makes the two 01:30s of a fall-back night distinct.
func RunID(name string, at time.Time) string {
	return "schedule:" + name + "@" + at.UTC().Format("2006-01-02T15:04Z")
}

// Run runs the schedules until ctx is cancelled. It returns an error only
// when the ledger cannot be written at start (then nothing is scheduled).
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.start(); err != nil {
		return err
	}
	startup := true
	for {
		now := s.clock.Now()
		next := time.Time{}
		for i := range s.scheds {
			if at := s.step(ctx, &s.scheds[i], now, startup); !at.IsZero() && (next.IsZero() || at.Before(next)) {
				next = at
			}
		}
		startup = false
		var timer clockwork.Timer
		var fired <-chan time.Time
		if !next.IsZero() {
			// From the time now, not the pass's start: a slow Submit
			// must not push the next run late.
			timer = s.clock.NewTimer(max(0, next.Sub(s.clock.Now())))
			fired = timer.Chan()
		}
		select {
		case <-ctx.Done():
		case <-fired:
		case <-s.wake:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Wake makes the scheduler look again now; the engine calls it when a run
// ends, so that a waiting run need not wait for the next poll.
func (s *Scheduler) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// start records a baseline for every schedule the ledger does not know, or
// whose expression changed: only instants after it are due. It drops the
// entries of schedules no longer configured.
func (s *Scheduler) start() error {
	now := s.clock.Now()
	names := make([]string, len(s.scheds))
	for i, sc := range s.scheds {
		names[i] = sc.Name
		e, ok := s.ledger.get(sc.Name)
		spec := sc.Cron.String()
		if ok && e.Cron == spec {
			continue
		}
		if err := s.ledger.update(sc.Name, func(e *entry) {
			e.Cron, e.Last, e.Pending = spec, now, time.Time{}
		}); err != nil {
			return err
		}
		what := "Schedule added"
		if ok {
			what = "Schedule changed; runs are counted from now"
		}
		s.log.Info(what, "schedule", sc.Name, "cron", spec, "next_run", sc.Cron.Next(now))
	}
	return s.ledger.keep(names)
}

// step does what is due for one schedule at now and returns when it wants
// to be looked at again (zero: only when woken).
func (s *Scheduler) step(ctx context.Context, sc *Schedule, now time.Time, startup bool) time.Time {
	e, _ := s.ledger.get(sc.Name)
	if e.Paused {
		return s.paused(sc, e, now)
	}
	if s.serves != nil && !s.serves(sc.Platform, sc.Channel) {
		return time.Time{} // another host fires it; Wake when this one may
	}
	if s.pauses != nil {
		p, err := s.sharedPause(ctx, sc.Name)
		switch {
		case err != nil:
			s.log.Warn("Reading the schedule's pause failed; it does not run until it is read", "schedule", sc.Name,
				"retry_in", pausesRetry, "error", err)
			return now.Add(pausesRetry)
		case p.Paused:
			return s.paused(sc, e, now)
		case p.Resumed.After(e.Last):
			// Resumed on another host: what passed while paused is
			// not due here either.
			s.log.Info("Schedule resumed on another host; what passed while it was paused is not caught up",
				"schedule", sc.Name, "resumed_at", p.Resumed)
			if err := s.ledger.update(sc.Name, func(e *entry) { e.Last, e.Pending = maxTime(e.Last, p.Resumed), time.Time{} }); err != nil {
				return s.retryWrite(sc, now, s.log.With("schedule", sc.Name), err)
			}
			e, _ = s.ledger.get(sc.Name)
		}
	}
	if at := s.retryAt[sc.Name]; !at.IsZero() && now.Before(at) {
		return at
	}
	log := s.log.With("schedule", sc.Name, "platform", sc.Platform, "channel", sc.Channel)
	tolerance := max(sc.CatchUp, minGrace)

	cand := e.Pending
	if first, latest := due(sc.Cron, e.Last, now); !latest.IsZero() {
		if !first.Equal(latest) || !e.Pending.IsZero() {
			log.Info("Scheduled runs collapse into the latest one", "first_missed", orZero(e.Pending, first), "latest", latest)
		}
		cand = latest
		if age := now.Sub(latest); age > tolerance {
			log.Warn("Scheduled run skipped: missed by more than catch_up", "scheduled_at", latest,
				"missed_by", age.Round(time.Second), "catch_up", sc.CatchUp)
			return s.settle(sc, now, log, func(e *entry) {
				e.Last, e.Pending = latest, time.Time{}
				e.failed(now, "skipped the run of %s: missed by %s, more than catch_up", latest.Format(time.RFC3339), age.Round(time.Second))
			})
		}
	} else if !cand.IsZero() && startup && now.Sub(cand) > tolerance {
		log.Warn("Waiting scheduled run skipped at start-up: older than catch_up", "scheduled_at", cand,
			"catch_up", sc.CatchUp)
		return s.settle(sc, now, log, func(e *entry) {
			e.Pending = time.Time{}
			e.failed(now, "skipped the run of %s at start-up: older than catch_up", cand.Format(time.RFC3339))
		})
	}
	if cand.IsZero() {
		return sc.Cron.Next(maxTime(e.Last, now))
	}

	if e.LastRun != "" && s.sub.Working(e.LastRun) {
		if sc.Overlap == OverlapSkip {
			log.Warn("Scheduled run skipped: the previous run still works", "scheduled_at", cand, "previous_run", e.LastRun)
			return s.settle(sc, now, log, func(e *entry) {
				e.Last, e.Pending = maxTime(e.Last, cand), time.Time{}
				e.failed(now, "skipped the run of %s: the previous run %s still worked (overlap = \"skip\")", cand.Format(time.RFC3339), e.LastRun)
			})
		}
		if !cand.Equal(e.Pending) {
			log.Info("Scheduled run waits for the previous run", "scheduled_at", cand, "previous_run", e.LastRun)
			// A failed write is made again at the next look: last did
			// not move, so the same run comes due again.
			if err := s.ledger.update(sc.Name, func(e *entry) { e.Last, e.Pending = maxTime(e.Last, cand), cand }); err != nil {
				log.Error("Writing the schedule ledger failed", "error", err)
			}
		}
		return minTime(now.Add(busyPoll), sc.Cron.Next(maxTime(cand, now)))
	}

	run := s.run(sc, cand)
	sctx, cancel := context.WithTimeout(ctx, submitTimeout)
	err := s.sub.Submit(sctx, run)
	cancel()
	switch {
	case err == nil || errors.Is(err, trigger.ErrDuplicate):
		log.Info("Scheduled run submitted", "run_id", run.ID, "scheduled_at", cand, "duplicate", err != nil)
		return s.settle(sc, now, log, func(e *entry) {
			e.Last, e.Pending, e.LastRun = maxTime(e.Last, cand), time.Time{}, run.ID
		})
	case errors.Is(err, trigger.ErrRefused):
		log.Warn("Scheduled run refused by the engine; skipped", "run_id", run.ID, "scheduled_at", cand, "error", err)
		return s.settle(sc, now, log, func(e *entry) {
			e.Last, e.Pending = maxTime(e.Last, cand), time.Time{}
			e.failed(now, "the run of %s was refused: %v", cand.Format(time.RFC3339), err)
		})
	}
	// Not journaled: keep it as pending (a restart retries it within
	// catch_up) and try again after a backoff.
	wait := s.nextBackoff(sc.Name)
	log.Error("Submitting a scheduled run failed; retrying", "run_id", run.ID, "scheduled_at", cand,
		"retry_in", wait, "error", err)
	if uerr := s.ledger.update(sc.Name, func(e *entry) {
		e.Last, e.Pending = maxTime(e.Last, cand), cand
		e.failed(now, "the run of %s could not be submitted (retrying in %s): %v", cand.Format(time.RFC3339), wait, err)
	}); uerr != nil {
		log.Error("Writing the schedule ledger failed", "error", uerr)
	}
	s.retryAt[sc.Name] = now.Add(wait)
	return s.retryAt[sc.Name]
}

// paused is step for a paused schedule: nothing runs, and an instant that
// came due meanwhile is logged, so that "why did it not run" has an answer
// in the log; it looks again at the next instant, to log that one. Not
// even its ledger moves: Resume skips what passed.
func (s *Scheduler) paused(sc *Schedule, e entry, now time.Time) time.Time {
	if _, latest := due(sc.Cron, e.Last, now); !latest.IsZero() {
		s.log.Debug("Not running a paused schedule", "schedule", sc.Name, "scheduled_at", latest)
	}
	return sc.Cron.Next(maxTime(e.Last, now))
}

// sharedPause reads name's pause from the Pauses store, within pausesWait.
func (s *Scheduler) sharedPause(ctx context.Context, name string) (Pause, error) {
	ctx, cancel := context.WithTimeout(ctx, pausesWait)
	defer cancel()
	return s.pauses.Get(ctx, name)
}

// settle writes a decision to the ledger and returns when to look again.
// When the write fails, nothing is settled in memory either: the same
// decision is made again after a backoff (a submitted run is then refused
// by the engine as a duplicate, so it still runs once).
func (s *Scheduler) settle(sc *Schedule, now time.Time, log *slog.Logger, f func(e *entry)) time.Time {
	if err := s.ledger.update(sc.Name, f); err != nil {
		return s.retryWrite(sc, now, log, err)
	}
	delete(s.retryAt, sc.Name)
	delete(s.backoff, sc.Name)
	e, _ := s.ledger.get(sc.Name)
	if !e.Pending.IsZero() {
		return now.Add(busyPoll)
	}
	return sc.Cron.Next(maxTime(e.Last, now))
}

// retryWrite is what a failed ledger write settles: the step is tried
// again after a backoff, and says when.
func (s *Scheduler) retryWrite(sc *Schedule, now time.Time, log *slog.Logger, err error) time.Time {
	wait := s.nextBackoff(sc.Name)
	log.Error("Writing the schedule ledger failed; retrying", "retry_in", wait, "error", err)
	s.retryAt[sc.Name] = now.Add(wait)
	return s.retryAt[sc.Name]
}

func (s *Scheduler) nextBackoff(name string) time.Duration {
	d := s.backoff[name]
	d = min(max(2*d, retryMin), retryMax)
	s.backoff[name] = d
	return d
}

// run builds the trigger.Run of sc due at at.
func (s *Scheduler) run(sc *Schedule, at time.Time) trigger.Run {
	id := RunID(sc.Name, at)
	conv := id
	if sc.Continue {
		conv = "schedule:" + sc.Name
	}
	return trigger.Run{
		ID:           id,
		Kind:         trigger.KindSchedule,
		Name:         sc.Name,
		Platform:     sc.Platform,
		Channel:      sc.Channel,
		Thread:       sc.Thread,
		Conversation: conv,
		Header:       "Scheduled: " + sc.Name,
		Prompt:       sc.Prompt,
		UserID:       trigger.RunUser(trigger.KindSchedule, sc.Name),
		UserName:     "schedule " + sc.Name,
		At:           at,
	}
}

// due returns the first and the latest instants of c in (last, now], or
// zero times when none is due.
func due(c *Cron, last, now time.Time) (first, latest time.Time) {
	first = c.Next(last)
	if first.IsZero() || first.After(now) {
		return time.Time{}, time.Time{}
	}
	latest = first
	if now.Sub(first) > recentScan {
		if recent := c.Next(now.Add(-recentScan)); !recent.IsZero() && !recent.After(now) {
			latest = recent
		}
	}
	// A minutely schedule has at most this many instants in recentScan;
	// a sparser one walked from first has fewer.
	for range int(recentScan/time.Minute) + 1 {
		n := c.Next(latest)
		if n.IsZero() || n.After(now) {
			break
		}
		latest = n
	}
	return first, latest
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if b.IsZero() || (!a.IsZero() && a.Before(b)) {
		return a
	}
	return b
}

func orZero(a, b time.Time) time.Time {
	if !a.IsZero() {
		return a
	}
	return b
}
