// Package inbox keeps a session's accepted user messages on disk until their
// turn reaches a durable end, so that a restart, a crash or a kill never
// loses a message and never runs one twice. Each session has one
// append-only journal file; accepting a message is one record, fsynced
// before the caller acknowledges anything to the user or the platform, and
// that record is also what makes the message's id seen (Seen). A journal
// that cannot be read is never repaired or replaced: the session fails
// closed and the file is kept for inspection. The package decides nothing
// about what a message means.
package inbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/workspace"
)

// Default limits, from the design notes: a user who has 20 messages waiting
// has a bigger problem than a full queue, and 8 MiB bounds a journal of
// pasted logs.
const (
	DefaultMaxPending   = 20
	DefaultMaxBytes     = 8 << 20
	DefaultCompactBytes = 64 << 10 // a few hundred messages
)

// Errors callers branch on.
var (
	// ErrFull: the message was not accepted (pending count or journal size
	// at its limit). Tell the user; nothing already accepted is dropped.
	ErrFull = errors.New("inbox is full")
	// ErrDuplicate: the message was accepted already (Seen.Claim), or is
	// pending in this journal (Append). Accept it silently as the same
	// message.
	ErrDuplicate = errors.New("message already accepted")
	// ErrCorrupt: the journal could not be read. The session must refuse
	// new input (fail closed) until an admin inspects the file.
	ErrCorrupt = errors.New("inbox journal is corrupt")
	// ErrTooLarge: the journal is over its size limit on open. Fail closed,
	// as for ErrCorrupt.
	ErrTooLarge = errors.New("inbox journal is too large")
	// ErrUnknown: Ack or a mark named a message that is not pending.
	ErrUnknown = errors.New("message not in the inbox")
)

// Inbox is one session's journal. Its methods are safe for concurrent use.
// Fsyncs run outside its lock, so that marking a turn's start never waits
// for another message's accept.
type Inbox struct {
	path   string
	limits Limits
	seen   *Seen // nil: ids are not tracked

	mu      sync.Mutex // guards everything below
	f       *os.File
	closing bool // Close began: nothing more is written
	size    int64
	gen     uint64               // records written since open; compaction checks nothing came in
	pending []Entry              // in arrival order
	keys    map[string]time.Time // seen keys of every record in the file, with their accepted time
	opened  time.Time            // when Open read the file: the accepted time of entries that have none
	syncs   sync.WaitGroup       // fsyncs in flight; Close waits for them
}

