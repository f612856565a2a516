package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/lease"
	"github.com/cc-connect/cc-connect/platform"
)

// state is where a session is in its turn cycle.
type state string

const (
	stateIdle           state = "idle"
	stateRunning        state = "running"
	stateRequiresAction state = "requires_action"
)

type itemKind int

const (
	itemTurn   itemKind = iota // a user message for the agent
	itemNew                    // !new: ordered after the turns before it
	itemResume                 // !resume: ordered after the turns before it
)

// workItem is one entry of a session's FIFO. The FIFO is the one place
// where accepted work waits, so that it can later be made durable.
type workItem struct {
	kind     itemKind
	msg      platform.Message
	resumeID string
	// files are the message's attachments as stored at acceptance
	// (fetchAttachments), journaled with it.
	files []inbox.Attachment
	// Durability (durable.go, recovery.go): the message's inbox entry, the
	// uuid it was accepted with (and is sent with), whether it was sent
	// before a restart, whether it is the first item of a session reopened
	// by recovery, and whether it resumes a cut turn (so it is not marked
	// started again).
	inboxID      string
	uuid         string
	started      bool
	recovered    bool
	continuation bool
	afterCrash   bool // recovered once already after its agent died mid-turn
}

type ctrlKind int

const (
	ctrlAnswer ctrlKind = iota // a permission answer
	ctrlStop                   // !stop
	ctrlReap                   // close an idle process to free a slot
)

// control reaches a session's goroutine without queueing behind turns.
type control struct {
	kind      ctrlKind
	requestID string // ctrlAnswer: "" means the pending one
	choice    platform.Choice
	userName  string
	to        platform.Target // where to answer the sender
}

func keyOf(t platform.Target) string {
	return t.Platform + "/" + t.Channel + "/" + t.Thread
}

// session is one conversation (platform, channel, thread) and its Claude
// Code session. Its goroutine (loop) owns the agent process and runs the
// FIFO in order; other goroutines only enqueue, send controls, and read the
// snapshot fields under mu.
type session struct {
	e       *Engine
	key     string
	to      platform.Target  // replies go here
	adapter platform.Adapter // the one it started with; see chat
	binding Binding
	ws      *workspaceEntry
	log     *slog.Logger
	ctrl    chan control
	wake    chan struct{} // capacity 1: the FIFO gained an item

	// Guarded by mu too. inbox is the session's journal (nil while it
	// cannot be read: inboxErr says why, and new input is refused); lease
	// is held on leaseID while a process of ours runs on that session.
	inbox    *inbox.Inbox
	inboxErr error
	lease    *lease.Lock
	leaseID  string

	// saveMu orders the writes of the record, so that the file ends up
	// with the latest one (see saveRecord).
	saveMu sync.Mutex

	mu      sync.Mutex // guards the fields below
	queue   []workItem
	rec     record
	dirty   bool // rec has changes not yet saved
	state   state
	proc    agentProcess
	idleAt  time.Time     // when the live process last finished a turn
	listed  []sessionInfo // the last !sessions listing, for !resume <n>
	pending string        // pending permission request id
	closed  bool          // the goroutine ended; enqueue must not add work

	shell shellSlot // the running !sh command, if any (its own lock)
}

// errSessionClosed means the session's goroutine ended (retired or shut
// down) before the item could be queued.
var errSessionClosed = errors.New("session closed")

// defaultRetireAfter is how long a session without a live process and
// without work keeps its goroutine. Its state stays on disk, and the next
// message loads it again, so a long-running daemon does not keep one
// goroutine per thread it ever saw.
const defaultRetireAfter = 30 * time.Minute

