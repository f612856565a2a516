package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Durability of accepted messages. A user message that passes the access
// checks is appended to its session's inbox journal (fsynced) before
// HandleMessage returns, so before the platform event is acknowledged and
// before the user is told it is queued. It leaves the journal only when its
// turn reaches a durable end: a result (or a failure the user was told
// about), or an explicit cancel. Whatever is left when cc-connect dies is
// replayed, in order, by the next start (recovery.go).
//
// What is journaled: user turns (!compact too, which is one), and !new and
// !resume, which wait in the FIFO between turns: after a crash the turns
// queued behind them still run in the session they chose. Other commands
// act at once and are not journaled.

// Texts of the durable path.
const (
	inboxFullText = "This conversation already has %d messages waiting: this message was not accepted. " +
		"Please send it again once the current turn is done."
	inboxWriteText = "This message could not be saved (%v), so it was not accepted. Please send it again."
	// restartQueuedText: queued work stays in the journal on shutdown.
	restartQueuedText = "cc-connect is restarting; this message stays queued and runs when it is back: "
)

// inboxPath is the journal of a session key: one file per conversation,
// named like its state file.
func (e *Engine) inboxPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(e.opts.StateDir, "inbox", hex.EncodeToString(sum[:16])+".jsonl")
}

// inboxLimits: QueueLimit messages may wait behind the running one, as in
// the FIFO.
func (e *Engine) inboxLimits() inbox.Limits {
	return inbox.Limits{MaxPending: e.opts.QueueLimit + 1}
}

// seenKey is the platform's identity of a message, for redelivery checks.
func seenKey(m platform.Message) string {
	if m.ID == "" {
		return ""
	}
	return m.Target.Platform + "\x00" + m.ID
}

// seenIDs opens the seen message ids on first use: the compacted ids of
// seen.jsonl and those of every journal, which it opens once (compacting
// those with nothing pending) so that a message accepted before a restart
// is known before the first new one is checked. The journals that hold
// pending messages are kept for recovery (pendingJournals). When the set
// cannot be opened, redeliveries are still caught in memory for this run,
// and the failure is logged once.
func (e *Engine) seenIDs() *inbox.Seen {
	e.seenOnce.Do(func() {
		dir := filepath.Join(e.opts.StateDir, "inbox")
		path := filepath.Join(dir, "seen.jsonl")
		s, err := inbox.OpenSeen(path, e.opts.SeenWindow, e.now)
		if err != nil {
			e.log.Error("Seen message ids unreadable; redeliveries across restarts are caught only while their journal holds them", "path", path, "error", err)
			s, err = inbox.OpenSeen(filepath.Join(e.opts.StateDir, "inbox", "seen.unreadable-"+uuid.NewString()+".jsonl"), e.opts.SeenWindow, e.now)
			if err != nil {
				return
			}
		}
		e.seenSet = s
		e.pendingJournals = e.scanJournals(dir, s)
	})
	return e.seenSet
}

// seenClaim takes the claim on m's id (inbox.Seen.Claim), the one
// duplicate check; nil claim and nil error for a message without an id.
func (e *Engine) seenClaim(ctx context.Context, m platform.Message) (*inbox.Claim, error) {
	s := e.seenIDs()
	if m.ID == "" || s == nil {
		return nil, nil
	}
	return s.Claim(ctx, inbox.SeenKey(m.Target.Platform, m.ID))
}

// markSeen journals the id of m, accepted without an entry (a command that
// acts at once), so that a redelivery of it is not run again.
func (s *session) markSeen(m platform.Message) {
	in := s.journalFile()
	if m.ID == "" || in == nil {
		return
	}
	if err := in.MarkSeen(m.Target.Platform, m.ID, s.e.now()); err != nil {
		s.log.Warn("Remembering a message id failed", "message_id", m.ID, "error", err)
	}
}

// openInboxLocked opens the session's journal (s.mu held, or s not yet
// shared) and returns the pending entries as FIFO items. A journal that
// cannot be read leaves the session failed closed (inboxErr set): it
// refuses new input and the file stays for an admin to inspect.
func (s *session) openInboxLocked() []workItem {
	if s.inbox != nil {
		return nil
	}
	in, err := inbox.Open(s.e.inboxPath(s.key), s.e.inboxLimits(), s.e.seenIDs())
	if err != nil {
		s.inboxErr = err
		return nil
	}
	s.inbox, s.inboxErr = in, nil
	pending := in.Pending()
	items := make([]workItem, 0, len(pending))
	for i, en := range pending {
		it := workItem{kind: itemTurn, msg: entryMessage(en), files: en.Attachments, inboxID: en.ID, uuid: en.UUID, started: en.Started}
		switch {
		case en.Kind == kindNew:
			it.kind = itemNew
		case strings.HasPrefix(en.Kind, kindResume):
			it.kind, it.resumeID = itemResume, strings.TrimPrefix(en.Kind, kindResume)
		case en.Kind != "":
			// Written by a newer cc-connect: keep it for that one.
			s.log.Warn("Inbox entry of an unknown kind skipped", "kind", en.Kind, "message_id", en.ID)
			continue
		}
		it.recovered = i == 0 && it.kind == itemTurn
		items = append(items, it)
	}
	return items
}

