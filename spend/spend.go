// Package spend keeps what Claude Code's turns cost, per binding and per
// user of a binding, in daily and monthly windows of a configured time
// zone, and says when a cap is reached. The totals live in one small JSON
// file, rewritten atomically (0600 in 0700) after every turn, so that a
// restart does not reset a cap. Only the current month and the last
// KeepDays days are kept: the file is as large as the number of bindings
// and users (times KeepDays), not of turns.
//
// It turns Claude Code's figures into per-turn costs itself: a result's
// total_cost_usd is cumulative for its session (carried over by --resume
// and forks), so the ledger remembers the last total of each session and
// charges the difference. Keeping that memory in the same file as the
// totals makes a turn count once even across a crash. It decides nothing
// about who is exempt; the engine does.
//
// Caps hold under concurrency by reserving before and settling after
// (reserve.go): a turn holds an estimate of its cost against the caps
// before it starts, and its real cost replaces the estimate when it ends.
package spend

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// sessionMemory is how long the last total of a session is kept after its
// last turn. A session resumed later than this is charged its whole
// total once more; two months covers any monthly window.
const sessionMemory = 62 * 24 * time.Hour

const fileVersion = 1

// Path is where a state dir keeps the spending ledger.
func Path(stateDir string) string { return filepath.Join(stateDir, "spend.json") }

// micro is one millionth of a dollar: amounts are summed as integers so
// that a month of small turns adds up exactly.
type micro int64

func toMicro(usd float64) micro { return micro(math.Round(usd * 1e6)) }
func (m micro) usd() float64    { return float64(m) / 1e6 }

// Errors callers branch on.
var (
	// ErrCorrupt: the file exists but cannot be read. It is left as it
	// is; without it the totals would restart at zero, which a cap must
	// not do silently.
	ErrCorrupt = errors.New("spending ledger is corrupt")
	// ErrBadCost: a figure that is not a cost (negative, NaN, infinite).
	ErrBadCost = errors.New("not a cost")
)

// Ledger is the spending ledger. Its methods are safe for concurrent use.
type Ledger struct {
	path string
	loc  *time.Location
	now  func() time.Time

	mu    sync.Mutex // guards everything below; held across the write so that writes land in order
	f     file
	dirty bool // f holds charges not written yet
	// reserve is the least a turn holds (SetReserve).
	reserve micro
}

type file struct {
	Version  int                      `json:"version"`
	Bindings map[string]*scope        `json:"bindings"`
	Sessions map[string]*sessionTotal `json:"sessions"`
	// Holds are the reservations of turns running now (reserve.go), by
	// the key of each; Recent the last turns' costs of each binding, which
	// a reservation is reckoned from. Both came after version 1's first
	// files, which read as empty ones.
	Holds  map[string]*hold   `json:"holds,omitempty"`
	Recent map[string][]micro `json:"recent_micro_usd,omitempty"`
}

// scope is the totals of a binding, or of one user within it.
type scope struct {
	window
	Users map[string]*window `json:"users,omitempty"`
}

// window is the spend of the current day and month; a label that is not
// today's (this month's) means nothing was spent in it yet. Days is the
// spend of each of the last KeepDays days (the console's spend by day),
// by day label; a day without spend has no entry.
type window struct {
	Day      string           `json:"day,omitempty"` // 2006-01-02 in the ledger's zone
	DayUSD   micro            `json:"day_micro_usd,omitempty"`
	Month    string           `json:"month,omitempty"` // 2006-01
	MonthUSD micro            `json:"month_micro_usd,omitempty"`
	Days     map[string]micro `json:"days_micro_usd,omitempty"`
}

// KeepDays is how many days, today included, the spend of each day is
// kept for.
const KeepDays = 31

type sessionTotal struct {
	Total micro     `json:"total_micro_usd"`
	Seen  time.Time `json:"seen"`
}

