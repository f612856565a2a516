package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
type Seen struct {
	path   string
	window time.Duration
	now    func() time.Time

	mu    sync.Mutex // guards everything below
	f     *os.File
	ids   map[string]time.Time
	lines int // records in the file, live or expired
	base  int // live records after the last rewrite
}

type seenRecord struct {
	ID string `json:"id"`
	At int64  `json:"at"` // unix seconds
}

// OpenSeen reads (or creates) the set at path, forgetting ids older than
// window. now may be nil.
func OpenSeen(path string, window time.Duration, now func() time.Time) (*Seen, error) {
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
	s := &Seen{path: path, window: window, now: now, ids: map[string]time.Time{}}
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		data = data[:i+1] // torn tail from a crash mid-append
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	cutoff := now().Add(-window)
	line := 0
	for sc.Scan() {
		line++
		var r seenRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == "" {
			return nil, fmt.Errorf("seen ids %s line %d: %w", path, line, ErrCorrupt)
		}
		if at := time.Unix(r.At, 0); at.After(cutoff) {
			s.ids[r.ID] = at
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("seen ids %s: %v: %w", path, err, ErrCorrupt)
	}
	if err := s.rewriteLocked(); err != nil {
		return nil, err
	}
	return s, nil
}

// Has reports whether id was seen within the window.
func (s *Seen) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.ids[id]
	return ok && at.After(s.now().Add(-s.window))
}

// Add remembers id; when it returns nil the id is on disk.
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
	if _, err := s.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("remembering message id in %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", s.path, err)
	}
	s.ids[id] = now
	s.lines++
	if s.lines > 2*s.base+1024 {
		return s.rewriteLocked()
	}
	return nil
}

// rewriteLocked drops expired ids and rewrites the file atomically.
func (s *Seen) rewriteLocked() error {
	cutoff := s.now().Add(-s.window)
	var buf bytes.Buffer
	for id, at := range s.ids {
		if !at.After(cutoff) {
			delete(s.ids, id)
			continue
		}
		b, _ := json.Marshal(seenRecord{ID: id, At: at.Unix()})
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if err := workspace.WriteFileAtomic(s.path, buf.Bytes()); err != nil {
		return fmt.Errorf("compacting seen ids: %w", err)
	}
	f, err := workspace.OpenFileNoFollow(s.path, os.O_WRONLY|os.O_APPEND, workspace.FilePerm)
	if err != nil {
		return fmt.Errorf("opening seen ids: %w", err)
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return fmt.Errorf("opening seen ids: %w", err)
	}
	s.f = f
	s.lines = len(s.ids)
	s.base = s.lines
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
