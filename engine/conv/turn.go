package conv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// errStoppedWaiting means !stop came while the turn waited for a process
// slot: the message is dropped and the session kept.
var errStoppedWaiting = errors.New("stopped while waiting for a process slot")

// controlTimeout bounds a control request to the CLI, so a wedged process
// cannot stall its session.
const controlTimeout = 10 * time.Second

// turnRunner runs a conversation's messages as turns of its claude, on the
// session goroutine: it readies the prompt (attach.go), gets a process
// (agentSlot, within the caps), marks the start in the journal, reads the
// turn's events in one select loop with the controls that reach a running
// turn (permission answers, !stop; others go back to the session through
// other), and decides what the end means: the reply (reply.go), a fresh
// session in place of one that cannot continue, a second try after the
// agent died, or what a restart found (recovery.go). What it may touch:
// the parts below and the engine-wide caps, spawner and transcripts.
type turnRunner struct {
	e     *Set
	key   string
	ws    string
	log   *slog.Logger
	jr    *journal
	mb    *mailbox
	rb    *recordBook
	agent *procs.Slot
	chat  *relay
	// other handles the controls that are not the turn's: notices to
	// post, commands that act at once. stopShell stops the session's
	// running !sh for a !stop, saying so (false: none ran).
	other     func(control)
	stopShell func(to platform.Target) bool
	// lateReply takes a thread reply whose question or plan was settled
	// before it was read: it runs as a turn (session.replyAsTurn).
	lateReply func(control)
	// check reads back what the waiting item needs before it runs or is
	// steered into the running turn (session.check, checks.go).
	check func(workItem)
	// binding is the conversation's binding in force now
	// (session.liveBinding): who may still have a queued message run.
	binding func() binding.Binding
	// att readies a message's prompt and its files (attach.go).
	att *attacher
	// team is the team features on the turn's path (teamturn.go).
	team *team
	// purse is the conversation's side of the spending ledger: the
	// running turn's reservation and results (spend.go).
	purse *purse
	// tail runs an acknowledged turn's writes after its reply (tail.go).
	tail *tail
	// act publishes the turn's activity (activity.go).
	act feed
	// awaitText is set while the turn waits on a question or a plan's
	// feedback: a plain reply in the thread then answers it.
	awaitText *atomic.Bool
	// dm: the conversation is a direct message (the sender header is off
	// there by default).
	dm bool
	// limit is the conversation's side of the login's usage window
	// (limits.go).
	limit *limitGate
	// ho hands what a stopping cluster host cannot finish to the
	// binding's next holder (handover.go).
	ho handover
	// rep replicates the conversation's context after each turn it
	// answers, in a cluster that keeps it (context.go); nil otherwise.
	rep *replica
	// restoring is another host's newer context of the conversation,
	// taken over (Stream.Restore) and not placed yet: the conversation's
	// goroutine places it once no turn runs and the process holding the
	// older context has exited (placeRestored, context.go).
	restoring *Context
	// ck is what the turns changed: the summary, !diff, !revert
	// (checkpoint.go).
	ck *checkpoints
	// shared keeps the requests the turn waits on in the cluster, for
	// the binding's next holder (approvals.go); nil otherwise.
	shared *sharedApprovals
}

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
	// live is what the turn showed as it went: the streamed reply that
	// the final text replaces.
	live *live
	// steered are the messages written into the turn (steer.go),
	// acknowledged with it.
	steered []workItem
	// uuid is the user message the CLI got (what a rewind goes back to).
	uuid string
}

// turn is the state of the running turn.
type turn struct {
	msg     platform.Message
	text    strings.Builder
	model   string
	perms   *permissions
	live    *live // what the turn shows as it goes (live.go)
	started bool  // the CLI began the turn (system/init seen)
	stopped bool  // !stop was asked for
	// handedOver: the shutdown grace cut it on a cluster host, and the
	// binding's next holder runs it (handover.go).
	handedOver bool
	// compacted and compactErr are what a compaction reported.
	compacted  *agentproc.CompactBoundary
	compactErr string
	// steered are the messages written into the turn (steer.go), and
	// takenIn the uuids of those the CLI said it took into it.
	steered []workItem
	takenIn map[string]bool
}