// Open reads (or creates) the journal at path, and makes every message id
// it holds seen in seen (which may be nil). A journal over the size limit
// returns ErrTooLarge and one that does not parse ErrCorrupt; either way the
// file is left as it is. A last line cut short by a crash during an append
// is dropped: that append was never fsynced, so nobody was told the message
// was accepted, and the platform will deliver it again. A journal with
// nothing pending is compacted: its ids move to seen's file and it is
// emptied.
func Open(path string, limits Limits, seen *Seen) (*Inbox, error) {
	limits = limits.withDefaults()
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("opening inbox: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, workspace.FilePerm)
	if err != nil {
		return nil, fmt.Errorf("opening inbox: %w", err)
	}
	in := &Inbox{path: path, limits: limits, seen: seen, f: f, keys: map[string]time.Time{}, opened: time.Now()}
	if seen != nil {
		in.opened = seen.now()
	}
	if err := in.load(); err != nil {
		f.Close()
		return nil, err
	}
	return in, nil
}

func (in *Inbox) load() error {
	fi, err := in.f.Stat()
	if err != nil {
		return fmt.Errorf("opening inbox %s: %w", in.path, err)
	}
	if fi.Size() > in.limits.MaxBytes {
		return fmt.Errorf("inbox %s is %d bytes, over the %d byte limit: %w", in.path, fi.Size(), in.limits.MaxBytes, ErrTooLarge)
	}
	data, err := io.ReadAll(in.f)
	if err != nil {
		return fmt.Errorf("reading inbox %s: %w", in.path, err)
	}
	valid := len(data)
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		valid = i + 1 // torn tail
	}
	sc := bufio.NewScanner(bytes.NewReader(data[:valid]))
	sc.Buffer(make([]byte, 64*1024), int(in.limits.MaxBytes)+1)
	line := 0
	for sc.Scan() {
		line++
		r, err := decode(sc.Bytes())
		if err == nil {
			err = in.apply(r)
		}
		if err != nil {
			return fmt.Errorf("inbox %s line %d: %v: %w", in.path, line, err, ErrCorrupt)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("inbox %s: %v: %w", in.path, err, ErrCorrupt)
	}
	if valid != len(data) {
		if err := in.f.Truncate(int64(valid)); err != nil {
			return fmt.Errorf("dropping the torn tail of inbox %s: %w", in.path, err)
		}
	}
	in.size = int64(valid)
	if _, err := in.f.Seek(in.size, io.SeekStart); err != nil {
		return fmt.Errorf("opening inbox %s: %w", in.path, err)
	}
	for i := range in.pending {
		if in.pending[i].UUID == "" {
			// Accepted by a version that chose the uuid at the start:
			// one chosen now goes into the start record when it is used.
			in.pending[i].UUID = uuid.NewString()
		}
	}
	if in.seen != nil {
		for k, at := range in.keys {
			in.seen.note(k, at)
		}
	}
	if len(in.pending) == 0 && in.size > 0 {
		return in.compactLocked()
	}
	return nil
}

// apply replays one record onto the pending list and the ids.
func (in *Inbox) apply(r diskRecord) error {
	switch r.Op {
	case opAdd:
		e := r.Entry.entry()
		if e.Accepted.IsZero() {
			e.Accepted = in.opened
		}
		if in.index(e.ID) >= 0 {
			return fmt.Errorf("message %q added twice", e.ID)
		}
		in.pending = append(in.pending, e)
		in.keepKey(e.SeenKey(), e.Accepted)
	case opSeen:
		in.keepKey(SeenKey(r.Platform, r.ID), *r.At)
	case opStart:
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("start of unknown message %q", r.ID)
		}
		if r.UUID == "" {
			return fmt.Errorf("start of message %q without a uuid", r.ID)
		}
		in.pending[i].UUID, in.pending[i].Started = r.UUID, true
	case opReply:
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("reply of unknown message %q", r.ID)
		}
		in.pending[i].Replying = true
	case opAck:
		i := in.index(r.ID)
		if i < 0 && r.Reason == ackUnsaved {
			return nil // the add it withdraws did not reach the disk
		}
		if i < 0 {
			return fmt.Errorf("ack of unknown message %q", r.ID)
		}
		in.pending = append(in.pending[:i], in.pending[i+1:]...)
	}
	return nil
}

func (in *Inbox) keepKey(key string, at time.Time) {
	if old, ok := in.keys[key]; !ok || at.After(old) {
		in.keys[key] = at
	}
}

func (in *Inbox) index(id string) int {
	for i := range in.pending {
		if in.pending[i].ID == id {
			return i
		}
	}
	return -1
}

// Append accepts a message: when it returns nil, the message is on disk,
// with its id (which is seen from then on). It is one write and one fsync.
func (in *Inbox) Append(e Entry) error {
	if e.ID == "" {
		return errors.New("appending to inbox: message without an id")
	}
	if e.Accepted.IsZero() {
		e.Accepted = time.Now()
	}
	e.Started, e.Replying = false, false
	rec, err := encode(diskRecord{Op: opAdd, Entry: toDisk(e)})
	if err != nil {
		return err
	}
	in.mu.Lock()
	if in.f == nil || in.closing {
		in.mu.Unlock()
		return fmt.Errorf("appending to inbox: %w", os.ErrClosed)
	}
	if in.index(e.ID) >= 0 {
		in.mu.Unlock()
		return ErrDuplicate
	}
	if len(in.pending) >= in.limits.MaxPending {
		n := len(in.pending)
		in.mu.Unlock()
		return fmt.Errorf("%d messages are already waiting: %w", n, ErrFull)
	}
	if in.size+int64(len(rec)) > in.limits.MaxBytes {
		in.mu.Unlock()
		return fmt.Errorf("the waiting messages would pass %d bytes: %w", in.limits.MaxBytes, ErrFull)
	}
	f := in.f
	err = in.writeLocked(rec)
	if err == nil {
		// Pending from the write on, so that no compaction empties the
		// file under the fsync below.
		in.pending = append(in.pending, e)
		in.keepKey(e.SeenKey(), e.Accepted)
		in.syncs.Add(1)
	}
	in.mu.Unlock()
	if err != nil {
		return err
	}
	err = in.sync(f)
	if err != nil {
		in.unsave(e.ID)
		return err
	}
	if in.seen != nil {
		in.seen.note(e.SeenKey(), e.Accepted)
	}
	return nil
}