// Open reads the ledger at path (a missing file is an empty ledger). Days
// and months are those of loc; now may be nil.
func Open(path string, loc *time.Location, now func() time.Time) (*Ledger, error) {
	if loc == nil {
		loc = time.Local
	}
	if now == nil {
		now = time.Now
	}
	l := &Ledger{path: path, loc: loc, now: now, reserve: toMicro(DefaultReserve),
		f: file{Version: fileVersion, Bindings: map[string]*scope{}, Sessions: map[string]*sessionTotal{},
			Holds: map[string]*hold{}, Recent: map[string][]micro{}}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading spending ledger: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if f.Version != fileVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this cc-connect writes %d", ErrCorrupt, path, f.Version, fileVersion)
	}
	if f.Bindings == nil {
		f.Bindings = map[string]*scope{}
	}
	if f.Sessions == nil {
		f.Sessions = map[string]*sessionTotal{}
	}
	for k, s := range f.Bindings {
		if s == nil || slices.Contains(slices.Collect(maps.Values(s.Users)), nil) {
			return nil, fmt.Errorf("%w: %s: binding %q has an empty entry", ErrCorrupt, path, k)
		}
	}
	for k, s := range f.Sessions {
		if s == nil {
			return nil, fmt.Errorf("%w: %s: session %q has an empty entry", ErrCorrupt, path, k)
		}
	}
	if f.Holds == nil {
		f.Holds = map[string]*hold{}
	}
	if f.Recent == nil {
		f.Recent = map[string][]micro{}
	}
	// The holds in the file are of turns an earlier process ran: a crash
	// cut them, or the ledger was written before their settle was. They
	// keep counting for a while, so that a restart does not lift a cap
	// that turns still running before it filled.
	until := now().Add(orphanGrace)
	for k, h := range f.Holds {
		if h == nil {
			return nil, fmt.Errorf("%w: %s: reservation %q has an empty entry", ErrCorrupt, path, k)
		}
		h.until = until
	}
	l.f = f
	return l, nil
}

// Turn is what one finished turn reports.
type Turn struct {
	// Binding names the binding the conversation belongs to (the engine's
	// "platform/channel" of the [[bindings]] entry); User is the user id
	// whose message started the turn.
	Binding string
	User    string
	// SessionID is the Claude session the result came from, and TotalUSD
	// its total_cost_usd: cumulative for that session. Without a
	// SessionID, TotalUSD is taken as the turn's own cost.
	SessionID string
	TotalUSD  float64
	// ForkedFrom is, for a fork (a side question), the session it was
	// forked from: the fork's total starts from that session's.
	ForkedFrom string
}

// Record charges a turn and writes the ledger. It returns what the turn
// cost. When the write fails, the charge still counts in memory (a cap
// must not be lifted by a full disk) and the error is returned; the next
// successful write keeps it.
func (l *Ledger) Record(t Turn) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cost, err := l.chargeLocked(t)
	if err != nil {
		return 0, err
	}
	return cost.usd(), l.flushLocked()
}

// Charge is Record without the write: the charge counts at once (Check
// sees it), and the next Flush or Record writes it. It lets a caller keep
// the write, an fsync or two, off a path that waits for it.
func (l *Ledger) Charge(t Turn) (float64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cost, err := l.chargeLocked(t)
	return cost.usd(), err
}

// Flush writes the ledger when it holds charges not written yet.
func (l *Ledger) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.flushLocked()
}

func (l *Ledger) flushLocked() error {
	if !l.dirty {
		return nil
	}
	if err := l.writeLocked(); err != nil {
		return err
	}
	l.dirty = false
	return nil
}