// run runs one user message as a turn, with the fallbacks that keep the
// session usable, and posts the reply.
func (tr *turnRunner) run(it workItem) {
	if !adoptWait(tr, &it) { // approvals.go: what it waited on at the binding's host before
		return
	}
	if it.refused {
		// Refused for a usage limit (limits.go): it goes again under a
		// fresh uuid, the one its reply is keyed by and the journal's
		// start record carries from now on, so that after a kill the
		// transcript is asked about this sending, not the refused one.
		it.parkedAs, it.uuid, it.refused = it.uuid, newUUID(), false
	}
	if !tr.admit(&it) { // trigger.go: a run's header, the caps, the worktree
		return
	}
	tr.chat.turnStarted(it.msg)
	tr.e.metrics.TurnStarted()
	began := time.Now()
	it.msg.UserName = tr.chat.userName(it.msg) // read here, never on the accept path
	tr.act.record(activity.Event{Kind: activity.Started, User: it.msg.UserID, UserName: it.msg.UserName})
	tr.rb.noteSpeaker(it.msg)
	hadHistory := tr.rb.sessionID() != ""
	it, notes, perr := tr.att.prepare(it)
	out := outcome{err: perr}
	if perr == nil {
		out = tr.attempt(it)
		tr.keepUnsentNotes(notes, out.err)
	}
	ok := tr.finish(it, out, hadHistory)
	if out.err == nil {
		tr.limit.ok()
	}
	if out.res != nil && !errors.Is(out.err, agentproc.ErrUsageLimit) {
		tr.e.limits.unpark(it.uuid) // it ran
	}
	tr.e.metrics.TurnFinished(turnOutcome(out, ok), time.Since(began))
	tr.act.record(activity.Event{Kind: activity.Finished, User: it.msg.UserID, UserName: it.msg.UserName, Outcome: turnOutcome(out, ok)})
	if perr == nil && !errors.Is(out.err, ErrStopped) && !errors.Is(out.err, ErrKilled) {
		tr.team.ringIfLong(it.msg, time.Since(began), ok)
	}
	if tr.e.killedAt(PointReplied) {
		out = outcome{err: ErrKilled}
	}
	retry, durable := tr.settle(it, out)
	tr.mb.setState(stateIdle)
	tr.agent.MarkIdle()
	tr.e.slots.Signal() // this process may now be reaped for a waiter
	cfg, partial := tr.e.cfg.agentConfig(tr.binding(), tr.dm), wantsPartial(tr.binding(), tr.chat.caps())
	wrapUp := func() {
		tr.chat.turnEnded(it.msg, ok)
		tr.e.spare.Want(tr.ws, cfg, partial) // after the turn, never on its path
		if tr.e.spare.On() {
			tr.e.warmth.note(tr.binding(), tr.e.now()) // what a restart starts spares for
		}
	}
	if durable != nil {
		// The reaction's swap and a spare's start go after the tail's
		// fsyncs, as they went after the settle's: a message sent right
		// after the reply is accepted (and acknowledged) before them,
		// instead of sharing the CPU with two API calls and a spawn.
		tr.tail.run(func() {
			durable()
			wrapUp()
		})
	} else {
		wrapUp()
	}
	if retry != nil {
		// Before the turns queued behind it, so the order holds.
		tr.recover(*retry)
	}
}

// keepUnsentNotes puts the shell notes back when the turn ended before the
// message reached Claude, so they go with the next one.
func (tr *turnRunner) keepUnsentNotes(notes string, err error) {
	if errors.Is(err, errStoppedWaiting) || errors.Is(err, ErrStopped) {
		tr.rb.putBackShellNotes(notes)
	}
}

