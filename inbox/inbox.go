// Package inbox keeps a session's accepted user messages on disk until their
// turn reaches a durable end, so that a restart, a crash or a kill never
// loses a message and never runs one twice. Each session has one
// append-only journal file; accepting a message is one record, fsynced
// before the caller acknowledges anything to the user or the platform, and
// that record is also what makes the message's id seen (Seen). A change
// that fails to reach the disk (a full disk) is cut off again, so the
// journal stays as it was. On open, what a crash or an older failed write
// left (a torn last line, a cut record glued to the next one) is recovered
// where that cannot run anything twice or out of order, and Repairs says
// what was done; a journal that cannot be read safely otherwise is never
// repaired or replaced: the session fails closed and the file is kept for
// inspection. The package decides nothing about what a message means.
package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/format"
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
	// ErrMessageTooLarge: the message alone is over the journal's size
	// limit, so it can never be accepted (a *SizeError gives the sizes).
	// Tell the user to send it as a file.
	ErrMessageTooLarge = errors.New("message is over the inbox size limit")
	// ErrNotCompacted: Ack acknowledged the message but could not compact
	// the journal (the seen file's write failed); it stays as it is, its
	// ids seen from the journal itself, until a later compaction.
	ErrNotCompacted = errors.New("inbox journal not compacted")
	// ErrBroken: a failed write could not be cut off again, so the journal
	// takes no more changes until the next write manages to (the disk has
	// room again) or it is opened again.
	ErrBroken = errors.New("inbox journal is not writable")
)

// SizeError says why a message did not fit: its record is Size bytes, the
// journal's records take Used of its Limit. It wraps ErrMessageTooLarge
// when Size alone is over Limit, else ErrFull.
type SizeError struct {
	Size, Used, Limit int64
}

func (e *SizeError) Error() string {
	if e.Size > e.Limit {
		return fmt.Sprintf("the message takes %d bytes, over the journal's %d byte limit", e.Size, e.Limit)
	}
	return fmt.Sprintf("the message takes %d bytes and the waiting messages %d of the journal's %d", e.Size, e.Used, e.Limit)
}

func (e *SizeError) Unwrap() error {
	if e.Size > e.Limit {
		return ErrMessageTooLarge
	}
	return ErrFull
}

// Inbox is one session's journal. Its methods are safe for concurrent use.
// Fsyncs run outside its lock, so that marking a turn's start never waits
// for another message's accept.
type Inbox struct {
	path   string
	limits Limits
	seen   *Seen // nil: ids are not tracked

	mu      sync.Mutex // guards everything below
	f       file
	closing bool                 // Close began: nothing more is written
	size    int64                // bytes of the journal that hold its records
	broken  error                // set when a failed write could not be cut off
	gen     uint64               // records written since open; compaction checks nothing came in
	pending []Entry              // in arrival order
	keys    map[string]time.Time // seen keys of every record in the file, with their accepted time
	opened  time.Time            // when Open read the file: the accepted time of entries that have none
	syncs   sync.WaitGroup       // fsyncs in flight; Close waits for them
	repairs []string             // what load recovered, for the caller's log
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
	return open(path, limits, seen, nil)
}

// open is Open with the journal's file wrapped by wrap (tests fail writes
// through it as a full disk does); nil leaves it as it is.
func open(path string, limits Limits, seen *Seen, wrap func(*os.File) file) (*Inbox, error) {
	limits = limits.withDefaults()
	if err := workspace.EnsurePrivateDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("opening inbox: %w", err)
	}
	// Not through a link: a planted one would have the journal's repairs
	// (dropping a torn tail) truncate its target.
	f, err := workspace.OpenFileNoFollow(path, os.O_RDWR|os.O_CREATE, workspace.FilePerm)
	if err != nil {
		return nil, fmt.Errorf("opening inbox: %w", err)
	}
	in := &Inbox{path: path, limits: limits, seen: seen, f: f, keys: map[string]time.Time{}, opened: time.Now()}
	if wrap != nil {
		in.f = wrap(f)
	}
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
	if fi.Size() > in.openLimit() {
		return fmt.Errorf("inbox %s is %d bytes, over the %d byte limit: %w", in.path, fi.Size(), in.openLimit(), ErrTooLarge)
	}
	data, err := io.ReadAll(in.f)
	if err != nil {
		return fmt.Errorf("reading inbox %s: %w", in.path, err)
	}
	valid := len(data)
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		valid = i + 1
		// An append cut short by a crash: never fsynced, so nobody was
		// told it was done.
		in.repairs = append(in.repairs, fmt.Sprintf("dropped a last line cut short by a crash (%d bytes)", len(data)-valid))
	}
	line := 0
	for rest := data[:valid]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		l := rest[:i]
		rest = rest[i+1:]
		line++
		recs, repairs, err := parseLine(l)
		if err != nil {
			return fmt.Errorf("inbox %s line %d: %v: %w", in.path, line, err, ErrCorrupt)
		}
		for _, r := range recs {
			if err := format.Check("journal "+in.path, r.V); err != nil {
				return err
			}
			if err := in.apply(r); err != nil {
				return fmt.Errorf("inbox %s line %d: %v: %w", in.path, line, err, ErrCorrupt)
			}
		}
		for _, rp := range repairs {
			in.repairs = append(in.repairs, fmt.Sprintf("line %d: %s", line, rp))
		}
	}
	if valid != len(data) {
		if err := in.f.Truncate(int64(valid)); err != nil {
			return fmt.Errorf("dropping the torn tail of inbox %s: %w", in.path, err)
		}
	}
	in.size = int64(valid)
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
		if err := in.compactLocked(); err != nil {
			// A full disk: the ids stay seen from the journal itself,
			// which is compacted another time.
			in.repairs = append(in.repairs, fmt.Sprintf("kept the journal uncompacted: %v", err))
		}
	}
	return nil
}

