package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/platform"
)

// Notices posted when a session cannot continue and a fresh one starts.
const (
	noticeTooLong  = "Session context was too large to resume — starting fresh. Project context is preserved in CLAUDE.md."
	noticeNotFound = "Previous session could not be found — starting fresh."
	noticeWaiting  = "All agent slots are busy — waiting for a free slot."
)

// errStoppedWaiting means !stop came while the turn waited for a process
// slot: the message is dropped and the session kept.
var errStoppedWaiting = errors.New("stopped while waiting for a process slot")

// outcome is how one attempt at a turn ended.
type outcome struct {
	res    *agentproc.Result
	err    error
	text   string // the turn's assistant text (for results without text)
	model  string
	stderr string
	// A !compact turn: what the CLI reported about the compaction.
	compaction bool
	compacted  *agentproc.CompactBoundary
	compactErr string
}

// turn is the state of the running turn, owned by the session goroutine.
type turn struct {
	msg      platform.Message
	text     strings.Builder
	model    string
	perms    []*pendingPerm
	permT    *time.Timer
	progress progress
	started  bool // the CLI began the turn (system/init seen)
	stopped  bool // !stop was asked for
	// compacted and compactErr are what a compaction reported.
	compacted  *agentproc.CompactBoundary
	compactErr string
}

// runTurn runs one user message as a turn, with the fallbacks that keep the
// session usable, and posts the reply.
func (s *session) runTurn(it workItem) {
	s.turnStarted(it.msg)
	began := s.e.turnBegan()
	hadHistory := s.sessionID() != ""
	it, notes, perr := s.prepareTurn(it)
	out := outcome{err: perr}
	if perr == nil {
		out = s.attempt(it)
		s.keepUnsentNotes(notes, out.err)
	}
	ok := s.finish(it, out, hadHistory)
	s.e.turnDone(out, ok, began)
	retry := s.settle(it, out)
	s.mu.Lock()
	s.state = stateIdle
	s.idleAt = s.e.now()
	s.mu.Unlock()
	s.turnEnded(it.msg, ok)
	s.e.slots.signal() // this process may now be reaped for a waiter
	if retry != nil {
		// Before the turns queued behind it, so the order holds.
		s.recoverTurn(*retry)
	}
}

// finish posts what the attempt produced and repairs the session when the
// attempt failed. It reports whether the turn succeeded.
func (s *session) finish(it workItem, out outcome, hadHistory bool) bool {
	var exitErr *agentproc.ExitError
	switch {
	case out.err == nil:
		s.relay(out)
		return succeeded(out)
	case errors.Is(out.err, errStopped) && it.inboxID != "":
		s.send(s.e.bg, restartQueuedText+quote(it.msg.Text, 80))
		return false
	case errors.Is(out.err, errStopped):
		s.send(s.e.bg, shutdownText)
		return false
	case errors.Is(out.err, errNotPassed):
		return false // the user was told why
	case errors.Is(out.err, errStoppedWaiting):
		s.send(s.e.bg, "Stopped before the turn started: the message was dropped. The session is kept.")
		return false
	case errors.Is(out.err, agentproc.ErrSessionNotFound),
		errors.Is(out.err, agentproc.ErrPromptTooLong) && hadHistory:
		return s.fallback(it, out)
	case errors.Is(out.err, agentproc.ErrPromptTooLong):
		// A brand-new session failed on its first message: the message
		// itself does not fit, and resending it would fail the same way.
		s.log.Error("Message too long for a fresh session", "session_id", s.sessionID(), "error", out.err, "cwd", s.ws.Path)
		s.forgetSession()
		s.closeProc()
		s.send(s.e.bg, "This message does not fit in the model's context even in a fresh session"+resultDetail(out)+". Nothing was kept; please send something shorter.")
		return false
	case errors.As(out.err, &exitErr):
		s.log.Error("Agent process exited mid-turn; keeping the session", "session_id", s.sessionID(),
			"exit_code", exitErr.Code, "signal", exitErr.Signal, "stderr", exitErr.StderrTail, "cwd", s.ws.Path)
		s.closeProc()
		s.send(s.e.bg, fmt.Sprintf("The agent process %s: %s\nThe session is kept: your next message resumes it.",
			exitDescription(exitErr), orNone(lastLine(exitErr.StderrTail))))
		return false
	default:
		s.log.Error("Turn failed; keeping the session", "session_id", s.sessionID(), "error", out.err,
			"stderr", out.stderr, "cwd", s.ws.Path)
		s.closeProc()
		s.send(s.e.bg, fmt.Sprintf("The agent failed: %v\nThe session is kept: send your message again to retry.", out.err))
		return false
	}
}

// succeeded reports whether a turn that ended with a result did what was
// asked. A !compact that did not compact (the CLI reports the compaction
// failed, or none at all) still ends with a successful empty result, so the
// result's status alone would mark it done.
func succeeded(out outcome) bool {
	if out.res.IsError {
		return false
	}
	return !out.compaction || out.compacted != nil
}