// Entry kinds of the FIFO items other than turns; resume carries the
// session id after the colon.
const (
	kindNew    = "new"
	kindResume = "resume:"
)

// journaled reports whether a FIFO item goes through the inbox.
func journaled(k itemKind) bool { return k == itemTurn || k == itemNew || k == itemResume }

// entryKind is the inbox kind of an item.
func entryKind(it workItem) string {
	switch it.kind {
	case itemNew:
		return kindNew
	case itemResume:
		return kindResume + it.resumeID
	}
	return ""
}

// entryMessage rebuilds the message a journal entry was made from.
func entryMessage(en inbox.Entry) platform.Message {
	to := platform.Target{Platform: en.Platform, Channel: en.Channel, Thread: en.Thread, MessageID: en.MessageID}
	return platform.Message{ID: en.ID, Target: to, UserID: en.UserID, UserName: en.UserName, Text: en.Text, Received: en.Received}
}

// failClosedText tells the user (and the admins, named) why this
// conversation refuses new input.
func (s *session) failClosedText(err error) string {
	// Everyone allowed in the thread reads this: name the file relative to
	// the state dir and leave host paths and error details to the log.
	why := "could not be read"
	if errors.Is(err, inbox.ErrTooLarge) {
		why = "is over its size limit"
	}
	name := s.e.inboxPath(s.key)
	if rel, rerr := filepath.Rel(s.e.opts.StateDir, name); rerr == nil {
		name = rel
	}
	var b strings.Builder
	fmt.Fprintf(&b, "This conversation's message journal %s, so new messages are refused until an admin inspects it (%s in the state dir; the log has the details). ", why, name)
	b.WriteString("The file is kept as it is; moving it aside lets the conversation continue.")
	if len(s.binding.Admins) > 0 {
		fmt.Fprintf(&b, " Admins: %s.", strings.Join(s.binding.Admins, ", "))
	}
	return b.String()
}

// journalLocked appends a FIFO item to the inbox (s.mu held). It returns the
// entry id, or the text to tell the user when the message is not accepted.
// A duplicate (the same platform message already pending) is accepted as
// that message: dup is true and nothing is queued again.
//
// When the journal had failed and now opens (an admin fixed it), the
// entries it holds come back as reloaded, to be queued before m.
func (s *session) journalLocked(it workItem) (id, u string, dup bool, refusal string, reloaded []workItem) {
	m := it.msg
	if s.inbox == nil {
		reloaded = s.openInboxLocked() // retry: an admin may have moved a bad file aside
		if s.inbox == nil {
			s.log.Error("Message refused: the inbox journal is unreadable", "path", s.e.inboxPath(s.key), "error", s.inboxErr,
				"admins", s.binding.Admins)
			return "", "", false, s.failClosedText(s.inboxErr), nil
		}
	}
	id = m.ID
	if id == "" {
		// This platform cannot redeliver; any stable unique id will do.
		id = "local-" + uuid.NewString()
	}
	u = uuid.NewString()
	err := s.inbox.Append(inbox.Entry{ID: id, Platform: m.Target.Platform, Channel: m.Target.Channel,
		Thread: m.Target.Thread, MessageID: m.Target.MessageID, UserID: m.UserID, UserName: m.UserName,
		Text: m.Text, Received: m.Received, Accepted: s.e.now(), UUID: u, Kind: entryKind(it), Attachments: it.files})
	switch {
	case err == nil:
		return id, u, false, "", reloaded
	case errors.Is(err, inbox.ErrDuplicate):
		return id, "", true, "", reloaded
	case errors.Is(err, inbox.ErrFull):
		s.log.Warn("Inbox full; message refused", "pending", s.inbox.Len(), "error", err)
		return "", "", false, fmt.Sprintf(inboxFullText, s.inbox.Len()), reloaded
	default:
		s.log.Error("Journaling a message failed; message refused", "error", err)
		return "", "", false, fmt.Sprintf(inboxWriteText, err), reloaded
	}
}

// markStarted records, before the message is written to claude, that it
// is sent with the uuid it was accepted with: after a crash the transcript
// then tells whether the CLI had it.
func (s *session) markStarted(it workItem) error {
	in := s.journalFile()
	if it.inboxID == "" || in == nil {
		return nil
	}
	if err := in.MarkStarted(it.inboxID); err != nil {
		return fmt.Errorf("journaling the start of the turn: %w", err)
	}
	return nil
}

