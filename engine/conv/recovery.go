package conv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/inbox"
)

// Crash recovery. Run reopens, before any adapter starts, every session
// whose journal still holds messages, so that work accepted before a crash
// or a kill resumes without waiting for a new message; sessions with
// nothing pending are not touched and spawn nothing. Their turns then run
// through the normal FIFO (and so the process caps), in order.
//
// The first pending message may have been started: the journal holds the
// uuid it was (about to be) sent with. The session's transcript decides
// what happens to it, so that it runs exactly once:
//
//   - the uuid is not in the transcript (or there is none): the CLI never
//     got it; the message is sent;
//   - it is there and the transcript ends interrupted (interrupted_prompt
//     or interrupted_turn): the CLI had it and the turn was cut; the session
//     is resumed with ContinueText, as the CLI's own recovery does;
//   - it is there and the last turn ended (none): the reply was written but
//     never posted. The message is not sent again (that would run it twice);
//     the reply is read back from the transcript and posted, or, when it
//     has no text, the user is told it was lost and asked to ask again.
//
// Before the transcript is read the session lease is taken and a claude
// process orphaned by the dead cc-connect is killed (lease.go), so the
// transcript cannot change under the decision.

// ContinueText is what the CLI itself sends to resume an interrupted turn.
const ContinueText = agentproc.ContinuePrompt

// recovery is what to do with a started message after a restart.
type recovery int

const (
	recoverSend     recovery = iota // the CLI never had it: send it
	recoverContinue                 // the turn was cut: resume it
	recoverLost                     // the turn ended; its reply was never posted
	recoverFresh                    // the CLI never had it, nor its session: send it in a fresh one
)

// scanJournals opens every journal of dir once, so that the ids they hold
// are seen, and returns those holding pending messages. A journal that
// cannot be read is logged; its conversation's next message meets the
// same error and is refused.
func (js *journals) scanJournals(dir string, seen *inbox.Seen) []string {
	des, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			js.log.Error("Listing inboxes failed", "dir", dir, "error", err)
		}
		return nil
	}
	var pending []string
	for _, de := range des {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, ".jsonl") || strings.HasPrefix(name, "seen.") {
			continue
		}
		if fi, err := de.Info(); err != nil || fi.Size() == 0 {
			continue // an empty journal: nothing pending, no ids
		}
		path := filepath.Join(dir, name)
		in, err := inbox.Open(path, js.inboxLimits(), seen)
		if err != nil {
			js.log.Error("Inbox unreadable at start; its conversation refuses new input until an admin inspects the file",
				"path", path, "error", err)
			continue
		}
		if in.Len() > 0 {
			pending = append(pending, path)
		}
		if err := in.Close(); err != nil {
			js.log.Warn("Closing an inbox failed", "path", path, "error", err)
		}
	}
	return pending
}

// Recover reopens the sessions whose journals hold pending messages, then
// lets runs and the cluster's events in (Ready); the engine calls it once,
// before its adapters start.
func (e *Set) Recover() {
	defer close(e.runs.ready)
	e.jrs.seenIDs()
	n := 0
	for _, path := range e.jrs.pending {
		in, err := inbox.Open(path, e.jrs.inboxLimits(), e.jrs.seenIDs())
		if err != nil {
			e.log.Error("Inbox unreadable at start; its conversation refuses new input until an admin inspects the file",
				"path", path, "error", err)
			continue
		}
		pending := in.Pending()
		_ = in.Close()
		if len(pending) == 0 {
			continue
		}
		first, _ := entryItem(pending[0])
		m := first.msg
		key := Key(m.Target)
		log := e.log.With("platform", m.Target.Platform, "channel", m.Target.Channel, "thread", m.Target.Thread, "session_key", key)
		if InboxPath(e.opts.StateDir, key) != path {
			log.Error("Inbox holds messages of another conversation; left alone", "path", path)
			continue
		}
		b, ok := e.resolve(m.Target.Platform, m.Target.Channel)
		if !ok {
			log.Warn("Pending messages for a channel that is no longer bound are kept, not run", "path", path, "pending", len(pending))
			continue
		}
		a, ok := e.host.Chat(m.Target.Platform)
		if !ok {
			log.Warn("Pending messages for a platform that is not configured are kept, not run", "path", path, "pending", len(pending))
			continue
		}
		if e.cluster.clustered(m.Target.Platform) && !replyingFromStream(pending) {
			// The stream delivers again what nobody finished (cluster.go).
			log.Info("Pending messages of a cluster binding wait for their redelivery", "path", path, "pending", len(pending))
			continue
		}
		if _, err := e.session(b, m, a); err != nil {
			log.Error("Recovering a session failed", "error", err)
			continue
		}
		log.Info("Recovering pending messages", "pending", len(pending), "started", pending[0].Started)
		n++
	}
	if n > 0 {
		e.log.Info("Recovery: sessions with pending messages reopened", "sessions", n)
	}
}