// unsave withdraws a message whose add was written but whose fsync
// failed: the caller tells the user it was not accepted, so a replay must
// not run it. The ack record is best effort; the disk is failing.
func (in *Inbox) unsave(id string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if i := in.index(id); i >= 0 {
		in.pending = append(in.pending[:i], in.pending[i+1:]...)
	}
	if rec, err := encode(diskRecord{Op: opAck, ID: id, Reason: ackUnsaved}); err == nil {
		_ = in.writeLocked(rec)
	}
}

// MarkSeen records a message id accepted without an entry (a command that
// acts at once), so that a redelivery of it is recognized: one write and
// one fsync, like Append.
func (in *Inbox) MarkSeen(platform, id string, at time.Time) error {
	if id == "" {
		return errors.New("marking a message seen: no id")
	}
	rec, err := encode(diskRecord{Op: opSeen, ID: id, Platform: platform, At: &at})
	if err != nil {
		return err
	}
	in.mu.Lock()
	if in.f == nil {
		in.mu.Unlock()
		return fmt.Errorf("marking a message seen: %w", os.ErrClosed)
	}
	if in.size+int64(len(rec)) > in.limits.MaxBytes {
		in.mu.Unlock()
		return fmt.Errorf("the journal would pass %d bytes: %w", in.limits.MaxBytes, ErrFull)
	}
	f := in.f
	err = in.writeLocked(rec)
	if err == nil {
		in.keepKey(SeenKey(platform, id), at)
		in.syncs.Add(1)
	}
	in.mu.Unlock()
	if err != nil {
		return err
	}
	if err := in.sync(f); err != nil {
		return err
	}
	if in.seen != nil {
		in.seen.note(SeenKey(platform, id), at)
	}
	return nil
}

// MarkStarted records that the message was written to claude, with its
// uuid (Entry.UUID). The record is written, not fsynced: it costs no wait
// before the message reaches claude. Recovery reads it only to say what it
// knows; the transcript decides.
func (in *Inbox) MarkStarted(id string) error {
	return in.mark(id, opStart, func(e *Entry, r *diskRecord) {
		e.Started, r.UUID = true, e.UUID
	})
}

// MarkReplying records that the message's reply is about to be posted, so
// that recovery after a crash knows the reply may have reached the chat.
// Written, not fsynced, as MarkStarted.
func (in *Inbox) MarkReplying(id string) error {
	return in.mark(id, opReply, func(e *Entry, _ *diskRecord) { e.Replying = true })
}

func (in *Inbox) mark(id, op string, set func(*Entry, *diskRecord)) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	i := in.index(id)
	if i < 0 {
		return fmt.Errorf("marking %q (%s): %w", id, op, ErrUnknown)
	}
	e, r := in.pending[i], diskRecord{Op: op, ID: id}
	set(&e, &r)
	rec, err := encode(r)
	if err != nil {
		return err
	}
	if err := in.writeLocked(rec); err != nil {
		return err
	}
	in.pending[i] = e
	return nil
}

// Ack removes a message whose turn reached a durable end (fsynced). When
// nothing is left pending and the journal has reached CompactBytes it is
// compacted: its ids move to the seen file, and it is emptied; below that,
// and until it is closed, the acknowledged records stay in it (its ids are
// seen from the journal itself).
func (in *Inbox) Ack(id string, why AckReason) error {
	rec, err := encode(diskRecord{Op: opAck, ID: id, Reason: why})
	if err != nil {
		return err
	}
	in.mu.Lock()
	i := in.index(id)
	if i < 0 {
		in.mu.Unlock()
		return fmt.Errorf("acknowledging %q: %w", id, ErrUnknown)
	}
	if err := in.writeLocked(rec); err != nil {
		in.mu.Unlock()
		return err
	}
	in.pending = append(in.pending[:i], in.pending[i+1:]...)
	empty := len(in.pending) == 0 && in.size >= in.limits.CompactBytes
	f := in.f
	in.syncs.Add(1)
	in.mu.Unlock()
	if err := in.sync(f); err != nil {
		return err
	}
	if empty {
		return in.compact()
	}
	return nil
}

