package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// The ledger is what the scheduler remembers across restarts, one small
// JSON file rewritten atomically (temp, fsync, rename; 0600 in 0700) on
// every change. Per schedule it holds:
//
//   - last: the latest scheduled instant that is settled: submitted to the
//     engine (journaled), or skipped and logged. Only instants after it are
//     ever due, so a settled run is never due again.
//   - cron: the expression and zone last was computed with. A changed
//     expression starts afresh from the moment of the change, so that an
//     edit does not look like a missed run.
//   - last_run: the id of the last run journaled, to ask the engine
//     whether it still works (overlap).
//   - pending: a due run not journaled yet: held back because the previous
//     one still works (overlap = "wait"), or its submission failed and is
//     retried. Settled like a run that came due: last covers it.
//   - paused (with who and when): set from chat by an admin.
//
// The exactly-once rule. A run is identified by its schedule's name and
// its scheduled instant (RunID), and that id is the message id the engine
// journals it under. The scheduler submits a run, and once the engine says
// it is journaled it writes last = that instant. A crash between the two
// makes the next start submit the same id again, which the engine refuses
// as a duplicate (its inbox while pending, its seen ids after): the run
// happens once. That holds as long as a resubmission comes within the
// engine's seen window, which the config guarantees by keeping catch_up
// (the oldest run a start-up submits) no longer than state.seen_window.
type Ledger struct {
	path string

	mu   sync.Mutex // guards file; held across the write so that writes land in order
	file ledgerFile
}

type ledgerFile struct {
	Version   int               `json:"version"`
	Schedules map[string]*entry `json:"schedules"`
}

type entry struct {
	Cron     string    `json:"cron"`
	Last     time.Time `json:"last"`
	LastRun  string    `json:"last_run,omitempty"`
	Pending  time.Time `json:"pending,omitzero"`
	Paused   bool      `json:"paused,omitempty"`
	PausedBy string    `json:"paused_by,omitempty"`
	PausedAt time.Time `json:"paused_at,omitzero"`
	// LastError is the last run this host's scheduler did not start as
	// due (refused, skipped, or not submitted), and when.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
}

// failed notes on e why a run did not start as due, at now.
func (e *entry) failed(now time.Time, format string, args ...any) {
	e.LastError, e.LastErrorAt = fmt.Sprintf(format, args...), now
}

const ledgerVersion = 1

// LedgerPath is where a state dir keeps the schedule ledger.
func LedgerPath(stateDir string) string { return filepath.Join(stateDir, "schedules", "ledger.json") }

// ErrCorruptLedger means the ledger file exists but cannot be read. It is
// left as it is; the scheduler does not start until an admin moves it
// aside (then every schedule starts afresh: nothing missed is caught up,
// and pauses are forgotten).
var ErrCorruptLedger = errors.New("schedule ledger is corrupt")

// OpenLedger reads the ledger at path; a missing file is an empty ledger.
func OpenLedger(path string) (*Ledger, error) {
	l := &Ledger{path: path, file: ledgerFile{Version: ledgerVersion, Schedules: map[string]*entry{}}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading schedule ledger: %w", err)
	}
	var f ledgerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptLedger, path, err)
	}
	if f.Version != ledgerVersion {
		return nil, fmt.Errorf("%w: %s: version %d, this cc-connect writes %d", ErrCorruptLedger, path, f.Version, ledgerVersion)
	}
	if f.Schedules == nil {
		f.Schedules = map[string]*entry{}
	}
	for name, e := range f.Schedules {
		if e == nil {
			return nil, fmt.Errorf("%w: %s: schedule %q has no entry", ErrCorruptLedger, path, name)
		}
	}
	l.file = f
	return l, nil
}

// get returns a copy of name's entry and whether it exists.
func (l *Ledger) get(name string) (entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.file.Schedules[name]
	if !ok {
		return entry{}, false
	}
	return *e, true
}

// update changes name's entry (creating it) and writes the file. When the
// write fails, the ledger in memory is left as it was, so that memory never
// claims what the disk does not hold.
func (l *Ledger) update(name string, f func(e *entry)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, had := l.file.Schedules[name]
	e := entry{}
	if had {
		e = *old
	}
	f(&e)
	l.file.Schedules[name] = &e
	if err := l.writeLocked(); err != nil {
		if had {
			l.file.Schedules[name] = old
		} else {
			delete(l.file.Schedules, name)
		}
		return err
	}
	return nil
}

// keep drops the entries of schedules no longer configured, so that the
// file stays as small as the config.
func (l *Ledger) keep(names []string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	before := maps.Clone(l.file.Schedules)
	maps.DeleteFunc(l.file.Schedules, func(name string, _ *entry) bool { return !slices.Contains(names, name) })
	if len(before) == len(l.file.Schedules) {
		return nil
	}
	if err := l.writeLocked(); err != nil {
		l.file.Schedules = before
		return err
	}
	return nil
}

func (l *Ledger) writeLocked() error {
	data, err := json.MarshalIndent(l.file, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding schedule ledger: %w", err)
	}
	if err := workspace.WriteFileAtomic(l.path, append(data, '\n')); err != nil {
		return fmt.Errorf("writing schedule ledger: %w", err)
	}
	return nil
}