// decide looks at the transcript of the session's Claude session to tell
// what became of a message sent with uuid u; path is the transcript, when
// one was found.
func (tr *turnRunner) decide(u string) (what recovery, path string, err error) {
	rec := tr.rb.get()
	sid := orDefault(rec.SessionID, rec.NewSessionID)
	if sid == "" {
		return recoverSend, "", nil // no session was ever started for it
	}
	if err := tr.agent.Claim(sid); err != nil {
		return recoverSend, "", err
	}
	path, _, err = tr.e.host.Transcripts().Find(sid)
	if err != nil {
		tr.log.Info("No transcript for the interrupted turn; sending the message", "session_id", sid, "error", err)
		if errors.Is(err, fs.ErrNotExist) && rec.SessionID != "" {
			// The CLI was stopped before it wrote the session's first
			// line: resuming it would fail and fall back to a fresh
			// session, with a notice of its own after ours. Start that
			// fresh session at once, under the same id (nothing of it
			// exists), and say so in the one notice.
			tr.rb.forget()
			tr.rb.update(func(r *Record) { r.NewSessionID = sid })
			return recoverFresh, "", nil
		}
		return recoverSend, "", nil
	}
	has, err := tr.e.host.Transcripts().Contains(path, u)
	if err != nil {
		return recoverSend, path, fmt.Errorf("reading transcript %s: %w", path, err)
	}
	if !has {
		tr.log.Info("The interrupted message is not in the transcript; sending it", "session_id", sid, "transcript", path)
		return recoverSend, path, nil
	}
	end, err := tr.e.host.Transcripts().End(path)
	if err != nil {
		return recoverSend, path, fmt.Errorf("reading transcript %s: %w", path, err)
	}
	tr.log.Info("Interrupted turn found in the transcript", "session_id", sid, "transcript", path, "end", string(end))
	if end == agentproc.InterruptionNone {
		return recoverLost, path, nil
	}
	return recoverContinue, path, nil
}

