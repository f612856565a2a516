// Package inbox keeps a session's accepted user messages on disk until their
// turn reaches a durable end, so that a restart, a crash or a kill never
// loses a message and never runs one twice. Each session has one
// append-only journal file; every change is fsynced before the caller
// acknowledges anything to the user or the platform, and a change that
// fails to reach the disk (a full disk) is cut off again, so the journal
// stays as it was. On open, what a crash or an older failed write left
// (a torn last line, a cut record glued to the next one) is recovered
// where that cannot run anything twice or out of order, and Repairs says
// what was done; a journal that cannot be read safely otherwise is never
// repaired or replaced: the session fails closed and the file is kept for
// inspection.
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
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/workspace"
)

// Default limits, from the design notes: a user who has 20 messages waiting
// has a bigger problem than a full queue, and 8 MiB bounds a journal of
// pasted logs.
const (
	DefaultMaxPending = 20
	DefaultMaxBytes   = 8 << 20
)

// Errors callers branch on.
var (
	// ErrFull: the message was not accepted (pending count or journal size
	// at its limit). Tell the user; nothing already accepted is dropped.
	ErrFull = errors.New("inbox is full")
	// ErrDuplicate: a message with this ID is already pending. Accept it
	// silently as the same message.
	ErrDuplicate = errors.New("message already in the inbox")
	// ErrCorrupt: the journal could not be read. The session must refuse
	// new input (fail closed) until an admin inspects the file.
	ErrCorrupt = errors.New("inbox journal is corrupt")
	// ErrTooLarge: the journal is over its size limit on open. Fail closed,
	// as for ErrCorrupt.
	ErrTooLarge = errors.New("inbox journal is too large")
	// ErrUnknown: Ack or MarkStarted named a message that is not pending.
	ErrUnknown = errors.New("message not in the inbox")
	// ErrMessageTooLarge: the message alone is over the journal's size
	// limit, so it can never be accepted (a *SizeError gives the sizes).
	// Tell the user to send it as a file.
	ErrMessageTooLarge = errors.New("message is over the inbox size limit")
	// ErrBroken: a failed write could not be cut off again, so the journal
	// takes no more changes until the next write manages to (the disk has
	// room again) or it is opened again.
	ErrBroken = errors.New("inbox journal is not writable")
)

// SizeError says why a message did not fit: its record is Size bytes, the
// waiting messages take Used of the journal's Limit. It wraps
// ErrMessageTooLarge when Size alone is over Limit, else ErrFull.
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

