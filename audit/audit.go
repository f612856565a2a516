// Package audit is the audit trail: an append-only file of JSON lines, one
// per kept activity event (who asked what in which conversation, each tool
// Claude ran, who approved or answered what, runs started without a
// person, !sh commands, reloads and rights changes, lease moves), rotated
// by size with a bounded number of old files; and the reading of it that
// `cc-connect audit` prints. It subscribes to activity's Feed like any
// observer and decides nothing: what an event says, and that its texts
// carry no secret, is settled before it gets here.
package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/workspace"
)

// Lost is the kind of the line that says how many events could not be
// written (a full disk, a queue over its limit); it is the trail's own.
const Lost activity.Kind = "lost"

// Defaults of Options (and of [audit] in the config).
const (
	DefaultMaxSize    = 10 << 20
	DefaultKeep       = 5
	DefaultQueueLimit = 10000
)

// Options say where the trail is written and how much of it is kept.
type Options struct {
	// Path is the current file; old files are Path.1 (the newest) to
	// Path.Keep. Its folder is made (0700) or must be private.
	Path string
	// MaxSize is the size past which the file is rotated; 0 = default.
	MaxSize int64
	// Keep is how many old files are kept; negative = none.
	Keep int
	// QueueLimit is how many events may wait for the disk before new ones
	// are counted as lost; 0 = default.
	QueueLimit int
	Log        *slog.Logger
}

// Trail writes the kept events of a Feed. Record never waits on the disk:
// events wait in a bounded queue that one goroutine of the trail's writes
// (a batch, then one fsync). A write that fails is logged once, with what
// to do, and its events are counted; the conversations go on, and the
// first write that succeeds again records how many were lost.
type Trail struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex // guards queue, lost, closed, waiters
	queue   []activity.Event
	lost    int             // events not written since the last line that said so
	waiters []chan struct{} // Flush calls waiting for the queue's events to be written
	closed  bool
	started bool
	wake    chan struct{} // 1-buffered: the queue has events
	stop    chan struct{}
	stopped chan struct{}

	// The writer goroutine's alone.
	f       *os.File
	size    int64
	failing bool
}