func (l *Ledger) chargeLocked(t Turn) (micro, error) {
	if math.IsNaN(t.TotalUSD) || math.IsInf(t.TotalUSD, 0) || t.TotalUSD < 0 {
		return 0, fmt.Errorf("recording a turn: %w: %v", ErrBadCost, t.TotalUSD)
	}
	now := l.now()
	total := toMicro(t.TotalUSD)
	var base micro
	switch prev, ok := l.f.Sessions[t.SessionID]; {
	case ok:
		base = prev.Total
	case t.ForkedFrom != "":
		if parent, ok := l.f.Sessions[t.ForkedFrom]; ok {
			base = parent.Total
		}
	}
	cost := total - base
	if cost < 0 {
		// The session's total went down: Claude Code lost its cost
		// state and counts from zero again.
		cost = total
	}
	if t.SessionID != "" {
		l.f.Sessions[t.SessionID] = &sessionTotal{Total: total, Seen: now}
	}
	day, month := l.labels(now)
	sc := l.f.Bindings[t.Binding]
	if sc == nil {
		sc = &scope{Users: map[string]*window{}}
		l.f.Bindings[t.Binding] = sc
	}
	sc.add(day, month, cost)
	if sc.Users == nil {
		sc.Users = map[string]*window{}
	}
	u := sc.Users[t.User]
	if u == nil {
		u = &window{}
		sc.Users[t.User] = u
	}
	u.add(day, month, cost)
	l.pruneLocked(now, month)
	l.dirty = true
	return cost, nil
}

func (w *window) add(day, month string, cost micro) {
	if w.Days == nil {
		// A ledger written before days were kept knows today's spend.
		w.Days = map[string]micro{}
		if w.Day == day && w.DayUSD > 0 {
			w.Days[day] = w.DayUSD
		}
	}
	w.Days[day] += cost
	if w.Day != day {
		w.Day, w.DayUSD = day, 0
	}
	if w.Month != month {
		w.Month, w.MonthUSD = month, 0
	}
	w.DayUSD += cost
	w.MonthUSD += cost
}

// spent is w's spend in the windows that contain now.
func (w *window) spent(day, month string) (d, m micro) {
	if w == nil {
		return 0, 0
	}
	if w.Day == day {
		d = w.DayUSD
	}
	if w.Month == month {
		m = w.MonthUSD
	}
	return d, m
}

// pruneLocked drops what no longer counts: days older than KeepDays,
// windows of past months without such days, and sessions not seen for
// sessionMemory.
func (l *Ledger) pruneLocked(now time.Time, month string) {
	oldest := l.oldestDay(now)
	for k, sc := range l.f.Bindings {
		sc.pruneDays(oldest)
		for _, w := range sc.Users {
			w.pruneDays(oldest)
		}
		maps.DeleteFunc(sc.Users, func(_ string, w *window) bool { return w.Month != month && len(w.Days) == 0 })
		if sc.Month != month && len(sc.Users) == 0 && len(sc.Days) == 0 {
			delete(l.f.Bindings, k)
		}
	}
	maps.DeleteFunc(l.f.Sessions, func(_ string, s *sessionTotal) bool { return now.Sub(s.Seen) > sessionMemory })
	maps.DeleteFunc(l.f.Recent, func(b string, _ []micro) bool { return l.f.Bindings[b] == nil })
}

func (l *Ledger) writeLocked() error {
	data, err := json.MarshalIndent(l.f, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding spending ledger: %w", err)
	}
	if err := workspace.WriteFileAtomic(l.path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing spending ledger: %w", err)
	}
	return nil
}

// oldestDay is the label of the oldest of the KeepDays days kept at now.
func (l *Ledger) oldestDay(now time.Time) string {
	day, _ := l.labels(now.In(l.loc).AddDate(0, 0, -(KeepDays - 1)))
	return day
}

// pruneDays drops the days before oldest (labels sort as dates).
func (w *window) pruneDays(oldest string) {
	maps.DeleteFunc(w.Days, func(d string, _ micro) bool { return d < oldest })
}

// labels are the day and month of t in the ledger's zone.
func (l *Ledger) labels(t time.Time) (day, month string) {
	t = t.In(l.loc)
	return t.Format("2006-01-02"), t.Format("2006-01")
}

// resets returns when the day and the month that contain t end.
func (l *Ledger) resets(t time.Time) (day, month time.Time) {
	t = t.In(l.loc)
	y, m, d := t.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, l.loc), time.Date(y, m+1, 1, 0, 0, 0, 0, l.loc)
}