// session returns the session of m's conversation, creating it (and
// loading its stored state) on first use and starting its goroutine.
func (e *Engine) session(ctx context.Context, b Binding, m platform.Message, a platform.Adapter) (*session, error) {
	key := keyOf(m.Target)
	e.mu.Lock()
	if s, ok := e.sessions[key]; ok {
		e.mu.Unlock()
		return s, nil
	}
	if e.shutting {
		e.mu.Unlock()
		return nil, errStopped
	}
	to := m.Target
	to.MessageID = ""
	s := &session{
		e:       e,
		key:     key,
		to:      to,
		adapter: a,
		binding: b,
		ws:      e.pool.GetOrCreate(b.Workspace),
		ctrl:    make(chan control, 16),
		wake:    make(chan struct{}, 1),
		state:   stateIdle,
	}
	s.log = e.log.With("platform", to.Platform, "channel", to.Channel, "thread", to.Thread,
		"session_key", key, "workspace", s.ws.Path)
	rec, ok, lerr := e.store.load(key, e.now())
	if ok {
		if rec.Workspace != s.ws.Path {
			s.log.Warn("Stored session belongs to another workspace; keeping its id",
				"session_id", rec.SessionID, "stored_workspace", rec.Workspace)
		}
		rec.Workspace = s.ws.Path
	} else {
		rec = record{Key: key, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, Workspace: s.ws.Path}
	}
	s.rec = rec
	s.queue = s.openInboxLocked()
	e.sessions[key] = s
	e.wg.Add(1)
	e.mu.Unlock()
	if n := len(s.queue); n > 0 {
		e.addBusy(n)
	}
	if s.inboxErr != nil {
		s.log.Error("Inbox journal unreadable; the conversation refuses new input until an admin inspects it",
			"path", e.inboxPath(key), "error", s.inboxErr, "admins", b.Admins)
		s.send(ctx, s.failClosedText(s.inboxErr))
	}

	if lerr != nil {
		s.log.Error("Session state unreadable; starting without it", "error", lerr)
		s.send(ctx, "Stored state for this conversation was unreadable and has been moved aside; starting a new session. ("+lerr.Error()+")")
	}
	go s.loop()
	return s, nil
}

// hasSession reports whether the conversation already has a session, in
// memory or on disk.
func (e *Engine) hasSession(key string) bool {
	e.mu.Lock()
	_, ok := e.sessions[key]
	e.mu.Unlock()
	return ok || e.store.exists(key)
}

// enqueue adds an item to the FIFO, or refuses it when the FIFO is full.
// It tells the user when the item has to wait, and at which position.
func (s *session) enqueue(ctx context.Context, it workItem) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errSessionClosed
	}
	if len(s.queue) >= s.e.opts.QueueLimit {
		n := len(s.queue)
		s.mu.Unlock()
		s.log.Warn("Queue full; message refused", "queue_len", n)
		s.send(ctx, fmt.Sprintf("Queue full (%d messages waiting): this message was not queued. Please send it again once the current turn is done.", n))
		return nil
	}
	busy := s.state != stateIdle || len(s.queue) > 0
	added := 1
	if journaled(it.kind) {
		// On disk before the caller acknowledges the event or the user
		// hears it is queued.
		id, u, dup, refusal, reloaded := s.journalLocked(it)
		s.queue = append(s.queue, reloaded...)
		added = len(reloaded)
		if refusal != "" || dup {
			s.mu.Unlock()
			if added > 0 {
				s.e.addBusy(added)
				s.poke()
			}
			if refusal != "" {
				s.send(ctx, refusal)
			} else {
				s.log.Debug("Ignoring a message already in the inbox", "message_id", id)
			}
			return nil
		}
		it.inboxID, it.uuid = id, u
		added++
	}
	s.queue = append(s.queue, it)
	pos := len(s.queue)
	s.mu.Unlock()
	s.e.noteQueue()
	s.e.addBusy(added)
	if it.kind == itemTurn {
		if note := refusalNote(it.files); note != "" {
			s.send(ctx, note)
		}
	}
	s.poke()
	if busy && it.kind == itemTurn {
		s.send(ctx, fmt.Sprintf("Queued (position %d): it runs after the current turn.", pos))
	}
	return nil
}