// recover runs the first pending message of a session reopened after a
// restart (or whose agent died mid-turn: it.afterCrash), posting one short
// notice that says what happens, in terms of what cc-connect knows.
func (tr *turnRunner) recover(it workItem) {
	rec := tr.rb.get()
	perm := rec.PendingPermission
	var note strings.Builder
	event := "the restart"
	note.WriteString("cc-connect restarted. ")
	if it.afterCrash {
		event = "the agent's exit"
		note.Reset()
		note.WriteString("Recovering the turn once. ")
	}
	// A request the turn waited on when cc-connect went is kept, not
	// cancelled (parked.go): after an agent's exit its prompt was closed
	// with the turn, so only a restart finds one.
	var waiting []parkedRequest
	for _, r := range decodeParked(rec.Parked) {
		if r.Item == it.msg.ID && !it.afterCrash {
			waiting = append(waiting, r)
		}
	}
	// On a cluster binding, what the turn waited on may have been kept
	// in the cluster by a host that served it since (approvals.go).
	adopted := adoptedWaiting(tr, it)
	if len(waiting) == 0 && !it.afterCrash {
		waiting = adopted
	}
	withAnswers, interrupted := false, false
	if len(waiting) > 0 {
		if slices.ContainsFunc(waiting, func(r parkedRequest) bool { return r.Answer == nil }) {
			// The wait first: once the notice is read, the old prompt's
			// buttons answer it and the conversation shows it waiting.
			w := newParkedWait(tr, it, waiting)
			early := adoptedEarly(tr, it)
			w.share = func(all []parkedRequest) { tr.shared.write(it.msg.ID, all) }
			tr.chat.send(fmt.Sprintf("cc-connect restarted. The request above (%s) still waits for an answer: the turn goes on once it has one.", orDefault(orDefault(perm, w.perms.first()), "a permission request")))
			ok := replayEarly(w, early)
			var answered []parkedRequest
			if ok {
				answered, ok = w.run()
			}
			if !ok {
				tr.agent.ReleaseIfIdle()
				return
			}
			waiting = answered
			note.Reset()
		}
		it.answered, perm, withAnswers = waiting, "", true
		interrupted = slices.ContainsFunc(waiting, func(r parkedRequest) bool { return r.Interrupted })
	}
	adoptedEarly(tr, it) // what no wait took: its answers were given
	if perm != "" {
		fmt.Fprintf(&note, "The permission request (%s) was cancelled by %s. ", perm, event)
		tr.rb.update(func(r *Record) { r.PendingPermission = "" })
	}
	q := Quote(it.msg.Text, 80)
	sg := steeringOf(tr)
	// The start mark is not fsynced (it survives a kill, not always a
	// power cut), so the transcript is asked whether or not it is there.
	what, path, err := tr.decide(it.uuid)
	if err != nil {
		// Resending could run the message twice and resuming could run
		// it on a session held elsewhere; tell the user instead.
		tr.log.Error("Recovering the interrupted turn failed", "error", err)
		lost := sg.lostWith(it)
		fmt.Fprintf(&note, "The turn for %s could not be recovered (%s). Please send %s again if %s still needed.",
			lostTurn(q, lost), tr.forChat(err.Error()), plural(lost, "it", "them"), plural(lost, "it is", "they are"))
		tr.chat.send(note.String())
		tr.chat.cutStream(it.streamed, func() { tr.jr.markStreamed(it, nil) })
		sg.ackLost(lost)
		tr.jr.ack(it, inbox.AckCancel)
		tr.agent.ReleaseIfIdle()
		return
	}
	if what == recoverLost && tr.e.limits.isParked(it.uuid) {
		// Parked for a usage limit (limits.go): the CLI refused it, so
		// it has not run; the window's reset let it through to here.
		what, it.started, it.refused = recoverSend, false, true
	}
	if what != recoverLost || withAnswers && interrupted {
		tr.chat.cutStream(it.streamed, func() { tr.jr.markStreamed(it, nil) }) // a new turn answers: what was streamed is not the reply
		it.streamed = nil
	}
	switch {
	case what == recoverSend && !it.started && !it.afterCrash:
		fmt.Fprintf(&note, "Running the message that was waiting: “%s”", q)
		tr.chat.send(note.String())
		tr.run(it)
	case what == recoverSend:
		// The transcript does not hold it; that is all cc-connect knows
		// (the CLI may have had it without writing it yet).
		fmt.Fprintf(&note, "Your message may not have reached the agent; sending it now: “%s”", q)
		tr.chat.send(note.String())
		tr.run(it)
	case what == recoverFresh:
		fmt.Fprintf(&note, "Your message may not have reached the agent, and its session had not been saved, so it starts afresh: sending “%s” in a new session.", q)
		tr.chat.send(note.String())
		tr.run(it)
	case withAnswers && (what == recoverContinue || what == recoverLost && interrupted):
		// The turn waited on a person and was cut there (a kill, or the
		// interrupt of a clean stop): it goes on with the answer. Had
		// the CLI gone on without it (its input closed denies a pending
		// request) and finished, its reply is what the thread gets
		// (recoverLost below), as before there were answers to keep.
		fmt.Fprintf(&note, "Resuming the turn for “%s” with the answer.", q)
		tr.chat.send(note.String())
		it.continuation = true
		tr.run(it)
	case what == recoverContinue:
		fmt.Fprintf(&note, "The turn for “%s” was cut off; resuming it (“%s”).", q, ContinueText)
		tr.chat.send(note.String())
		it.continuation = true
		tr.run(it)
	case what == recoverLost:
		reply, rerr := tr.e.host.Transcripts().ReplyAfter(path, it.uuid)
		reply, _, _ = ctxindicator.StripSelfReport(reply)
		if strings.TrimSpace(reply) != "" {
			reply += it.replyTail // the very text that was being posted: the same parts
		}
		if !tr.jr.settleFirst(tr.e.bg, it, reply) {
			return // the binding's next holder posts it (cluster.go)
		}
		if strings.TrimSpace(reply) != "" {
			// Posting it now: a kill from here on must find it marked,
			// or the next start would post it (and its notice) again.
			tr.jr.markReplying(it, it.streamed, it.replyTail)
		}
		switch {
		case strings.TrimSpace(reply) == "":
			tr.log.Warn("Reply finished before the restart but never posted, and not readable", "session_id", tr.rb.sessionID(),
				"transcript", path, "error", errString(rerr))
			lost := sg.lostWith(it)
			fmt.Fprintf(&note, "The agent finished the turn for %s before %s, but its reply was not posted and is lost. Please ask again if you still need %s.",
				lostTurn(q, lost), event, plural(lost, "it", "them"))
			tr.chat.send(note.String())
			tr.chat.cutStream(it.streamed, func() { tr.jr.markStreamed(it, nil) })
			sg.ackLost(lost)
		case len(it.streamed) > 0 && tr.chat.canFinish():
			// It was streamed into messages the journal names: they are
			// made to show the reply (again: an edit to what a message
			// shows already changes nothing), parts beyond them posted
			// where none is found or recorded, without a notice.
			msgs, ok := tr.chat.finishReply(it.streamed, reply, tr.replyOf(it, true))
			tr.log.Info("Finishing a streamed reply after the restart", "session_id", tr.rb.sessionID(), "transcript", path,
				"streamed", len(it.streamed), "parts", len(msgs), "ok", ok)
			if ok {
				tr.chat.dropStream(it.streamed[min(len(msgs), len(it.streamed)):])
			} else {
				tr.chat.dropStream(it.streamed[min(len(msgs), len(it.streamed)):])
				tr.chat.sendReply(reply, tr.replyOf(it, true))
			}
		case it.replying && tr.chat.canFindReplies():
			// It was being posted: the adapter looks for its parts and
			// posts only those that did not land, without a notice (the
			// reader sees one reply, whole).
			res := tr.chat.sendReply(reply, tr.replyOf(it, true))
			tr.log.Info("Completing a reply that was being posted at the restart", "session_id", tr.rb.sessionID(), "transcript", path,
				"parts", res.Parts, "found", res.Found, "posted", res.Posted)
		case it.replying && tr.chat.recordsParts() && len(it.parts) > 0:
			// Some parts are recorded as posted: the others follow,
			// without a notice; only a part that landed just before the
			// kill, before its record, can show twice.
			res := tr.chat.sendReply(reply, tr.replyOf(it, true))
			tr.log.Info("Completing a reply that was being posted at the restart", "session_id", tr.rb.sessionID(), "transcript", path,
				"parts", res.Parts, "recorded", len(it.parts), "posted", res.Posted)
		case it.replying:
			// It was being posted: it may be in the thread already, and
			// cc-connect cannot tell.
			tr.log.Info("Posting again a reply that was being posted at the restart", "session_id", tr.rb.sessionID(), "transcript", path)
			fmt.Fprintf(&note, "The agent had finished the turn for “%s” before %s, and its reply was being posted; in case it did not arrive, here it is again.", q, event)
			tr.chat.send(note.String())
			tr.chat.send(reply)
		default:
			tr.log.Info("Posting a reply finished before the restart", "session_id", tr.rb.sessionID(), "transcript", path)
			fmt.Fprintf(&note, "The agent had finished the turn for “%s” before %s; its reply follows.", q, event)
			tr.chat.send(note.String())
			tr.chat.sendReply(reply, tr.replyOf(it, true))
		}
		tr.jr.replyPosted(it)
		if tr.e.killedAt(PointReplied) {
			return // a test's kill: the reply is posted, the entry not acked
		}
		tr.jr.ack(it, inbox.AckResult)
		tr.agent.ReleaseIfIdle()
	}
}

// lostTurn names a turn that cannot be recovered in its notice: its own
// message, quoted q, and the messages steered into it (lostWith), each
// quoted, so that nobody takes a follow-up for handled.
func lostTurn(q string, with []workItem) string {
	if len(with) == 0 {
		return "“" + q + "”"
	}
	qs := make([]string, len(with))
	for i, it := range with {
		qs[i] = "“" + Quote(it.msg.Text, 80) + "”"
	}
	noun := "message"
	if len(with) > 1 {
		noun = "messages"
	}
	return fmt.Sprintf("“%s” and the %s added to it while it ran (%s)", q, noun, strings.Join(qs, ", "))
}

// plural is one when the turn's own message is all a notice speaks of
// (with is empty), else many.
func plural(with []workItem, one, many string) string {
	if len(with) == 0 {
		return one
	}
	return many
}

// Ready is closed once Recover has reopened what a crash left.
func (e *Set) Ready() <-chan struct{} { return e.runs.ready }
