// Package inbox keeps a session's accepted user messages on disk until their
// turn reaches a durable end, so that a restart, a crash or a kill never
// loses a message and never runs one twice. Each session has one
// append-only journal file; every change is fsynced before the caller
// acknowledges anything to the user or the platform. A journal that cannot
// be read is never repaired or replaced: the session fails closed and the
// file is kept for inspection.
package inbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
)

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

// Limits bound one inbox. Zero fields take the defaults.
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
	f       *os.File
	size    int64
	pending []Entry
}

// Open reads (or creates) the journal at path. A journal over the size
// limit returns ErrTooLarge and one that does not parse ErrCorrupt; either
// way the file is left as it is. A last line cut short by a crash during
// an append is dropped: that append was never fsynced, so nobody was told
// the message was accepted, and the platform will deliver it again.
func Open(path string, limits Limits) (*Inbox, error) {
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
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return fmt.Errorf("inbox %s line %d: %v: %w", in.path, line, err, ErrCorrupt)
		}
		if err := in.apply(r); err != nil {
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
	if len(in.pending) == 0 && in.size > 0 {
		return in.truncateLocked()
	}
	return nil
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
	if in.size+int64(len(rec)) > in.limits.MaxBytes {
		return fmt.Errorf("the waiting messages would pass %d bytes: %w", in.limits.MaxBytes, ErrFull)
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

func encode(r record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding inbox record: %w", err)
	}
	return append(b, '\n'), nil
}

func (in *Inbox) writeLocked(rec []byte) error {
	if in.f == nil {
		return fmt.Errorf("writing inbox: %w", os.ErrClosed)
	}
	n, err := in.f.Write(rec)
	in.size += int64(n)
	if err != nil {
		return fmt.Errorf("writing inbox %s: %w", in.path, err)
	}
	if err := in.f.Sync(); err != nil {
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
	if err := in.f.Sync(); err != nil {
		return fmt.Errorf("syncing inbox %s: %w", in.path, err)
	}
	return nil
}