// openLimit is the largest journal Open reads: MaxBytes of messages and
// room for their start, reply and acknowledgement records, which are
// written past it.
func (in *Inbox) openLimit() int64 {
	if in.limits.MaxBytes > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * in.limits.MaxBytes
}

// Repairs lists what Open recovered from the journal (a torn last line, a
// record cut short by a failed write, a compaction a full disk refused),
// for the caller to log; nil when the journal was whole.
func (in *Inbox) Repairs() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.repairs...)
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
		// A start record without into (MarkStarted) after one with it
		// (MarkSteered) takes the mark away.
		in.pending[i].UUID, in.pending[i].Started, in.pending[i].SteeredInto, in.pending[i].TakenIn = r.UUID, true, r.Into, r.In
	case opReply:
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("reply of unknown message %q", r.ID)
		}
		in.pending[i].Replying, in.pending[i].ReplyTail = true, r.Tail
		in.pending[i].Settled = in.pending[i].Settled || r.Settled
		in.pending[i].Replicated = in.pending[i].Replicated || r.Replicated
		if len(r.Msgs) > 0 {
			in.pending[i].Streamed = r.Msgs
		}
	case opStream:
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("stream of unknown message %q", r.ID)
		}
		in.pending[i].Streamed = r.Msgs
	case opPart:
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("part of unknown message %q", r.ID)
		}
		if !slices.Contains(in.pending[i].Parts, *r.Part) {
			in.pending[i].Parts = append(in.pending[i].Parts, *r.Part)
		}
	case opAck:
		i := in.index(r.ID)
		if r.Reason == ackUnsaved {
			// The add it withdraws may not have reached the disk; either
			// way the caller was told it was not accepted, so its id is
			// not seen: a redelivery is a new message.
			if i >= 0 {
				delete(in.keys, in.pending[i].SeenKey())
				in.pending = append(in.pending[:i], in.pending[i+1:]...)
			}
			return nil
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
	if e.UUID == "" {
		e.UUID = uuid.NewString() // the start record carries it
	}
	e.Started, e.Replying, e.Streamed, e.Parts, e.ReplyTail, e.Settled, e.SteeredInto, e.TakenIn = false, false, nil, nil, "", false, "", false
	e.Replicated = false
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
	if size := int64(len(rec)); size > in.limits.MaxBytes || in.size+size > in.limits.MaxBytes {
		used := in.size
		in.mu.Unlock()
		return fmt.Errorf("appending to inbox: %w", &SizeError{Size: size, Used: used, Limit: in.limits.MaxBytes})
	}
	f, off := in.f, in.size
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
		in.unsave(e, off, int64(len(rec)))
		return err
	}
	if in.seen != nil {
		in.seen.note(e.SeenKey(), e.Accepted)
	}
	return nil
}

// unsave withdraws a message whose add (n bytes at off) was written but
// whose fsync failed: the caller tells the user it was not accepted, so a
// replay must not run it, and its id is not seen. When nothing was written
// after it the add is cut off again, so that the journal is as it was;
// else (another record followed while the fsync ran outside the lock) an
// ack record withdraws it, best effort: the disk is failing.
func (in *Inbox) unsave(e Entry, off, n int64) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if i := in.index(e.ID); i >= 0 {
		in.pending = append(in.pending[:i], in.pending[i+1:]...)
	}
	delete(in.keys, e.SeenKey())
	if in.unwriteLocked(off, n) {
		return
	}
	if rec, err := encode(diskRecord{Op: opAck, ID: e.ID, Reason: ackUnsaved}); err == nil {
		_ = in.writeLocked(rec)
	}
}

