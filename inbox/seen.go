package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/workspace"
)

// DefaultSeenWindow is how long a message id is remembered. Platforms
// redeliver within minutes (Slack retries for about an hour at most), so a
// day is ample and keeps the file small.
const DefaultSeenWindow = 24 * time.Hour

// Seen is a persisted set of platform message ids, remembered for a bounded
// window, so that a message delivered again (a platform retry, or a
// redelivery after a restart) is accepted once.
//
// Unlike a journal, the set is repaired when part of it cannot be read:
// the lines that do not parse are dropped (Repairs says how many) and the
// rest is kept. Refusing the whole file would forget every id instead of
// those few, and a forgotten id can only let one redelivery through.
type Seen struct {
	path   string
	window time.Duration
	now    func() time.Time
	wrap   func(*os.File) file // tests: fail writes as a full disk does

	mu      sync.Mutex // guards everything below
	f       file
	size    int64 // bytes of the file known to hold whole records
	ids     map[string]time.Time
	lines   int // records in the file, live or expired
	base    int // live records after the last rewrite
	repairs []string
}

type seenRecord struct {
	ID string `json:"id"`
	At int64  `json:"at"` // unix seconds
}

// OpenSeen reads (or creates) the set at path, forgetting ids older than
// window. now may be nil.
func OpenSeen(path string, window time.Duration, now func() time.Time) (*Seen, error) {
	return openSeen(path, window, now, nil)
}

func openSeen(path string, window time.Duration, now func() time.Time, wrap func(*os.File) file) (*Seen, error) {
	if window <= 0 {
		window = DefaultSeenWindow
	}
	if now == nil {
		now = time.Now
	}
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("opening seen ids: %w", err)
	}
	data, err := workspace.ReadFileNoFollow(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("opening seen ids: %w", err)
	}
	s := &Seen{path: path, window: window, now: now, wrap: wrap, ids: map[string]time.Time{}}
	whole := data
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		whole = data[:i+1] // torn tail from a crash mid-append
		s.repairs = append(s.repairs, "dropped a last line cut short by a crash")
	}
	cutoff := now().Add(-window)
	bad := 0
	for _, l := range bytes.Split(bytes.TrimSuffix(whole, []byte("\n")), []byte("\n")) {
		if len(l) == 0 && len(whole) == 0 {
			break
		}
		var r seenRecord
		if err := json.Unmarshal(l, &r); err != nil || r.ID == "" {
			bad++
			continue
		}
		if at := time.Unix(r.At, 0); at.After(cutoff) {
			s.ids[r.ID] = at
		}
	}
	if bad > 0 {
		s.repairs = append(s.repairs, fmt.Sprintf("dropped %d lines that do not parse; a redelivery of those messages may be answered again", bad))
	}
	if err := s.rewriteLocked(); err != nil {
		// No room for the compacted copy (a full disk): go on with the
		// file as it is, past its last whole line.
		if ferr := s.reopenLocked(int64(len(whole))); ferr != nil {
			return nil, fmt.Errorf("%w; and reopening it: %v", err, ferr)
		}
		s.repairs = append(s.repairs, fmt.Sprintf("kept the file uncompacted: %v", err))
	}
	return s, nil
}

// Repairs lists what OpenSeen had to drop or could not do, for the
// caller's log; nil when the file was whole.
func (s *Seen) Repairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.repairs...)
}

// Has reports whether id was seen within the window.
func (s *Seen) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.ids[id]
	return ok && at.After(s.now().Add(-s.window))
}

// Add remembers id; when it returns nil the id is on disk. A write that
// fails is cut off again, so the file never holds a torn line before the
// next one.
func (s *Seen) Add(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("remembering message id: %w", os.ErrClosed)
	}
	now := s.now()
	b, err := json.Marshal(seenRecord{ID: id, At: now.Unix()})
	if err != nil {
		return fmt.Errorf("remembering message id: %w", err)
	}
	b = append(b, '\n')
	_, err = s.f.WriteAt(b, s.size)
	if err == nil {
		err = s.f.Sync()
	}
	if err != nil {
		// Best effort: when even the cut fails, the next Add writes over
		// the torn bytes at the same offset, and a reopen drops them.
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("remembering message id in %s: %w", s.path, err)
	}
	s.size += int64(len(b))
	s.ids[id] = now
	s.lines++
	if s.lines > 2*s.base+1024 {
		if err := s.rewriteLocked(); err != nil {
			// The id is on disk; the file stays uncompacted for now.
			return nil
		}
	}
	return nil
}

// rewriteLocked drops expired ids and rewrites the file atomically. On
// failure the file and s are left as they were.
func (s *Seen) rewriteLocked() error {
	cutoff := s.now().Add(-s.window)
	var buf bytes.Buffer
	live := 0
	for id, at := range s.ids {
		if !at.After(cutoff) {
			continue
		}
		b, _ := json.Marshal(seenRecord{ID: id, At: at.Unix()})
		buf.Write(b)
		buf.WriteByte('\n')
		live++
	}
	if err := workspace.WriteFileAtomic(s.path, buf.Bytes()); err != nil {
		return fmt.Errorf("compacting seen ids: %w", err)
	}
	for id, at := range s.ids {
		if !at.After(cutoff) {
			delete(s.ids, id)
		}
	}
	if err := s.reopenLocked(int64(buf.Len())); err != nil {
		return err
	}
	s.lines = live
	s.base = live
	return nil
}

// reopenLocked (re)opens the file for appending after its first size
// bytes, cutting off what follows them (a torn last line).
func (s *Seen) reopenLocked(size int64) error {
	f, err := workspace.OpenFileNoFollow(s.path, os.O_RDWR|os.O_CREATE, workspace.FilePerm)
	if err != nil {
		return fmt.Errorf("opening seen ids: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return fmt.Errorf("opening seen ids: %w", err)
		}
	}
	if s.f != nil {
		s.f.Close()
	}
	s.f = f
	if s.wrap != nil {
		s.f = s.wrap(f)
	}
	s.size = size
	return nil
}

// Close closes the file.
func (s *Seen) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