// poke wakes the session goroutine: the FIFO gained an item.
func (s *session) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// next blocks until the FIFO has an item, handling controls, idle reaping
// and a process that dies while idle meanwhile. It returns false when the
// engine stops; items still queued then are refused.
func (s *session) next() (workItem, bool) {
	for {
		if s.e.isStopping() {
			s.refuseQueued()
			return workItem{}, false
		}
		if s.retireIfStale() { // reload.go
			return workItem{}, false
		}
		s.mu.Lock()
		if len(s.queue) > 0 {
			it := s.queue[0]
			s.queue = s.queue[1:]
			if it.kind == itemTurn {
				// Running from the moment it leaves the FIFO: a message
				// arriving now is told it waits, and the process is not
				// reaped for another session.
				s.state = stateRunning
			}
			s.mu.Unlock()
			s.e.noteQueue()
			return it, true
		}
		proc, idleAt := s.proc, s.idleAt
		s.mu.Unlock()

		var reapC, retireC <-chan time.Time
		var procDone <-chan struct{}
		var timer *time.Timer
		if proc != nil {
			procDone = proc.Done()
			if t := s.e.opts.IdleTimeout; t > 0 {
				timer = time.NewTimer(max(0, t-s.e.now().Sub(idleAt)))
				reapC = timer.C
			}
		} else if s.e.retireAfter > 0 {
			timer = time.NewTimer(s.e.retireAfter)
			retireC = timer.C
		}
		select {
		case <-s.wake:
		case <-retireC:
			if s.retire() {
				return workItem{}, false
			}
		case c := <-s.ctrl:
			s.idleControl(c)
		case <-reapC:
			s.reap("idle timeout")
		case <-procDone:
			s.log.Warn("Agent process ended while idle; the next message resumes", "session_id", s.sessionID(), "stderr", lastLine(proc.StderrTail()))
			s.closeProc()
		case <-s.e.stopping:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (s *session) loop() {
	defer s.e.wg.Done()
	for {
		it, ok := s.next()
		if !ok {
			s.closeProc()
			s.releaseSession() // a lease recovery took without starting a process
			s.closeInbox()
			return
		}
		switch {
		case it.kind == itemTurn && it.recovered:
			s.recoverTurn(it)
		case it.kind == itemTurn:
			s.runTurn(it)
		case it.kind == itemNew:
			s.doNew()
			s.ack(it, inbox.AckResult)
		case it.kind == itemResume:
			s.doResume(it.resumeID)
			s.ack(it, inbox.AckResult)
		}
		s.e.addBusy(-1)
	}
}

// retire ends an idle session without a process: it leaves the engine's
// map, and the next message creates it again from its stored state.
func (s *session) retire() bool {
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	// A running !sh writes the record when it ends: the session must
	// outlive it, or a new one could load the record before that write.
	if len(s.queue) > 0 || s.proc != nil || s.shell.running() {
		return false
	}
	s.closed = true
	delete(s.e.sessions, s.key)
	s.log.Debug("Session retired after inactivity", "session_id", s.rec.SessionID)
	return true
}

func (s *session) refuseQueued() {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.closed = true
	s.mu.Unlock()
	s.e.noteQueue()
	for _, it := range q {
		switch {
		case it.kind == itemTurn && it.inboxID != "":
			// It stays in the journal; the next start runs it.
			s.sendTo(s.e.bg, s.to, restartQueuedText+quote(it.msg.Text, 80))
		case it.kind == itemTurn:
			s.sendTo(s.e.bg, s.to, "cc-connect is shutting down; this message was not processed. Please send it again later: "+quote(it.msg.Text, 80))
		}
		s.e.addBusy(-1)
	}
}

func (s *session) idleControl(c control) {
	switch c.kind {
	case ctrlAnswer:
		s.sendTo(s.e.bg, c.to, "No permission request is pending.")
	case ctrlStop:
		s.sendTo(s.e.bg, c.to, "Nothing is running.")
	case ctrlReap:
		s.reap("slot needed by another session")
	}
}

// reap closes an idle live process and keeps the session id, so the next
// message resumes.
func (s *session) reap(why string) {
	s.mu.Lock()
	proc, idleAt, rec := s.proc, s.idleAt, s.rec
	s.mu.Unlock()
	if proc == nil {
		return
	}
	s.log.Info("Reaping idle agent process", "reason", why, "session_id", rec.SessionID,
		"idle", s.e.now().Sub(idleAt).Round(time.Millisecond), "context_tokens", rec.ContextTokens)
	s.closeProc()
}

// closeProc closes the live process, if any, and frees its slot.
func (s *session) closeProc() {
	s.mu.Lock()
	proc := s.proc
	s.proc = nil
	s.mu.Unlock()
	if proc == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.e.bg, 2*s.e.opts.ShutdownGrace)
	defer cancel()
	if err := proc.Close(ctx); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Debug("Agent process closed with error", "error", err)
	}
	select {
	case <-proc.Done():
		s.releaseSession()
	default:
		// Close gave up on a process that still runs: keeping the lease
		// (and its pid file) stops another process on its session.
		s.log.Error("Agent process outlived Close; its session stays leased", "session_id", s.sessionID(), "pid", proc.Pid())
	}
	s.e.slots.release(s.ws.Path)
}

// procLive reports whether the session has a live process.
func (s *session) procLive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// idleLiveSince returns when the live process went idle, as a sortable
// number, and false when there is no idle live process.
func (s *session) idleLiveSince() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.state != stateIdle || len(s.queue) > 0 {
		return 0, false
	}
	return s.idleAt.UnixNano(), true
}

