package inbox

import (
	"bytes"
	"context"
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

// SeenKey is the identity of a platform's message among all platforms.
func SeenKey(platform, id string) string { return platform + "\x00" + id }

// Seen is the set of message ids accepted within a window, across every
// journal of a state dir, so that a message delivered again (a platform's
// retry, the second copy of a Slack mention, a redelivery after a restart)
// is accepted once.
//
// It holds no write of its own on the accept path: an id is seen from the
// moment the journal record that accepts it is on disk (Inbox.Append,
// Inbox.MarkSeen), which is one fsync. The ids of a journal that is
// compacted move first to Seen's own file, so every id ever journaled stays
// known for the window, in a journal or in that file.
//
// Claim is the one duplicate check: it reports an id already accepted, and
// makes a second copy of a message that is being accepted wait until the
// first is durable (or given up), so that the copy's acknowledgement never
// comes before its sibling's journal write.
//
// Unlike a journal, the file is repaired when part of it cannot be read:
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
	size    int64                    // bytes of the file known to hold whole records
	ids     map[string]time.Time     // key -> accepted at
	claims  map[string]chan struct{} // keys being accepted; closed when given up or accepted
	lines   int                      // records in the file, live or expired
	base    int                      // live records after the last rewrite
	pruneAt time.Time                // when ids was last swept for expired keys
	repairs []string
}

type seenRecord struct {
	ID string `json:"id"`
	At int64  `json:"at"` // unix seconds
}

// OpenSeen reads (or creates) the file of compacted ids at path, forgetting
// ids older than window. now may be nil. The journals' ids join through
// Open.
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
	s := &Seen{path: path, window: window, now: now, wrap: wrap, ids: map[string]time.Time{}, claims: map[string]chan struct{}{}}
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
	// A rewrite cut by a kill leaves its temp file (workspace's atomic
	// write); nobody else writes this file (one cc-connect per state dir).
	if stale, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")); err == nil {
		for _, f := range stale {
			_ = os.Remove(f)
		}
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

// Claim is the right to accept one message id, held from Seen.Claim until
// Release.
type Claim struct {
	s    *Seen
	key  string
	done chan struct{}
	once sync.Once
}

// Claim checks key once: ErrDuplicate when it was accepted within the
// window. When another caller holds the claim on key (the same message
// being accepted on another goroutine), Claim waits for that caller's
// Release and checks again; ctx bounds the wait. The caller journals the
// message (which makes key seen) and then releases the claim, whether it
// accepted the message or not.
func (s *Seen) Claim(ctx context.Context, key string) (*Claim, error) {
	for {
		s.mu.Lock()
		if s.hasLocked(key) {
			s.mu.Unlock()
			return nil, ErrDuplicate
		}
		held, busy := s.claims[key]
		if !busy {
			c := &Claim{s: s, key: key, done: make(chan struct{})}
			s.claims[key] = c.done
			s.mu.Unlock()
			return c, nil
		}
		s.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for another copy of the message to be accepted: %w", ctx.Err())
		}
	}
}

// Release ends the claim; a caller waiting in Claim for the same key then
// finds it seen (the message was journaled) or takes the claim itself.
func (c *Claim) Release() {
	c.once.Do(func() {
		c.s.mu.Lock()
		if c.s.claims[c.key] == c.done {
			delete(c.s.claims, c.key)
		}
		c.s.mu.Unlock()
		close(c.done)
	})
}

// Repairs lists what OpenSeen had to drop or could not do, for the
// caller's log; nil when the file was whole.
func (s *Seen) Repairs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.repairs...)
}

// Has reports whether key was accepted within the window.
func (s *Seen) Has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hasLocked(key)
}

func (s *Seen) hasLocked(key string) bool {
	at, ok := s.ids[key]
	return ok && at.After(s.now().Add(-s.window))
}

// note makes key seen from at, in memory: the journal record that holds it
// is on disk already.
func (s *Seen) note(key string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.ids[key]; !ok || at.After(old) {
		s.ids[key] = at
	}
	if now := s.now(); now.Sub(s.pruneAt) > s.window/8 {
		// The file is swept when it is rewritten; the map between
		// rewrites, so that it never holds much more than a window.
		s.pruneAt = now
		cutoff := now.Add(-s.window)
		for k, t := range s.ids {
			if !t.After(cutoff) {
				delete(s.ids, k)
			}
		}
	}
}

// keep writes keys (with when each was accepted) to the file, fsynced, so
// that a journal holding them can be compacted. Keys already out of the
// window are left out. A write that fails is cut off again, so the file
// never holds a torn line before the next one, and the keys are not kept.
func (s *Seen) keep(recs map[string]time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return fmt.Errorf("keeping seen ids: %w", os.ErrClosed)
	}
	cutoff := s.now().Add(-s.window)
	var buf bytes.Buffer
	n := 0
	for key, at := range recs {
		if !at.After(cutoff) {
			continue
		}
		b, err := json.Marshal(seenRecord{ID: key, At: at.Unix()})
		if err != nil {
			return fmt.Errorf("keeping seen ids: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		n++
	}
	if n == 0 {
		return nil
	}
	_, err := s.f.WriteAt(buf.Bytes(), s.size)
	if err == nil {
		err = syncData(s.f)
	}
	if err != nil {
		// Best effort: when even the cut fails, the next write goes over
		// the torn bytes at the same offset, and a reopen drops them.
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("keeping seen ids in %s: %w", s.path, err)
	}
	s.size += int64(buf.Len())
	for key, at := range recs {
		if !at.After(cutoff) {
			continue
		}
		if old, ok := s.ids[key]; !ok || at.After(old) {
			s.ids[key] = at
		}
	}
	s.lines += n
	if s.lines > 2*s.base+1024 {
		if err := s.rewriteLocked(); err != nil {
			// The ids are on disk; the file stays uncompacted for now.
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