// fallback handles a session that cannot continue (resume refused, or the
// context too large): it forgets the session id, starts a fresh session and
// resends the user's message once.
func (s *session) fallback(it workItem, out outcome) bool {
	// A fresh session has no cut turn to continue: it gets the message.
	it.continuation = false
	oldID := s.sessionID()
	tooLong := errors.Is(out.err, agentproc.ErrPromptTooLong)
	s.e.metrics.Fallback(fallbackCause(out.err))
	path, size, ferr := s.e.tx.Find(oldID)
	s.log.Error("Agent session cannot continue; starting fresh", "session_id", oldID, "error", out.err,
		"stderr", out.stderr, "cwd", s.ws.Path, "transcript", path, "transcript_size", size, "transcript_lookup_error", errString(ferr))
	s.forgetSession()
	s.closeProc()
	if tooLong {
		s.send(s.e.bg, noticeTooLong)
	} else {
		s.send(s.e.bg, noticeNotFound)
	}

	out2 := s.attempt(it)
	if out2.err == nil {
		s.log.Warn("Started a fresh agent session in place of a failed one", "old_session_id", oldID,
			"session_id", s.sessionID(), "cwd", s.ws.Path)
		s.relay(out2)
		return succeeded(out2)
	}
	s.log.Error("Fresh agent session failed too", "old_session_id", oldID, "error", out2.err,
		"stderr", out2.stderr, "cwd", s.ws.Path)
	if errors.Is(out2.err, agentproc.ErrPromptTooLong) || errors.Is(out2.err, agentproc.ErrSessionNotFound) {
		s.forgetSession()
	}
	s.closeProc()
	reason := out2.err.Error()
	var exitErr *agentproc.ExitError
	if errors.As(out2.err, &exitErr) {
		reason = fmt.Sprintf("the agent process %s: %s", exitDescription(exitErr), orNone(lastLine(exitErr.StderrTail)))
	} else if errors.Is(out2.err, agentproc.ErrPromptTooLong) {
		reason = "this message alone does not fit in the model's context" + resultDetail(out2)
	}
	s.send(s.e.bg, "Starting a fresh session failed too: "+reason+"\nThe session stays usable: your next message tries again.")
	return false
}

// forgetSession clears the stored Claude session id and its figures.
func (s *session) forgetSession() {
	s.update(func(r *record) {
		r.SessionID, r.NewSessionID = "", ""
		r.ContextTokens, r.ContextWindow, r.WindowReported, r.ContextPct = 0, 0, false, 0
		r.SelfPct, r.HasSelfPct = 0, false
	})
}

// ensureProcess makes sure the session has a live process: it takes a slot
// (waiting at the cap) and spawns one, resuming the stored session id.
func (s *session) ensureProcess() error {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if proc != nil {
		select {
		case <-proc.Done():
			s.log.Warn("Agent process had ended; starting it again", "session_id", s.sessionID(), "stderr", lastLine(proc.StderrTail()))
			s.closeProc()
		default:
			return nil
		}
	}
	onCtrl := func(c control) error {
		switch c.kind {
		case ctrlStop:
			return errStoppedWaiting
		case ctrlAnswer:
			s.sendTo(s.e.bg, c.to, "No permission request is pending.")
		}
		return nil // ctrlReap: there is no process to reap
	}
	if err := s.e.acquireSlot(s.e.bg, s.ws.Path, s, func() { s.send(s.e.bg, noticeWaiting) }, s.ctrl, onCtrl); err != nil {
		return err
	}
	id := s.sessionID()
	start := agentproc.StartOptions{Dir: s.ws.Path, ResumeID: id}
	if id == "" {
		start = s.newSessionStart()
	}
	if err := s.claimSession(orDefault(start.ResumeID, start.SessionID)); err != nil {
		s.e.slots.release(s.ws.Path)
		return err
	}
	model := s.e.opts.Agent.Model
	if id != "" {
		path, size, err := s.e.tx.Find(id)
		s.log.Info("Resuming agent session", "session_id", id, "transcript", path, "transcript_size", size,
			"transcript_lookup_error", errString(err))
	}
	s.log.Info("Starting agent process", "cwd", s.ws.Path, "session_id", orDefault(id, "new"), "model", orDefault(model, "default"))
	start.Model, start.PermissionMode = s.spawnSettings() // !model, !mode
	p, err := s.e.spawn(s.e.bg, s.e.opts.Agent, start, s.log)
	if err != nil {
		s.releaseSession()
		s.e.slots.release(s.ws.Path)
		return fmt.Errorf("starting agent in %s: %w", s.ws.Path, err)
	}
	s.markAgent(p.Pid())
	s.mu.Lock()
	s.proc = p
	s.idleAt = s.e.now()
	s.mu.Unlock()
	s.syncControls(p, start.Model, start.PermissionMode)
	return nil
}