// unwriteLocked cuts off the n bytes at off when they are the journal's
// last, reporting whether it did.
func (in *Inbox) unwriteLocked(off, n int64) bool {
	if in.f == nil || in.broken != nil || in.size != off+n {
		return false
	}
	keep := in.size
	in.size = off
	if err := in.cutBackLocked(); err != nil {
		in.size = keep
		return false
	}
	in.gen++
	return true
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
	if size := int64(len(rec)); in.size+size > in.limits.MaxBytes {
		used := in.size
		in.mu.Unlock()
		return fmt.Errorf("marking a message seen: %w", &SizeError{Size: size, Used: used, Limit: in.limits.MaxBytes})
	}
	f, off := in.f, in.size
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
		in.mu.Lock()
		in.unwriteLocked(off, int64(len(rec)))
		delete(in.keys, SeenKey(platform, id))
		in.mu.Unlock()
		return err
	}
	if in.seen != nil {
		in.seen.note(SeenKey(platform, id), at)
	}
	return nil
}

// MarkStarted records that the message was written to claude, with its
// uuid: the entry's (Entry.UUID) when uuid is "", else uuid, which the
// entry carries from then on (a message sent again in a session that
// already holds it under its first uuid: Claude refused it for a usage
// limit, and the CLI skips a uuid it has; after a crash the transcript is
// asked about this sending, not the refused one). The record is written,
// not fsynced: it costs no wait before the message reaches claude.
// Recovery reads it only to say what it knows; the transcript decides.
func (in *Inbox) MarkStarted(id, uuid string) error {
	return in.mark(id, opStart, func(e *Entry, r *diskRecord) {
		if uuid != "" {
			e.UUID = uuid
		}
		// A message steered into a turn that the CLI runs as a turn of
		// its own after all is its own turn now: the mark goes.
		e.Started, e.SteeredInto, e.TakenIn, r.UUID = true, "", false, e.UUID
	})
}

// MarkSteered records that the message was written into the running turn
// of message into (Entry.SteeredInto), with its uuid. It is a start
// record, so that a version that does not know the mark reads it as the
// MarkStarted it also is. Written, not fsynced, as MarkStarted.
func (in *Inbox) MarkSteered(id, into string) error {
	return in.mark(id, opStart, func(e *Entry, r *diskRecord) {
		e.Started, e.SteeredInto, r.UUID, r.Into = true, into, e.UUID, into
	})
}

// MarkTakenIn records that the CLI took the message steered into a turn
// into it (Entry.TakenIn). A start record like MarkSteered's, which a
// version that does not know the mark reads as that. Written, not fsynced.
func (in *Inbox) MarkTakenIn(id string) error {
	return in.mark(id, opStart, func(e *Entry, r *diskRecord) {
		e.TakenIn, r.UUID, r.Into, r.In = true, e.UUID, e.SteeredInto, true
	})
}

// MarkReplying records that the message's reply is about to be posted, so
// that recovery after a crash knows the reply may have reached the chat.
// Written, not fsynced, as MarkStarted.
// streamed are the messages its text goes to when it was streamed, tail
// what the reply carries after the agent's text (Entry.ReplyTail).
func (in *Inbox) MarkReplying(id string, streamed []Posted, tail string) error {
	return in.mark(id, opReply, func(e *Entry, r *diskRecord) {
		e.Replying, e.ReplyTail, r.Tail = true, tail, tail
		if len(streamed) > 0 {
			e.Streamed, r.Msgs = slices.Clone(streamed), slices.Clone(streamed)
		}
	})
}

// MarkSettled records that the cluster's stream confirmed this host's
// settlement of the message's event (Entry.Settled). It is a reply record
// (with the same tail), so that a version that does not know the mark
// reads it as the MarkReplying before it. replicated says the reply was
// written to the cluster before the settlement (Entry.Replicated).
// Written, not fsynced.
func (in *Inbox) MarkSettled(id string, replicated bool) error {
	return in.mark(id, opReply, func(e *Entry, r *diskRecord) {
		e.Replying, e.Settled, r.Tail, r.Settled = true, true, e.ReplyTail, true
		e.Replicated, r.Replicated = e.Replicated || replicated, replicated
	})
}

// MarkStreamed records the messages the message's reply is streamed into
// (all of them, each time one is added), so that after a kill recovery
// can make them show the reply, or say they were cut off, instead of
// leaving a partial reply that looks whole. Written, not fsynced.
func (in *Inbox) MarkStreamed(id string, msgs []Posted) error {
	return in.mark(id, opStream, func(e *Entry, r *diskRecord) {
		e.Streamed, r.Msgs = slices.Clone(msgs), slices.Clone(msgs)
	})
}