// New makes a trail; it opens nothing (Start does).
func New(o Options) *Trail {
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if o.QueueLimit <= 0 {
		o.QueueLimit = DefaultQueueLimit
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Trail{opts: o, log: o.Log.With("path", o.Path), wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Start opens the file (making its folder) and starts the writer; an
// error means nothing will be written.
func (t *Trail) Start() error {
	if err := workspace.EnsurePrivateDir(filepath.Dir(t.opts.Path)); err != nil {
		return fmt.Errorf("audit.path: %w", err)
	}
	if err := t.open(); err != nil {
		return fmt.Errorf("audit.path: opening %s: %w", t.opts.Path, err)
	}
	t.mu.Lock()
	t.started = true
	t.mu.Unlock()
	go t.run()
	return nil
}

// Close writes what waits, stops the writer and closes the file; a nil
// trail (the trail off) has nothing to close.
func (t *Trail) Close() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	started := t.started
	t.mu.Unlock()
	if !started {
		return nil
	}
	close(t.stop)
	<-t.stopped
	if t.f == nil {
		return nil
	}
	return t.f.Close()
}

// Flush returns once every event recorded before it was written (or
// counted as lost). Shutdown and `cc-connect audit`'s tests use it;
// conversations never wait on it.
func (t *Trail) Flush() {
	done := make(chan struct{})
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.waiters = append(t.waiters, done)
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
	<-done
}

// Record implements activity.Sink: a kept event joins the queue.
func (t *Trail) Record(e activity.Event) {
	if e.Live() {
		return
	}
	t.mu.Lock()
	switch {
	case t.closed:
		t.lost++
	case len(t.queue) >= t.opts.QueueLimit:
		if t.lost == 0 {
			t.log.Error("Audit events are coming faster than the disk takes them; some are lost", "queue_limit", t.opts.QueueLimit)
		}
		t.lost++
	default:
		t.queue = append(t.queue, e)
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// run writes the queue's events as they come, until Close.
func (t *Trail) run() {
	defer close(t.stopped)
	for {
		select {
		case <-t.wake:
			t.flush(false)
		case <-t.stop:
			t.flush(true)
			return
		}
	}
}

// flush writes what waits in the queue, then syncs the file once. While
// writes fail, the count of lost events alone waits for the next event
// (or the last flush): a line that fits where an event did not would
// say the trail works again.
func (t *Trail) flush(final bool) {
	t.mu.Lock()
	batch, lost, waiters := t.queue, t.lost, t.waiters
	t.queue, t.lost, t.waiters = nil, 0, nil
	t.mu.Unlock()
	defer func() {
		for _, w := range waiters {
			close(w)
		}
	}()
	if len(batch) == 0 && (lost == 0 || t.failing && !final) {
		t.mu.Lock()
		t.lost += lost
		t.mu.Unlock()
		return
	}
	if lost > 0 {
		batch = append([]activity.Event{lostEvent(lost)}, batch...)
	}
	for i, e := range batch {
		if err := t.write(e); err != nil {
			n := len(batch) - i // these events, and what the lost line counted
			if i == 0 && lost > 0 {
				n += lost - 1
			}
			t.failed(err, n)
			return
		}
	}
	if err := t.f.Sync(); err != nil {
		t.failed(err, 0)
		return
	}
	if t.failing {
		t.failing = false
		t.log.Info("The audit trail is written again")
	}
}

func lostEvent(n int) activity.Event {
	return activity.Event{Time: time.Now().UTC(), Kind: Lost, Outcome: fmt.Sprintf("%d events were not written", n)}
}

// failed logs a failed write once per streak, counts the events it lost
// and leaves the file as it was before the write.
func (t *Trail) failed(err error, lost int) {
	if !t.failing {
		t.failing = true
		hint := "check the file and its folder"
		if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
			hint = "the disk is full: free space"
		}
		t.log.Error("Writing the audit trail failed; its events are lost until a write succeeds (the conversations go on)", "error", err, "hint", hint)
	}
	if t.f != nil {
		// A cut line would not parse: drop it (best effort).
		_ = t.f.Truncate(t.size)
	}
	t.mu.Lock()
	t.lost += lost
	t.mu.Unlock()
}

// write appends one event's line, rotating first when it would take the
// file past MaxSize.
func (t *Trail) write(e activity.Event) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding an audit event: %w", err)
	}
	line = append(line, '\n')
	if t.f == nil {
		if err := t.open(); err != nil {
			return err
		}
	}
	if t.size > 0 && t.size+int64(len(line)) > t.opts.MaxSize {
		if err := t.rotate(); err != nil {
			return fmt.Errorf("rotating the audit trail: %w", err)
		}
	}
	n, err := t.f.Write(line)
	if err != nil {
		return err
	}
	t.size += int64(n)
	return nil
}

// open opens the current file for appending (0600, no symbolic link).
func (t *Trail) open() error {
	f, err := workspace.OpenFileNoFollow(t.opts.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return err
		}
	}
	t.f, t.size = f, fi.Size()
	return nil
}

// rotate moves the current file to Path.1 (and each old one a place on,
// the oldest past Keep removed) and opens a new one.
func (t *Trail) rotate() error {
	if err := t.f.Close(); err != nil {
		t.log.Warn("Closing the audit file before rotating it failed", "error", err)
	}
	t.f = nil
	keep := t.opts.Keep
	if keep <= 0 {
		if err := os.Remove(t.opts.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else {
		if err := os.Remove(OldPath(t.opts.Path, keep)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for i := keep - 1; i >= 0; i-- {
			if err := os.Rename(OldPath(t.opts.Path, i), OldPath(t.opts.Path, i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return t.open()
}

// OldPath is the i-th old file of the trail at path (0: the current one).
func OldPath(path string, i int) string {
	if i == 0 {
		return path
	}
	return fmt.Sprintf("%s.%d", path, i)
}