// Entry is one accepted user message.
type Entry struct {
	ID       string          `json:"id"` // the platform's message identity
	Target   platform.Target `json:"target"`
	UserID   string          `json:"user_id"`
	UserName string          `json:"user_name,omitempty"`
	Text     string          `json:"text"` // the prompt as it will be sent
	Received time.Time       `json:"received"`
	// UUID is the uuid the message carried to claude once its turn
	// started; "" while it waits. After a crash, finding it in the Claude
	// Code transcript tells whether the CLI had received the message.
	UUID string `json:"uuid,omitempty"`
	// Kind is "" for a message to the agent; a caller that orders other
	// work with the messages (a command that switches sessions) names it
	// here, so that a replay keeps that order.
	Kind string `json:"kind,omitempty"`
	// Attachments are the files that came with the message, as the caller
	// stored them before journaling it: a replay builds the same prompt
	// from them without the platform, whose download links may be gone.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is one file of a message, already stored by the caller (or
// refused). The journal keeps where it is, never its content.
type Attachment struct {
	Name    string `json:"name"`              // as the user sent it
	Mime    string `json:"mime,omitempty"`    // as the platform declared it
	Path    string `json:"path,omitempty"`    // where it was stored, relative to the workspace
	Size    int64  `json:"size,omitempty"`    // bytes stored
	SHA256  string `json:"sha256,omitempty"`  // of the bytes stored, hex
	Text    bool   `json:"text,omitempty"`    // its content is text, to be inlined in the prompt
	Refusal string `json:"refusal,omitempty"` // why it was not passed on; "" when it was
}

// Started reports whether the message was sent to claude.
func (e Entry) Started() bool { return e.UUID != "" }

// Limits bound one inbox. Zero fields take the defaults. MaxBytes bounds
// what Append accepts; the start and acknowledgement records written after
// it may take a journal a little past it, so Open refuses (ErrTooLarge)
// only a journal over twice MaxBytes.
type Limits struct {
	MaxPending int
	MaxBytes   int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// AckReason says why a message left the inbox.
type AckReason string

const (
	AckResult AckReason = "result" // its turn ended with a result
	AckCancel AckReason = "cancel" // the user cancelled it
)

// record is one journal line.
type record struct {
	Op     string    `json:"op"` // add, start, ack
	Entry  *Entry    `json:"entry,omitempty"`
	ID     string    `json:"id,omitempty"`
	UUID   string    `json:"uuid,omitempty"`
	Reason AckReason `json:"reason,omitempty"`
}

// Inbox is one session's journal. Its methods are safe for concurrent use.
type Inbox struct {
	path   string
	limits Limits

	mu      sync.Mutex // guards everything below
	f       file
	size    int64 // bytes of the journal that hold its records
	pending []Entry
	broken  error    // set when a failed write could not be cut off
	repairs []string // what load recovered, for the caller's log
}

// Open reads (or creates) the journal at path. A journal over the size
// limit returns ErrTooLarge and one that does not parse ErrCorrupt; either
// way the file is left as it is. A last line cut short by a crash during
// an append is dropped: that append was never fsynced, so nobody was told
// the message was accepted, and the platform will deliver it again.
func Open(path string, limits Limits) (*Inbox, error) {
	return open(path, limits, nil)
}

// open is Open with the journal's file wrapped by wrap (tests fail writes
// through it as a full disk does); nil leaves it as it is.
func open(path string, limits Limits, wrap func(*os.File) file) (*Inbox, error) {
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
	in := &Inbox{path: path, limits: limits, f: f}
	if wrap != nil {
		in.f = wrap(f)
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
	if len(in.pending) == 0 && in.size > 0 {
		return in.truncateLocked()
	}
	return nil
}

// openLimit is the largest journal Open reads: MaxBytes of messages and
// room for their start and acknowledgement records.
func (in *Inbox) openLimit() int64 {
	if in.limits.MaxBytes > math.MaxInt64/2 {
		return math.MaxInt64
	}
	return 2 * in.limits.MaxBytes
}

// Repairs lists what Open recovered from the journal (a torn last line, a
// record cut short by a failed write), for the caller to log; nil when the
// journal was whole.
func (in *Inbox) Repairs() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.repairs...)
}

// apply replays one record onto the pending list.
func (in *Inbox) apply(r record) error {
	switch r.Op {
	case "add":
		if r.Entry == nil || r.Entry.ID == "" {
			return errors.New("add without an entry id")
		}
		if in.index(r.Entry.ID) >= 0 {
			return fmt.Errorf("message %q added twice", r.Entry.ID)
		}
		in.pending = append(in.pending, *r.Entry)
	case "start":
		i := in.index(r.ID)
		if i < 0 || r.UUID == "" {
			return fmt.Errorf("start of unknown message %q", r.ID)
		}
		in.pending[i].UUID = r.UUID
	case "ack":
		i := in.index(r.ID)
		if i < 0 {
			return fmt.Errorf("ack of unknown message %q", r.ID)
		}
		in.pending = append(in.pending[:i], in.pending[i+1:]...)
	default:
		return fmt.Errorf("unknown operation %q", r.Op)
	}
	return nil
}

func (in *Inbox) index(id string) int {
	for i := range in.pending {
		if in.pending[i].ID == id {
			return i
		}
	}
	return -1
}

// Append accepts a message: when it returns nil, the message is on disk.
func (in *Inbox) Append(e Entry) error {
	if e.ID == "" {
		return errors.New("appending to inbox: message without an id")
	}
	e.UUID = ""
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil {
		return fmt.Errorf("appending to inbox: %w", os.ErrClosed)
	}
	if in.index(e.ID) >= 0 {
		return ErrDuplicate
	}
	if len(in.pending) >= in.limits.MaxPending {
		return fmt.Errorf("%d messages are already waiting: %w", len(in.pending), ErrFull)
	}
	rec, err := encode(record{Op: "add", Entry: &e})
	if err != nil {
		return err
	}
	if size := int64(len(rec)); size > in.limits.MaxBytes || in.size+size > in.limits.MaxBytes {
		return fmt.Errorf("appending to inbox: %w", &SizeError{Size: size, Used: in.size, Limit: in.limits.MaxBytes})
	}
	if err := in.writeLocked(rec); err != nil {
		return err
	}
	in.pending = append(in.pending, e)
	return nil
}

// MarkStarted records that the message was sent to claude with uuid.
func (in *Inbox) MarkStarted(id, uuid string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	i := in.index(id)
	if i < 0 {
		return fmt.Errorf("marking %q started: %w", id, ErrUnknown)
	}
	rec, err := encode(record{Op: "start", ID: id, UUID: uuid})
	if err != nil {
		return err
	}
	if err := in.writeLocked(rec); err != nil {
		return err
	}
	in.pending[i].UUID = uuid
	return nil
}

// Ack removes a message whose turn reached a durable end. When nothing is
// left pending the journal is truncated, so it only ever holds live work.
func (in *Inbox) Ack(id string, why AckReason) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	i := in.index(id)
	if i < 0 {
		return fmt.Errorf("acknowledging %q: %w", id, ErrUnknown)
	}
	rec, err := encode(record{Op: "ack", ID: id, Reason: why})
	if err != nil {
		return err
	}
	if err := in.writeLocked(rec); err != nil {
		return err
	}
	in.pending = append(in.pending[:i], in.pending[i+1:]...)
	if len(in.pending) == 0 {
		return in.truncateLocked()
	}
	return nil
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

// Close closes the journal; pending messages stay on disk for the next Open.
func (in *Inbox) Close() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil {
		return nil
	}
	err := in.f.Close()
	in.f = nil
	return err
}