// MarkPart records that part of the message's reply was posted: on a
// platform that can neither tag a post nor find it, so that after a kill
// only the parts not recorded are posted, and a part posted again is one
// posted just before the kill, before this write. Written, not fsynced.
func (in *Inbox) MarkPart(id string, part int) error {
	return in.mark(id, opPart, func(e *Entry, r *diskRecord) {
		r.Part = &part
		if !slices.Contains(e.Parts, part) {
			e.Parts = append(slices.Clone(e.Parts), part)
		}
	})
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
	sync, err := in.AckUnsynced(id, why)
	if err != nil {
		return err
	}
	return sync()
}

// AckUnsynced is Ack in two steps, for a caller that keeps the fsync off
// its path. It writes the ack record: from then on the message is not
// pending, and a process killed after it does not run the message again
// (the record is in the kernel's cache, and every record written later
// follows it in the file). It returns the rest of Ack, which the caller
// must run once: the fsync that makes the ack survive the machine, and
// the compaction that may follow it. Close waits for it.
func (in *Inbox) AckUnsynced(id string, why AckReason) (sync func() error, err error) {
	rec, err := encode(diskRecord{Op: opAck, ID: id, Reason: why})
	if err != nil {
		return nil, err
	}
	in.mu.Lock()
	i := in.index(id)
	if i < 0 {
		in.mu.Unlock()
		return nil, fmt.Errorf("acknowledging %q: %w", id, ErrUnknown)
	}
	if err := in.writeLocked(rec); err != nil {
		in.mu.Unlock()
		return nil, err
	}
	in.pending = append(in.pending[:i], in.pending[i+1:]...)
	empty := len(in.pending) == 0 && in.size >= in.limits.CompactBytes
	f := in.f
	in.syncs.Add(1)
	in.mu.Unlock()
	return func() error {
		if err := in.sync(f); err != nil {
			return err
		}
		if empty {
			if err := in.compact(); err != nil {
				return fmt.Errorf("%w: %w", ErrNotCompacted, err)
			}
		}
		return nil
	}, nil
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
// caller's (sync). When the write fails (a full disk writes part of the
// record, or none) the journal is cut back to where it was, so that a
// later record never follows a torn one, and the change counts as not
// made. When even that fails, the journal is broken: it takes no further
// change until a later write manages the cut.
func (in *Inbox) writeLocked(rec []byte) error {
	if in.f == nil || in.closing {
		return fmt.Errorf("writing inbox: %w", os.ErrClosed)
	}
	if in.broken != nil {
		if err := in.cutBackLocked(); err != nil {
			return fmt.Errorf("writing inbox %s: %w (%v)", in.path, ErrBroken, in.broken)
		}
		in.broken = nil
	}
	if _, err := in.f.WriteAt(rec, in.size); err != nil {
		if cerr := in.cutBackLocked(); cerr != nil {
			in.broken = cerr
			return fmt.Errorf("writing inbox %s: %w; cutting off the failed write failed too, so the journal takes no more changes for now: %v", in.path, err, cerr)
		}
		return fmt.Errorf("writing inbox %s: %w", in.path, err)
	}
	in.size += int64(len(rec))
	in.gen++
	return nil
}

// cutBackLocked truncates the file to the records it is known to hold.
func (in *Inbox) cutBackLocked() error {
	if err := in.f.Truncate(in.size); err != nil {
		return err
	}
	return syncData(in.f)
}

// sync fsyncs f (the journal, as read under the lock) with what was
// written so far; the caller counted it in syncs.
func (in *Inbox) sync(f file) error {
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
	in.size = 0
	in.gen++
	in.broken = nil
	clear(in.keys)
	// Not fsynced: if the emptying is lost, the journal replays with every
	// message acknowledged, which is the same.
	return nil
}

// CheckFormats returns a format.NewerError for the first journal in dir
// (every "*.jsonl" but the seen ids) holding a record of a newer format
// than this build reads, nil when there is none or no dir: so that a
// cc-connect refuses to start, before it takes anything, where a newer one
// wrote its journals. It only reads.
func CheckFormats(dir string) error {
	paths, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return fmt.Errorf("listing the journals in %s: %w", dir, err)
	}
	for _, p := range paths {
		if filepath.Base(p) == "seen.jsonl" {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // compacted away meanwhile
			}
			return fmt.Errorf("reading journal %s: %w", p, err)
		}
		for rest := data; len(rest) > 0; {
			l := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				l, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			var r struct {
				V int `json:"v"`
			}
			if json.Unmarshal(l, &r) != nil {
				continue // torn or glued: Open repairs or refuses it
			}
			if err := format.Check("journal "+p, r.V); err != nil {
				return err
			}
		}
	}
	return nil
}