// finish posts what the attempt produced and repairs the session when the
// attempt failed. It reports whether the turn succeeded.
func (tr *turnRunner) finish(it workItem, out outcome, hadHistory bool) bool {
	var exitErr *agentproc.ExitError
	switch {
	case out.err == nil:
		tr.postReply(it, out)
		return succeeded(out)
	case errors.Is(out.err, ErrKilled):
		return false // a test's kill: nothing more happens
	case errors.Is(out.err, errFenced), errors.Is(out.err, errHandedOver):
		return false // the binding's next holder runs it (cluster.go, handover.go)
	case errors.Is(out.err, ErrStopped) && tr.ho.takes(it):
		return false // the binding's next holder runs it, and says so once
	case errors.Is(out.err, errParked):
		tr.chat.send(render.ParkedAtShutdown)
		return false
	case errors.Is(out.err, ErrStopped) && it.inboxID != "":
		tr.chat.send(render.RestartQueuedText + Quote(it.msg.Text, 80))
		return false
	case errors.Is(out.err, ErrStopped):
		tr.chat.send(render.ShutdownText)
		return false
	case errors.Is(out.err, agentproc.ErrUsageLimit):
		// Not a failure to post: the message waits in the journal for
		// the window's reset and runs by itself then (settle), the thread
		// told when (limitGate.hold). The CLI exits after a refusal.
		tr.limit.refused(out.err)
		tr.agent.Close()
		return false
	case errors.Is(out.err, errNotPassed):
		return false // the user was told why
	case errors.Is(out.err, errStoppedWaiting):
		tr.chat.send("Stopped before the turn started: the message was dropped. The session is kept.")
		return false
	case errors.Is(out.err, agentproc.ErrSessionNotFound),
		errors.Is(out.err, agentproc.ErrPromptTooLong) && hadHistory:
		return tr.fallback(it, out)
	case errors.Is(out.err, agentproc.ErrPromptTooLong):
		// A brand-new session failed on its first message: the message
		// itself does not fit, and resending it would fail the same way.
		tr.log.Error("Message too long for a fresh session", "session_id", tr.rb.sessionID(), "error", out.err)
		tr.rb.forget()
		tr.agent.Close()
		tr.chat.send("This message does not fit in the model's context even in a fresh session" + resultDetail(out) + ". Nothing was kept; please send something shorter.")
		return false
	case errors.As(out.err, &exitErr):
		tr.log.Error("Agent process exited mid-turn; keeping the session", "session_id", tr.rb.sessionID(),
			"exit_code", exitErr.Code, "signal", exitErr.Signal, "stderr", exitErr.StderrTail)
		tr.agent.Close()
		tr.chat.send(fmt.Sprintf("The agent process %s: %s\nThe session is kept: your next message resumes it.",
			exitDescription(exitErr), orNone(tr.forChat(lastLine(exitErr.StderrTail)))))
		return false
	default:
		tr.log.Error("Turn failed; keeping the session", "session_id", tr.rb.sessionID(), "error", out.err,
			"stderr", out.stderr)
		tr.agent.Close()
		tr.chat.send(fmt.Sprintf("The agent failed: %s\nThe session is kept: send your message again to retry.", tr.forChat(out.err.Error())))
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
func (tr *turnRunner) fallback(it workItem, out outcome) bool {
	// A fresh session has no cut turn to continue: it gets the message.
	it.continuation = false
	oldID := tr.rb.sessionID()
	tooLong := errors.Is(out.err, agentproc.ErrPromptTooLong)
	tr.e.metrics.Fallback(fallbackCause(out.err))
	path, size, ferr := tr.e.host.Transcripts().Find(oldID)
	tr.log.Error("Agent session cannot continue; starting fresh", "session_id", oldID, "error", out.err,
		"stderr", out.stderr, "transcript", path, "transcript_size", size, "transcript_lookup_error", errString(ferr))
	tr.rb.forget()
	tr.agent.Close()
	if tooLong {
		tr.chat.send(render.NoticeTooLong)
	} else {
		tr.chat.send(render.NoticeNotFound)
	}

	out2 := tr.attempt(it)
	if out2.err == nil {
		tr.log.Warn("Started a fresh agent session in place of a failed one", "old_session_id", oldID,
			"session_id", tr.rb.sessionID())
		tr.postReply(it, out2)
		return succeeded(out2)
	}
	tr.log.Error("Fresh agent session failed too", "old_session_id", oldID, "error", out2.err, "stderr", out2.stderr)
	if errors.Is(out2.err, agentproc.ErrPromptTooLong) || errors.Is(out2.err, agentproc.ErrSessionNotFound) {
		tr.rb.forget()
	}
	tr.agent.Close()
	reason := tr.forChat(out2.err.Error())
	var exitErr *agentproc.ExitError
	if errors.As(out2.err, &exitErr) {
		reason = fmt.Sprintf("the agent process %s: %s", exitDescription(exitErr), orNone(tr.forChat(lastLine(exitErr.StderrTail))))
	} else if errors.Is(out2.err, agentproc.ErrPromptTooLong) {
		reason = "this message alone does not fit in the model's context" + resultDetail(out2)
	}
	tr.chat.send("Starting a fresh session failed too: " + reason + "\nThe session stays usable: your next message tries again.")
	return false
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
// The record is saved once, with what the turn changed (its figures were
// kept in memory so that the reply went out without waiting on the disk).
// An acknowledged turn's ack is written here, before the session goes on,
// so that a kill from then on finds the message done; the record's save,
// the ledger's write and the journal's fsync are the turn's tail, which
// runs off the session goroutine (tail.go): settle returns it as durable,
// for run to start with the turn's wrap-up. A kill before the tail ends
// costs the record the turn's figures (context, cost, last activity) until
// the next result, and never a message. A turn left pending saves here.
func (tr *turnRunner) settle(it workItem, out outcome) (retry *workItem, durable func()) {
	if !errors.Is(out.err, errParked) {
		tr.rb.change(func(r *Record) { r.PendingPermission, r.Parked = "", "" })
	}
	tr.purse.settleTurn() // spend.go: in memory, so the next turn's caps count it
	var exitErr *agentproc.ExitError
	why := inbox.AckResult
	switch {
	case errors.Is(out.err, errHandedOver), errors.Is(out.err, ErrStopped) && tr.ho.takes(it):
		// Steered messages stay in the journal, marked (steer.go): the
		// next start looks each up in the transcript.
		tr.ho.leave(it, out.err.Error())
		tr.saveNow()
		return nil, nil
	case errors.Is(out.err, ErrStopped), errors.Is(out.err, ErrKilled), errors.Is(out.err, errParked):
		tr.saveNow()
		return nil, nil
	case out.res == nil && out.err != nil && tr.e.isStopping():
		tr.saveNow()
		tr.log.Info("Turn cut by shutdown; its message stays in the inbox for the next start", "session_id", tr.rb.sessionID())
		return nil, nil
	case out.res == nil && errors.As(out.err, &exitErr) && !it.afterCrash && it.inboxID != "":
		tr.saveNow()
		r := it
		en, _ := tr.jr.pending(it.inboxID)
		r.afterCrash, r.continuation, r.started = true, false, en.Started
		steeringOf(tr).requeueSteered(out.steered) // after the retry: looked up in the transcript then
		return &r, nil
	case errors.Is(out.err, agentproc.ErrUsageLimit) && it.inboxID != "" && !tr.e.isStopping():
		// Parked: pending in the journal, back in the FIFO before the
		// turns queued behind it, where the window holds it until the
		// reset (a restart finds it pending and the window on disk).
		tr.saveNow()
		tr.e.limits.park(it.uuid)
		r := it
		r.afterCrash, r.continuation, r.recovered, r.refused = false, false, false, true
		tr.mb.push(r)
		return nil, nil
	case errors.Is(out.err, agentproc.ErrUsageLimit) && it.inboxID != "":
		tr.saveNow()
		tr.e.limits.park(it.uuid)
		return nil, nil
	case errors.Is(out.err, errStoppedWaiting):
		why = inbox.AckCancel
	}
	tr.shared.clear() // its durable end: what it waited on is answered (approvals.go)
	// The ack is written here, before the next item runs: a kill after
	// the next turn's start must find this message done, not pending
	// beside it. Its fsync and the rest wait for the tail.
	var fins []func()
	if out.res != nil {
		fins = steeringOf(tr).ackSteered(out.steered, why)
	} else {
		// No result: whether the CLI had them, the transcript says.
		steeringOf(tr).requeueSteered(out.steered)
	}
	fins = append(fins, tr.jr.ackLater(it, why))
	finish := func() {
		for _, f := range fins {
			f()
		}
	}
	return nil, func() {
		// A message of this conversation being accepted goes first (the
		// lock is a barrier here, nothing is guarded): its fsync is what
		// its platform's ack waits for.
		tr.jr.acceptMu.Lock()
		tr.jr.acceptMu.Unlock()
		tr.rb.save()
		tr.purse.flush(tr.log)
		finish()
	}
}

// saveNow saves the record and the ledger on the session goroutine, after
// the last tail.
func (tr *turnRunner) saveNow() {
	tr.tail.wait()
	tr.rb.save()
	tr.purse.flush(tr.log)
}

// ensureProcess makes sure the session has a live process: it takes a slot
// (waiting at the cap) and starts one, resuming the stored session id.
func (tr *turnRunner) ensureProcess() error {
	if proc := tr.agent.Live(); proc != nil {
		select {
		case <-proc.Done():
			tr.log.Warn("Agent process had ended; starting it again", "session_id", tr.rb.sessionID(), "stderr", lastLine(proc.StderrTail()))
			tr.agent.Close()
		default:
			return nil
		}
	}
	onCtrl := func(c control) error {
		switch c.kind {
		case ctrlStop:
			tr.stopShell(c.to)
			return errStoppedWaiting
		case ctrlAnswer:
			if !heldForAdoption(tr.e, tr.key, c) {
				tr.chat.sendTo(c.to, render.NoPermissionPending)
			}
		case ctrlReply:
			tr.lateReply(c)
		case ctrlReap:
			// there is no process to reap
		case ctrlFence:
			return errFenced
		default:
			tr.other(c)
		}
		return nil
	}
	b := tr.binding()
	cfg := tr.e.cfg.agentConfig(b, tr.dm)
	partial := wantsPartial(tr.binding(), tr.chat.caps())
	if tr.takeSpare(b, cfg, partial) {
		return nil
	}
	if err := tr.e.acquireSlotCap(tr.e.bg, tr.ws, tr.e.cfg.wsCapFor(b), tr.key, func() { tr.chat.send(render.NoticeWaiting) }, tr.mb, onCtrl); err != nil {
		return err
	}
	id := tr.rb.sessionID()
	start := agentproc.StartOptions{Dir: tr.ws, ResumeID: id}
	if id == "" {
		start = tr.newSessionStart()
	}
	if id != "" {
		path, size, err := tr.e.host.Transcripts().Find(id)
		tr.log.Info("Resuming agent session", "session_id", id, "transcript", path, "transcript_size", size,
			"transcript_lookup_error", errString(err))
	}
	start.Model, start.PermissionMode = tr.rb.spawnSettings() // !model, !mode
	start.PartialMessages = partial
	start.Tools = tr.team.hostTools(b)
	attrs := []any{"session_id", orDefault(id, "new"), "model", orDefault(orDefault(start.Model, cfg.Model), "default")}
	if wt := tr.rb.get().Worktree; wt != "" {
		// The session's workspace key names the binding's folder; the
		// process runs in the conversation's worktree (worktree.go).
		attrs = append(attrs, "worktree", tr.ws, "branch", wt)
	}
	tr.log.Info("Starting agent process", attrs...)
	if err := tr.agent.Start(tr.e.host.Spawn, cfg, start); err != nil {
		tr.e.slots.Release(tr.ws)
		return err
	}
	syncControls(tr.agent.Live(), tr.rb, start.Model, start.PermissionMode, cfg.Model, tr.log)
	return nil
}

// takeSpare gives a conversation that starts a new Claude session with
// its binding's settings (cfg, partial) a spare process started for them
// (spares.go), points the spare's host tools at this conversation, and
// records the spare's session id before the turn as newSessionStart would. A conversation that
// resumes, has a chosen id waiting (a crash before its first turn), or
// runs another model or mode starts its own.
func (tr *turnRunner) takeSpare(b binding.Binding, cfg agentproc.Config, partial bool) bool {
	rec := tr.rb.get()
	if model, mode := tr.rb.spawnSettings(); rec.SessionID != "" || rec.NewSessionID != "" || model != "" || mode != "" {
		return false
	}
	sp := tr.e.spare.Take(tr.e.spare.SetupFor(tr.ws, cfg, partial))
	if sp == nil {
		if tr.e.spare.On() {
			tr.e.metrics.SpareTaken("none")
		}
		return false
	}
	if sp.Ready {
		tr.e.metrics.SpareTaken("ready")
	} else {
		tr.e.metrics.SpareTaken("loading")
	}
	sp.Tools.Set(tr.team.hostTools(b))
	tr.rb.update(func(r *Record) { r.NewSessionID = sp.ID })
	tr.agent.Adopt(sp.Slot)
	tr.log.Info("Taking a spare agent process", "session_id", sp.ID, "ready", sp.Ready)
	return true
}

// newSessionStart chooses the id of a new Claude session and records it
// before the process starts (--session-id), so that a crash before the CLI
// confirms it still leaves the transcript findable. When the CLI had
// already created that session, it is resumed instead.
func (tr *turnRunner) newSessionStart() agentproc.StartOptions {
	pre := tr.rb.get().NewSessionID
	if pre != "" {
		if _, _, err := tr.e.host.Transcripts().Find(pre); err == nil {
			tr.rb.update(func(r *Record) { r.SessionID, r.NewSessionID = pre, "" })
			return agentproc.StartOptions{Dir: tr.ws, ResumeID: pre}
		}
	} else {
		pre = newUUID()
		tr.rb.update(func(r *Record) { r.NewSessionID = pre })
	}
	return agentproc.StartOptions{Dir: tr.ws, SessionID: pre}
}

// send starts one turn of it on proc, carrying the uuid it was accepted
// with; its start is journaled first (a write, no fsync), so that after a
// crash the transcript tells whether the CLI had the message. A
// continuation (recovery resuming a cut turn) sends ContinueText under a
// fresh uuid and keeps the message's, which is what the transcript holds.
func (tr *turnRunner) send(proc procs.Process, it workItem) (procs.Turn, string, error) {
	id, text := it.uuid, it.msg.Text
	if id == "" || it.continuation {
		id = newUUID()
	}
	switch {
	case it.continuation:
		text = ContinueText + answersNote(it.answered)
	case !IsCompaction(text):
		// Who wrote it, and what the thread said before (team.go).
		text = tr.team.teamPrompt(it, text)
	}
	if !it.continuation {
		if err := tr.jr.markStarted(it); err != nil {
			// Sending now could not be told apart from not sending
			// after a crash; refuse the turn instead.
			return nil, "", err
		}
		if it.parkedAs != "" {
			// The journal names this sending now: the refused one is
			// no longer what a restart must send again.
			tr.e.limits.unpark(it.parkedAs)
		}
	}
	if tr.e.killedAt(PointStarted) {
		return nil, "", ErrKilled
	}
	msg := agentproc.UserMessage{UUID: id, Text: text}
	if !it.continuation {
		msg.Images = it.images
	}
	t, err := tr.startTurn(proc, msg) // own.go
	return t, id, err
}

// attempt runs the message as one turn of the session's process, serving
// permission prompts, !stop and progress while it runs.
func (tr *turnRunner) attempt(it workItem) outcome {
	// Before ensureProcess picks a new session's id: whether the thread's
	// earlier messages are due depends on there being none yet.
	it.threadContext = ""
	if !it.continuation && !IsCompaction(it.msg.Text) {
		it.threadContext = tr.team.threadContext(it)
	}
	if err := tr.ensureProcess(); err != nil {
		return outcome{err: err}
	}
	proc := tr.agent.Live()
	var at procs.Turn
	var uuid string
	var err error
	if it.ownBy != nil {
		// Written into the turn it was steered into, under its own uuid
		// (steer.go): the transcript and a rewind know it by that.
		at, err = steeringOf(tr).adopt(proc, it)
		uuid = it.uuid
	} else {
		at, uuid, err = tr.send(proc, it)
	}
	if err != nil {
		return outcome{err: err, stderr: proc.StderrTail()}
	}
	tr.ck.begin(uuid, tr.rb.sessionID()) // checkpoint.go: the last turn now, whatever becomes of it

	posted := func(msgs []platform.Target) { // on the stream's goroutine (stream.go)
		tr.jr.markStreamed(it, msgs)
		tr.e.killedAt(PointStreamed) // a test's kill: what a restart finds is on disk
	}
	t := &turn{msg: it.msg, perms: tr.newPermissions(),
		live: newLive(tr.chat, tr.log, tr.rb.sessionID, tr.binding().Progress, tr.e.opts.StallNotice, tr.e.opts.MaxTurnTime, posted)}
	t.live.act = tr.act
	t.live.noteBackground(background(proc)) // what earlier turns left running
	runNoted := false
	t.perms.ring = func(tool string) {
		if tr.shared != nil && it.run != nil && !runNoted {
			// A run's requests do not travel (approvals.go): say so
			// where they are answered, once per turn.
			runNoted = true
			tr.chat.send(render.RunRequestStays(cmp.Or(tr.e.cluster.Host, "?")))
		}
		what := "Claude asks for your permission above."
		if tool == "AskUserQuestion" {
			what = "Claude asks you a question above."
		}
		tr.team.ringAsker(it.msg, what)
	}
	t.perms.remindRing = func(what string) { tr.team.ringApprovers(it.msg, what) }
	t.perms.preset = it.answered
	if tr.shared != nil && it.run == nil {
		// A run's are not kept: it is settled in the stream once
		// journaled, so no host is given it again to adopt them.
		t.perms.share = func() { tr.shared.write(it.msg.ID, travelling(t.perms, it.msg.ID)) }
	}
	events := at.Events()
	stopping := tr.e.stopping
	var graceC, killC <-chan time.Time
	var closed chan struct{}
	for {
		var steerC <-chan struct{}
		if t.started && !t.stopped {
			steerC = tr.mb.work // a waiting message may go into the turn (steer.go)
		}
		select {
		case <-steerC:
			if steeringOf(tr).steerWaiting(t, at, it) {
				t.live.stop()
				return outcome{err: ErrKilled, steered: t.steered}
			}
		case ev, ok := <-events:
			if ok {
				tr.onEvent(t, proc, ev)
				continue
			}
			res, err := at.Result()
			t.perms.endAll("the turn ended")
			if t.live.level == binding.ProgressVerbose {
				// The log and the checklist end as they are, not as they
				// were at the last paced edit.
				tr.chat.flushProgress(&t.live.progress)
			}
			t.live.stop()
			if closed != nil {
				<-closed
			}
			out := outcome{res: res, err: err, text: t.text.String(), model: t.model, stderr: proc.StderrTail(),
				compaction: IsCompaction(it.msg.Text), compacted: t.compacted, compactErr: t.compactErr, live: t.live, steered: t.steered, uuid: uuid}
			if res != nil {
				// Those the CLI did not take in, it runs next: queued
				// first, journaled as sent, as soon as the result is
				// read (steer.go).
				var left []workItem
				out.steered, left = steeringOf(tr).split(t)
				steeringOf(tr).leave(left, proc)
			}
			if res != nil {
				tr.noteResult(res, t.model)
				if res.ContextTokens > 0 {
					tr.e.metrics.ContextPercent(tr.rb.get().ContextPct)
				}
			}
			if err == nil && res == nil {
				out.err = errors.New("turn ended without a result")
			}
			if t.handedOver {
				out.err = errHandedOver // whatever the interrupt made of it
			}
			if out.err != nil {
				t.live.endStream()
			}
			return out
		case <-tr.mb.ctrl:
			for c, ok := tr.mb.takeControl(); ok; c, ok = tr.mb.takeControl() {
				tr.control(t, proc, c)
				tr.mb.counted(-1)
			}
		case <-timerC(t.perms.timer):
			t.perms.expire(proc)
			tr.rb.notePending(t.perms, t.msg.ID)
		case <-timerC(t.perms.remindTimer):
			t.perms.remind()
			tr.rb.notePending(t.perms, t.msg.ID)
		case <-timerC(t.live.progress.timer):
			tr.chat.flushProgress(&t.live.progress)
		case <-timerC(t.live.timer):
			t.live.showStream()
		case <-timerC(t.live.stallTimer):
			t.live.stallCheck(len(t.perms.pending) > 0)
		case <-timerC(t.live.maxTimer):
			tr.overMaxTime(t, proc)
		case <-stopping:
			stopping = nil
			if parksAtShutdown(tr, it) && t.perms.park() {
				return parkAtShutdown(tr, t, proc)
			}
			graceC = time.After(tr.e.opts.ShutdownGrace)
		case <-graceC:
			graceC = nil
			if parksAtShutdown(tr, it) && t.perms.park() {
				return parkAtShutdown(tr, t, proc)
			}
			t.handedOver = tr.ho.takes(it)
			tr.log.Warn("Shutdown grace over; interrupting the running turn", "session_id", tr.rb.sessionID(),
				"handed_over", t.handedOver)
			tr.interrupt(proc)
			killC = time.After(tr.e.opts.ShutdownGrace)
		case <-killC:
			killC = nil
			tr.log.Warn("Turn did not end after the interrupt; closing the agent process", "session_id", tr.rb.sessionID())
			closed = make(chan struct{})
			go func() {
				defer close(closed)
				_ = proc.Close(tr.e.bg)
			}()
		}
	}
}

func (tr *turnRunner) interrupt(proc procs.Process) error {
	ctx, cancel := context.WithTimeout(tr.e.bg, controlTimeout)
	defer cancel()
	err := proc.Interrupt(ctx)
	if err != nil {
		tr.log.Warn("Interrupting the agent failed", "session_id", tr.rb.sessionID(), "error", err)
	}
	return err
}

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func (tr *turnRunner) onEvent(t *turn, proc procs.Process, ev agentproc.Event) {
	t.live.event()
	switch ev := ev.(type) {
	case agentproc.TextDelta:
		t.live.delta(ev)
	case agentproc.CallStart:
		if ev.Parent == "" {
			t.live.para = true
		}
	case agentproc.ToolResult:
		t.live.noteToolResult(ev)
		tr.ck.note(ev) // checkpoint.go: the turn's diff
	case agentproc.ModeChange:
		tr.rb.noteMode(ev.Mode)
	case agentproc.Init:
		if !t.started {
			tr.mb.wake() // messages that came before the turn started may go into it now
		}
		t.started = true
		t.model = ev.Model
		if t.stopped {
			// An interrupt that reaches the CLI before it starts the
			// turn is a no-op there, so a !stop that came that early is
			// sent now.
			tr.interrupt(proc)
		}
		switch {
		case ev.SessionID != "" && !agentproc.ValidSessionID(ev.SessionID):
			// Stored, it would be passed to --resume and wedge the
			// conversation: every later start would be refused.
			tr.log.Error("Agent reported a session id that is not a UUID; not stored", "reported_session_id", ev.SessionID)
		case ev.SessionID != "":
			tr.rb.update(func(r *Record) {
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
		t.live.noteTool(ev)
		tr.ck.noteTool(ev) // checkpoint.go
		tr.act.record(activity.Event{Kind: activity.Tool, Tool: ev.Name, Input: inputSummary(ev.Input)})
	case agentproc.Compaction:
		if ev.Active {
			t.live.showStatus("Compacting the conversation…")
		} else if ev.Result == "failed" {
			t.compactErr = orDefault(ev.Error, "failed")
		}
	case agentproc.CompactBoundary:
		t.compacted = &ev
	case agentproc.RateLimit:
		tr.limit.noteEvent(ev)
	case agentproc.APIRetry:
		t.live.showStatus(fmt.Sprintf("API error %d, retrying (%d/%d)…", ev.ErrorStatus, ev.Attempt, ev.MaxRetries))
	case agentproc.PermissionRequest:
		t.perms.ask(proc, ev)
		if len(t.perms.pending) > 0 {
			// A prompt went up: the reply streams on below it.
			t.live.restartStream()
		}
		tr.rb.notePending(t.perms, t.msg.ID)
	case agentproc.PermissionCancel:
		t.perms.cancel(ev.RequestID)
		tr.rb.notePending(t.perms, t.msg.ID)
	case agentproc.CommandState:
		steeringOf(tr).steeredIn(t, ev) // steer.go
	case agentproc.BackgroundTasks:
		t.live.noteBackground(descriptions(ev.Tasks)) // own.go
	case agentproc.Malformed:
		tr.log.Warn("Agent wrote a malformed line", "line", ev.Line, "error", ev.Err)
	}
}

// control handles a control that reached the running turn.
func (tr *turnRunner) control(t *turn, proc procs.Process, c control) {
	switch c.kind {
	case ctrlAnswer, ctrlReply:
		if c.kind == ctrlAnswer && t.perms.find(c.requestID) == nil && heldForAdoption(tr.e, tr.key, c) {
			return // for a handed-over message queued behind this turn (approvals.go)
		}
		t.perms.answer(proc, c)
		tr.rb.notePending(t.perms, t.msg.ID)
	case ctrlStop:
		tr.stopShell(c.to)
		t.stopped = true
		if t.started {
			if err := tr.interrupt(proc); err != nil {
				tr.log.Warn("Interrupting the turn failed", "error", err)
				tr.chat.sendTo(c.to, "Could not stop the turn: "+tr.forChat(err.Error()))
				return
			}
		}
		_, n, _ := tr.mb.snapshot()
		msg := "Stopping the current turn. The session is kept."
		switch n {
		case 0:
			msg += " Nothing else is queued."
		case 1:
			msg += " 1 queued message stays queued and runs next."
		default:
			msg += fmt.Sprintf(" %d queued messages stay queued and run next.", n)
		}
		if c.args == "all" {
			if stopped := stopBackground(tr.e.bg, tr.log, proc); stopped != "" { // own.go
				msg += " " + stopped
			}
		} else if bg := background(proc); len(bg) > 0 {
			msg += " " + render.BackgroundRunning(bg) + " (they keep running; !stop all stops them too)."
		}
		tr.chat.sendTo(c.to, msg)
	case ctrlReap:
		// busy: not idle, nothing to reap
	case ctrlFence:
		// The binding is served elsewhere now: its next holder runs
		// this turn again; its end here is not acknowledged.
		t.stopped = true
		if t.started {
			tr.interrupt(proc)
		}
	default:
		tr.other(c)
	}
}

// noteResult takes the figures of a result (session id, context, cost)
// into the record, in memory: settle charges the spending ledger and the
// turn's tail saves both once the reply is posted, so that no fsync
// delays the reply. The session id was saved when the turn started, which
// is what a crash before that save needs.
func (tr *turnRunner) noteResult(res *agentproc.Result, initModel string) {
	model := orDefault(res.Model, initModel)
	tr.rb.change(func(r *Record) {
		if agentproc.ValidSessionID(res.SessionID) { // see onEvent
			r.SessionID = res.SessionID
		}
		if model != "" {
			r.Model = model
		}
		if res.TotalCostUSD > 0 {
			r.TotalCostUSD = res.TotalCostUSD
		}
		if res.ContextTokens > 0 {
			f := resultFigures(res, tr.e.opts.ContextWindow)
			r.ContextTokens, r.ContextWindow, r.WindowReported = f.Tokens, f.Window, f.WindowReported
			r.ContextPct, _ = f.SDK()
		}
		r.LastActivity = tr.e.now()
	})
	tr.purse.charges = append(tr.purse.charges, res)
}