// attempt runs the message as one turn of the session's process, serving
// permission prompts, !stop and progress while it runs.
func (s *session) attempt(it workItem) outcome {
	if err := s.ensureProcess(); err != nil {
		return outcome{err: err}
	}
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()

	tr, err := s.sendTurn(proc, it, it.msg.Text)
	if err != nil {
		return outcome{err: err, stderr: proc.StderrTail()}
	}

	t := &turn{msg: it.msg}
	events := tr.Events()
	stopping := s.e.stopping
	var graceC, killC <-chan time.Time
	var closed chan struct{}
	for {
		select {
		case ev, ok := <-events:
			if ok {
				s.onEvent(t, proc, ev)
				continue
			}
			res, err := tr.Result()
			s.endPermissions(t, "the turn ended")
			t.progress.stop()
			if closed != nil {
				<-closed
			}
			out := outcome{res: res, err: err, text: t.text.String(), model: t.model, stderr: proc.StderrTail(),
				compaction: isCompaction(it.msg.Text), compacted: t.compacted, compactErr: t.compactErr}
			if res != nil {
				s.noteResult(res, t.model)
				s.noteContext(res)
			}
			if err == nil && res == nil {
				out.err = errors.New("turn ended without a result")
			}
			return out
		case c := <-s.ctrl:
			s.turnControl(t, proc, c)
		case <-timerC(t.permT):
			s.permissionTimeout(t, proc)
			s.notePermissions(t)
		case <-timerC(t.progress.timer):
			s.flushProgress(t)
		case <-stopping:
			stopping = nil
			graceC = time.After(s.e.opts.ShutdownGrace)
		case <-graceC:
			graceC = nil
			s.log.Warn("Shutdown grace over; interrupting the running turn", "session_id", s.sessionID())
			s.interrupt(proc)
			killC = time.After(s.e.opts.ShutdownGrace)
		case <-killC:
			killC = nil
			s.log.Warn("Turn did not end after the interrupt; closing the agent process", "session_id", s.sessionID())
			closed = make(chan struct{})
			go func() {
				defer close(closed)
				_ = proc.Close(s.e.bg)
			}()
		}
	}
}

// controlTimeout bounds a control request to the CLI, so a wedged process
// cannot stall its session.
const controlTimeout = 10 * time.Second

func (s *session) interrupt(proc agentProcess) error {
	ctx, cancel := context.WithTimeout(s.e.bg, controlTimeout)
	defer cancel()
	err := proc.Interrupt(ctx)
	if err != nil {
		s.log.Warn("Interrupting the agent failed", "session_id", s.sessionID(), "error", err)
	}
	return err
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func (s *session) onEvent(t *turn, proc agentProcess, ev agentproc.Event) {
	switch ev := ev.(type) {
	case agentproc.Init:
		t.started = true
		t.model = ev.Model
		if t.stopped {
			// An interrupt that reaches the CLI before it starts the
			// turn is a no-op there, so a !stop that came that early is
			// sent now.
			s.interrupt(proc)
		}
		if ev.SessionID != "" {
			s.update(func(r *record) {
				r.SessionID, r.NewSessionID = ev.SessionID, ""
				if ev.Model != "" {
					r.Model = ev.Model
				}
			})
		}
	case agentproc.AssistantText:
		if ev.Synthetic || strings.TrimSpace(ev.Text) == "" {
			return
		}
		if t.text.Len() > 0 {
			t.text.WriteString("\n\n")
		}
		t.text.WriteString(ev.Text)
	case agentproc.ToolUse:
		s.showProgress(t, "Running: "+toolSummary(ev.Name, ev.Input))
	case agentproc.Compaction:
		if ev.Active {
			s.showProgress(t, "Compacting the conversation…")
		} else if ev.Result == "failed" {
			t.compactErr = orDefault(ev.Error, "failed")
		}
	case agentproc.CompactBoundary:
		t.compacted = &ev
	case agentproc.APIRetry:
		s.showProgress(t, fmt.Sprintf("API error %d, retrying (%d/%d)…", ev.ErrorStatus, ev.Attempt, ev.MaxRetries))
	case agentproc.PermissionRequest:
		s.askPermission(t, ev)
		s.notePermissions(t)
	case agentproc.PermissionCancel:
		s.cancelPermission(t, ev.RequestID)
		s.notePermissions(t)
	case agentproc.Malformed:
		s.log.Warn("Agent wrote a malformed line", "line", ev.Line, "error", ev.Err)
	}
}

func (s *session) turnControl(t *turn, proc agentProcess, c control) {
	switch c.kind {
	case ctrlAnswer:
		s.answerPermission(t, proc, c)
		s.notePermissions(t)
	case ctrlStop:
		t.stopped = true
		if t.started {
			if err := s.interrupt(proc); err != nil {
				s.sendTo(s.e.bg, c.to, "Could not stop the turn: "+err.Error())
				return
			}
		}
		s.mu.Lock()
		n := len(s.queue)
		s.mu.Unlock()
		msg := "Stopping the current turn. The session is kept."
		switch n {
		case 0:
			msg += " Nothing else is queued."
		case 1:
			msg += " 1 queued message stays queued and runs next."
		default:
			msg += fmt.Sprintf(" %d queued messages stay queued and run next.", n)
		}
		s.sendTo(s.e.bg, c.to, msg)
	case ctrlReap:
		// busy: not idle, nothing to reap
	}
}