// encode writes one journal line. HTML escaping is off: it would turn
// every <, > and & of a pasted log or page into six bytes.
func encode(r record) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("encoding inbox record: %w", err)
	}
	return b.Bytes(), nil // Encode ends it with a newline
}

// writeLocked appends rec and fsyncs it. When either fails (a full disk
// writes part of the record, or none) the journal is cut back to where it
// was, so that a later record never follows a torn one, and the change
// counts as not made. When even that fails, the journal is broken: it
// takes no further change until a later write manages the cut.
func (in *Inbox) writeLocked(rec []byte) error {
	if in.f == nil {
		return fmt.Errorf("writing inbox: %w", os.ErrClosed)
	}
	if in.broken != nil {
		if err := in.cutBackLocked(); err != nil {
			return fmt.Errorf("writing inbox %s: %w (%v)", in.path, ErrBroken, in.broken)
		}
		in.broken = nil
	}
	_, err := in.f.WriteAt(rec, in.size)
	if err == nil {
		err = in.f.Sync()
	}
	if err != nil {
		if cerr := in.cutBackLocked(); cerr != nil {
			in.broken = cerr
			return fmt.Errorf("writing inbox %s: %w; cutting off the failed write failed too, so the journal takes no more changes for now: %v", in.path, err, cerr)
		}
		return fmt.Errorf("writing inbox %s: %w", in.path, err)
	}
	in.size += int64(len(rec))
	return nil
}

// cutBackLocked truncates the file to the records it is known to hold.
func (in *Inbox) cutBackLocked() error {
	if err := in.f.Truncate(in.size); err != nil {
		return err
	}
	return in.f.Sync()
}

func (in *Inbox) truncateLocked() error {
	if err := in.f.Truncate(0); err != nil {
		return fmt.Errorf("truncating inbox %s: %w", in.path, err)
	}
	in.size = 0
	if err := in.f.Sync(); err != nil {
		return fmt.Errorf("syncing inbox %s: %w", in.path, err)
	}
	return nil
}