func (s *session) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.SessionID
}

// update changes the record under the lock and saves it when changed.
func (s *session) update(f func(r *record)) {
	if s.change(f) {
		s.saveRecord()
	}
}

// change changes the record in memory only, for figures that may reach the
// disk later: the next saveRecord (or update) writes them. What a crash
// must find (the session id, a chosen new session id, a pending
// permission) goes through update.
func (s *session) change(f func(r *record)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	before := s.rec
	f(&s.rec)
	if s.rec == before {
		return false
	}
	s.dirty = true
	return true
}

// saveRecord writes the record when it has unsaved changes. The snapshot
// is taken under saveMu, so two savers cannot leave an older record on
// disk after a newer one.
func (s *session) saveRecord() {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return
	}
	rec := s.rec
	s.dirty = false
	s.mu.Unlock()
	if err := s.e.store.save(rec); err != nil {
		s.mu.Lock()
		s.dirty = true // the next save tries again
		s.mu.Unlock()
		s.log.Error("Saving session state failed", "session_id", rec.SessionID, "error", err)
	}
}

const sendTimeout = 2 * time.Minute

// chat is the adapter the conversation is served through: the one
// registered under its platform's name now, so that once a reload replaced
// it (new credentials, say), a turn that was already running posts its
// reply, prompts and reactions through the new one. A platform removed by
// a reload keeps the adapter the session started with.
func (s *session) chat() platform.Adapter {
	if a, ok := s.e.adapter(s.to.Platform); ok {
		return a
	}
	return s.adapter
}

// send posts text to the conversation.
func (s *session) send(ctx context.Context, text string) platform.Target {
	return s.sendTo(ctx, s.to, text)
}

func (s *session) sendTo(ctx context.Context, to platform.Target, text string) platform.Target {
	to.MessageID = ""
	// Bounded so that an adapter that stopped answering cannot hold a
	// session (and so shutdown) forever; generous for rate-limited splits.
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	posted, err := s.chat().Send(ctx, to, text)
	if err != nil {
		s.e.metrics.PlatformError(to.Platform)
		s.log.Error("Posting to the chat failed", "error", err)
	}
	return posted
}