// ack removes a message whose turn reached a durable end.
func (s *session) ack(it workItem, why inbox.AckReason) {
	in := s.journalFile()
	if it.inboxID == "" || in == nil {
		return
	}
	if err := in.Ack(it.inboxID, why); err != nil {
		s.log.Error("Acknowledging a message in the inbox failed; it may run again after a restart",
			"message_id", it.inboxID, "error", err)
	}
}

// journalFile is the open journal, or nil.
func (s *session) journalFile() *inbox.Inbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inbox
}

// closeInbox closes the journal; what is pending stays on disk.
func (s *session) closeInbox() {
	s.mu.Lock()
	in := s.inbox
	s.inbox = nil
	s.mu.Unlock()
	if in != nil {
		if err := in.Close(); err != nil {
			s.log.Warn("Closing the inbox failed", "error", err)
		}
	}
}

// sendTurn starts one turn of it on proc, carrying the uuid it was
// accepted with; its start is journaled first, so that after a crash the
// transcript tells whether the CLI had the message. A continuation
// (recovery resuming a cut turn) sends continueText under a fresh uuid and
// keeps the message's, which is what the transcript holds.
func (s *session) sendTurn(proc agentProcess, it workItem, text string) (agentTurn, error) {
	id := it.uuid
	if id == "" || it.continuation {
		id = uuid.NewString()
	}
	if it.continuation {
		text = continueText
	}
	if !it.continuation {
		if err := s.markStarted(it); err != nil {
			// Sending now could not be told apart from not sending
			// after a crash; refuse the turn instead.
			return nil, err
		}
	}
	return proc.StartTurn(s.e.bg, agentproc.UserMessage{UUID: id, Text: text})
}

// settle acknowledges the message of a finished turn, or leaves it pending
// when the turn did not reach a durable end:
//   - cc-connect is shutting down (the turn never started, or its process
//     was closed before a result): the next start runs or resumes it;
//   - the agent process died mid-turn: the returned item recovers it now,
//     once, as a restart would (resume the cut turn, or send the message
//     the CLI never got), before the turns queued behind it.
//
// A result, a !stop before the start, and a failure the user was told
// about (also a second death of the agent) acknowledge it.
//
// The record is saved first, once, with what the turn changed (its figures
// were kept in memory so that the reply went out without waiting on the
// disk), and before the ack: a crash in between leaves the message pending,
// and recovery reads the transcript, not the record, to tell what became of
// it.
func (s *session) settle(it workItem, out outcome) (retry *workItem) {
	s.change(func(r *record) { r.PendingPermission = "" })
	s.saveRecord()
	var exitErr *agentproc.ExitError
	switch {
	case errors.Is(out.err, errStopped):
		return nil
	case out.res == nil && out.err != nil && s.e.isStopping():
		s.log.Info("Turn cut by shutdown; its message stays in the inbox for the next start", "session_id", s.sessionID())
		return nil
	case out.res == nil && errors.As(out.err, &exitErr) && !it.afterCrash && it.inboxID != "":
		r := it
		r.afterCrash, r.continuation, r.started = true, false, s.wasStarted(it.inboxID)
		return &r
	case errors.Is(out.err, errStoppedWaiting):
		s.ack(it, inbox.AckCancel)
	default:
		s.ack(it, inbox.AckResult)
	}
	return nil
}

// wasStarted reports whether the pending message id was sent to claude.
func (s *session) wasStarted(id string) bool {
	in := s.journalFile()
	if in == nil {
		return false
	}
	for _, en := range in.Pending() {
		if en.ID == id {
			return en.Started
		}
	}
	return false
}

// newSessionStart chooses the id of a new Claude session and records it
// before the process starts (--session-id), so that a crash before the CLI
// confirms it still leaves the transcript findable. When the CLI had
// already created that session, it is resumed instead.
func (s *session) newSessionStart() agentproc.StartOptions {
	s.mu.Lock()
	pre := s.rec.NewSessionID
	s.mu.Unlock()
	if pre != "" {
		if _, _, err := s.e.tx.Find(pre); err == nil {
			s.update(func(r *record) { r.SessionID, r.NewSessionID = pre, "" })
			return agentproc.StartOptions{Dir: s.ws.Path, ResumeID: pre}
		}
	} else {
		pre = uuid.NewString()
		s.update(func(r *record) { r.NewSessionID = pre })
	}
	return agentproc.StartOptions{Dir: s.ws.Path, SessionID: pre}
}

// notePermissions records which permission request the turn waits on, so
// that a restart can tell the thread it was cancelled.
func (s *session) notePermissions(t *turn) {
	name := ""
	if len(t.perms) > 0 {
		p := t.perms[0].req
		name = toolSummary(p.ToolName, p.Input)
	}
	s.update(func(r *record) { r.PendingPermission = name })
}