// compact moves the journal's ids to the seen file and empties the journal
// when nothing is pending; the seen file's fsync runs outside the lock, and
// the journal is emptied only if nothing was written meanwhile (a new
// message: its ids stay in the journal until the next compaction).
func (in *Inbox) compact() error {
	in.mu.Lock()
	if in.f == nil || in.closing || len(in.pending) > 0 || in.size == 0 {
		in.mu.Unlock()
		return nil
	}
	gen, keys := in.gen, cloneKeys(in.keys)
	in.mu.Unlock()
	if killedAt("compact: before the seen file") {
		return errKilled
	}
	if in.seen != nil {
		if err := in.seen.keep(keys); err != nil {
			return fmt.Errorf("compacting inbox %s: %w", in.path, err)
		}
	}
	if killedAt("compact: before emptying the journal") {
		return errKilled
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil || in.closing || in.gen != gen {
		return nil
	}
	return in.truncateLocked()
}

// killedAt reports whether a test stops the journal at point, as a kill
// there would: nothing after it is written. Always false outside tests.
var killedAt = func(point string) bool { return false }

// errKilled is what an operation stopped by killedAt returns.
var errKilled = errors.New("stopped at a kill point")

// compactLocked is compact with the lock held throughout (Open, Close).
func (in *Inbox) compactLocked() error {
	if in.seen != nil {
		if err := in.seen.keep(in.keys); err != nil {
			return fmt.Errorf("compacting inbox %s: %w", in.path, err)
		}
	}
	return in.truncateLocked()
}

func cloneKeys(m map[string]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Pending returns the waiting messages in arrival order.
func (in *Inbox) Pending() []Entry {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]Entry(nil), in.pending...)
}

// Len is the number of waiting messages.
func (in *Inbox) Len() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.pending)
}

// Path is the journal file.
func (in *Inbox) Path() string { return in.path }

// Close closes the journal, compacting it when nothing is pending; pending
// messages stay on disk for the next Open.
func (in *Inbox) Close() error {
	in.mu.Lock()
	if in.f == nil || in.closing {
		in.mu.Unlock()
		return nil
	}
	in.closing = true
	in.mu.Unlock()
	in.syncs.Wait()
	in.mu.Lock()
	defer in.mu.Unlock()
	var cerr error
	if len(in.pending) == 0 && in.size > 0 {
		cerr = in.compactLocked()
	}
	err := in.f.Close()
	in.f = nil
	return errors.Join(cerr, err)
}

// writeLocked writes rec at the end of the journal; durability is the
// caller's (sync).
func (in *Inbox) writeLocked(rec []byte) error {
	if in.f == nil || in.closing {
		return fmt.Errorf("writing inbox: %w", os.ErrClosed)
	}
	n, err := in.f.Write(rec)
	in.size += int64(n)
	in.gen++
	if err != nil {
		return fmt.Errorf("writing inbox %s: %w", in.path, err)
	}
	return nil
}

// sync fsyncs f (the journal, as read under the lock) with what was
// written so far; the caller counted it in syncs.
func (in *Inbox) sync(f *os.File) error {
	defer in.syncs.Done()
	if err := syncData(f); err != nil {
		return fmt.Errorf("syncing inbox %s: %w", in.path, err)
	}
	return nil
}

func (in *Inbox) truncateLocked() error {
	if err := in.f.Truncate(0); err != nil {
		return fmt.Errorf("truncating inbox %s: %w", in.path, err)
	}
	if _, err := in.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("truncating inbox %s: %w", in.path, err)
	}
	in.size = 0
	in.gen++
	clear(in.keys)
	// Not fsynced: if the emptying is lost, the journal replays with every
	// message acknowledged, which is the same.
	return nil
}
