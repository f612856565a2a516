package conv

import (
	"context"
	"fmt"
	"slices"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Follow-ups steered into the running turn (a binding's follow_ups =
// "steer", or !steer for one message): a message that waits in the FIFO
// while a turn runs is written into that turn instead of waiting for it
// to end; the CLI reads it at the turn's next request and the turn ends
// with one reply for both. Exactly once: the message's journal entry is
// marked as steered into the running turn's (with the uuid it is written
// with) before it is written; it is acknowledged with that turn. A message
// taken from the FIFO still marked so (its turn was cut by a kill, or the
// write failed) is looked up in the transcript: shown taken into the turn,
// it was answered with its turn and is acknowledged; not, it is recovered
// as a message sent on its own (takeSteered).

// What a message sent while a turn runs does, chosen for one message
// (!steer, !queue); "" follows the binding's follow_ups.
const (
	followQueue = binding.FollowUpsQueue
	followSteer = binding.FollowUpsSteer
)

// steerer is a running turn that takes messages into it (agentproc.Turn).
type steerer interface {
	SteerAs(ctx context.Context, id, text string) error
}

var _ steerer = (*agentproc.Turn)(nil)

// steering is the turn runner's part that steers follow-ups: it holds
// nothing of its own, only the runner's parts it uses.
type steering struct{ tr *turnRunner }

func steeringOf(tr *turnRunner) steering { return steering{tr: tr} }

// steers reports whether it, waiting while a turn runs, goes into that
// turn now: it steers once read (below) and has nothing left to read back
// first.
func (sg steering) steers(it workItem) bool {
	return len(it.checks) == 0 && sg.steersOnceRead(it)
}

// steersOnceRead reports whether it goes into the running turn once what
// it must read back first is read: a plain message of an allowed user (no
// files, not a run, not one already sent, not a reply whose thread's root
// is yet to be read) whose sender or binding chose steering. A gap check
// (checks.go) does not keep it out: the first message of a thread after a
// start carries one, and the thread's turn may well be running (the
// start's recovery runs it, or the thread's root started it).
func (sg steering) steersOnceRead(it workItem) bool {
	tr := sg.tr
	if it.kind != itemTurn || it.run != nil || len(it.files) > 0 || slices.Contains(it.checks, checkRoot) || it.started ||
		it.recovered || it.steeredInto != "" || IsCompaction(it.msg.Text) {
		return false
	}
	b := tr.binding()
	if !b.Allowed(it.msg.UserID) {
		return false
	}
	switch it.follow {
	case followSteer:
		return true
	case followQueue:
		return false
	}
	return b.FollowUps == followSteer
}

// wouldSteer is steers on the accept path (a turn runs, or waits on a
// prompt), for the queue notice: a message that goes into the running
// turn is not told it waits.
func (sg steering) wouldSteer(it workItem) bool {
	st, _, _ := sg.tr.mb.snapshot()
	return st != stateIdle && sg.steersOnceRead(it)
}

// steerWaiting writes the messages at the head of the FIFO that go into
// the running turn into it, in order; running is the turn's item. killed:
// a test's kill stopped it after one was written.
func (sg steering) steerWaiting(t *turn, at procs.Turn, running workItem) (killed bool) {
	tr := sg.tr
	st, ok := at.(steerer)
	if !ok || !t.started || t.stopped || running.inboxID == "" || running.continuation {
		return false
	}
	for {
		if it, ok := tr.mb.peek(); ok && len(it.checks) > 0 && sg.steersOnceRead(it) {
			// Read back first, on this goroutine as when idle (the
			// turn's events wait for it, as long as one read takes):
			// what the read finds missing goes before it, and into the
			// turn before it.
			tr.check(it)
			continue
		}
		it, ok := tr.mb.takeIf(sg.steers)
		if !ok {
			return false
		}
		it.msg.UserName = tr.chat.userName(it.msg)
		if err := tr.jr.markSteered(it, running.inboxID); err != nil {
			// Unmarked, a write could not be told apart from none
			// after a crash: it runs as its own turn instead.
			tr.log.Warn("Journaling a steered message failed; it runs after the turn", "message_id", it.inboxID, "error", err)
			it.follow = followQueue
			tr.mb.push(it)
			return false
		}
		it.started, it.steeredInto = true, running.inboxID
		ctx, cancel := context.WithTimeout(tr.e.bg, controlTimeout)
		err := st.SteerAs(ctx, it.uuid, tr.team.teamPrompt(it, it.msg.Text))
		cancel()
		if err != nil {
			// The turn is ending: whether the CLI had it, the
			// transcript says once it has (takeSteered).
			tr.log.Info("Steering a message into the running turn failed; it is looked up after the turn", "message_id", it.inboxID, "error", err)
			tr.mb.push(it)
			return false
		}
		tr.log.Info("Message steered into the running turn", "message_id", it.inboxID, "into", running.inboxID, "uuid", it.uuid)
		t.steered = append(t.steered, it)
		tr.e.busy.add(-1) // it ends with the running turn, counted once
		if tr.e.killedAt(PointSteered) {
			return true
		}
	}
}

// steeredIn marks a steered message as taken into the turn when the CLI
// says it started it: a reaction, or a short notice where the platform
// has none.
func (sg steering) steeredIn(t *turn, ev agentproc.CommandState) {
	tr := sg.tr
	if ev.State != agentproc.CommandStarted {
		return
	}
	for i, it := range t.steered {
		if it.uuid != ev.UUID {
			continue
		}
		t.steered[i].takenIn = true
		if t.takenIn == nil {
			t.takenIn = map[string]bool{}
		}
		t.takenIn[it.uuid] = true
		tr.jr.markTakenIn(it) // before the reaction: what a kill after it finds
		sg.showTakenIn(it)
		return
	}
}

// showTakenIn tells the thread that it went into the running turn: 👀 on
// it, or a short notice where the platform has no reactions.
func (sg steering) showTakenIn(it workItem) {
	tr := sg.tr
	if re, ok := tr.chat.chat().(platform.Reactor); ok && it.msg.Target.MessageID != "" {
		if err := re.React(tr.e.bg, it.msg.Target, "eyes"); err != nil {
			tr.log.Debug("Reaction failed", "error", err)
		}
		return
	}
	tr.chat.send(render.Steered(Quote(it.msg.Text, 80)))
}

// split sorts the messages steered into a turn that ended with a result:
// those the CLI took into it (it said so before the result) are answered
// by its reply; the others it had not read in time, and runs next, each
// as a turn of its own (the CLI's queue), with no message of ours.
func (sg steering) split(t *turn) (taken, left []workItem) {
	for _, it := range t.steered {
		if t.takenIn[it.uuid] {
			taken = append(taken, it)
		} else {
			left = append(left, it)
		}
	}
	return taken, left
}

// leave makes each message left out of its turn (split) a turn of its
// own, which proc runs next by itself: journaled as sent under its uuid
// (no longer steered: after a kill it is recovered as any sent message,
// from the transcript), and queued first, to be answered by the CLI's
// next turn (adopt).
func (sg steering) leave(left []workItem, proc procs.Process) {
	tr := sg.tr
	for i := range left {
		it := &left[i]
		if err := tr.jr.markStarted(*it); err != nil {
			tr.log.Warn("Journaling a steered message as its own turn failed", "message_id", it.inboxID, "error", err)
		}
		tr.log.Info("A steered message was not taken into its turn; the agent runs it next", "message_id", it.inboxID, "into", it.steeredInto)
		it.steeredInto, it.started, it.ownBy = "", true, proc
	}
	if len(left) > 0 {
		tr.mb.pushFront(left...)
	}
}

// adopt is the turn proc runs by itself for it, a message steered into a
// turn that ended without it (leave): the CLI starts it right after that
// turn's result.
func (sg steering) adopt(proc procs.Process, it workItem) (procs.Turn, error) {
	// Gone, it is recovered as after an agent's exit: from the transcript.
	gone := &agentproc.ExitError{Code: -1, StderrTail: proc.StderrTail()}
	own := ownTurns(proc)
	if proc != it.ownBy || own == nil {
		return nil, gone
	}
	select {
	case ot := <-own:
		return ot, nil
	case <-proc.Done():
		return nil, gone
	case <-sg.tr.e.bg.Done():
		return nil, ErrStopped
	}
}

// requeueSteered puts the messages steered into a turn that did not end
// back into the FIFO: each is looked up in the transcript when it comes
// up (takeSteered).
func (sg steering) requeueSteered(steered []workItem) {
	tr := sg.tr
	for i := range steered {
		// The turn failed, cc-connect did not restart: a recovery
		// says so (takeSteered).
		steered[i].afterCrash = true
	}
	if len(steered) > 0 {
		tr.mb.push(steered...)
	}
}

// ackSteered acknowledges the messages steered into a turn that ended,
// with it (before it: a kill between the two leaves the turn, whose
// recovery answers both).
func (sg steering) ackSteered(steered []workItem, why inbox.AckReason) []func() {
	tr := sg.tr
	var fins []func()
	for _, it := range steered {
		fins = append(fins, tr.jr.ackLater(it, why))
	}
	return fins
}

// takeSteered settles a message taken from the FIFO that is marked as
// steered into a turn that has ended (a kill, a failed write). What the
// CLI did with it, its transcript says, whatever cc-connect journaled of
// it (the CLI can take it in and answer it after a kill, before cc-connect
// read that it did; and it can say it took it in before its transcript
// holds it):
//   - taken into the turn (a queued_command attachment with its uuid):
//     that turn's reply answers it, or, cut off, the turn's recovery,
//     which ran before it, resumed the turn with it in its history; it is
//     acknowledged;
//   - not taken in: it may have run next as a turn of its own (leave: a
//     user line with its uuid), or not reached the CLI at all. It is
//     recovered as any message sent: from the transcript, after its uuid,
//     or sent again.
func takeSteered(tr *turnRunner, it workItem) {
	sg := steeringOf(tr)
	if _, ok := tr.jr.pending(it.inboxID); !ok {
		// Acknowledged with its turn, which could not be recovered: the
		// turn's notice named it (lostWith).
		tr.log.Info("A steered message went down with its turn, which could not be recovered; the thread was told",
			"message_id", it.inboxID, "into", it.steeredInto)
		return
	}
	absorbed, err := sg.absorbed(it.uuid)
	if err != nil {
		// Recovering it as sent reads the same transcript: its error
		// tells the thread the message could not be recovered.
		tr.log.Warn("Reading the transcript for a steered message failed", "message_id", it.inboxID, "error", err)
	}
	if absorbed {
		tr.log.Info("A steered message was taken into its turn; answered with it", "message_id", it.inboxID, "into", it.steeredInto,
			"said_taken_in", it.takenIn)
		if !it.takenIn {
			sg.showTakenIn(it)
		}
		tr.jr.ack(it, inbox.AckResult)
		return
	}
	tr.log.Info("A steered message the transcript does not show taken into its turn is recovered as sent on its own",
		"message_id", it.inboxID, "into", it.steeredInto, "said_taken_in", it.takenIn)
	it.steeredInto, it.started, it.recovered = "", true, true
	tr.recover(it)
}

// absorbed reports whether the session's transcript shows the message
// sent with uuid u taken into a running turn.
func (sg steering) absorbed(u string) (bool, error) {
	tr := sg.tr
	rec := tr.rb.get()
	sid := orDefault(rec.SessionID, rec.NewSessionID)
	if sid == "" {
		return false, nil
	}
	path, _, err := tr.e.host.Transcripts().Find(sid)
	if err != nil {
		return false, nil // none: the CLI wrote nothing of it
	}
	has, err := tr.e.host.Transcripts().Absorbed(path, u)
	if err != nil {
		return false, fmt.Errorf("reading transcript %s: %w", path, err)
	}
	return has, nil
}

// lostWith are the messages steered into the turn of it that are lost
// with it when it cannot be recovered: those the CLI took in (it said
// so, or its transcript shows it), and those of which the transcript
// cannot tell, since recovering them would read it again and fail the
// same way. One the transcript shows not taken in is left to run on its
// own (takeSteered). Each is still pending in the journal.
func (sg steering) lostWith(it workItem) []workItem {
	in := sg.tr.jr.file()
	if in == nil || it.inboxID == "" {
		return nil
	}
	var out []workItem
	for _, en := range in.Pending() {
		if en.SteeredInto != it.inboxID || en.ID == it.inboxID {
			continue
		}
		s, ok := entryItem(en)
		if !ok {
			continue
		}
		if !s.takenIn {
			if absorbed, err := sg.absorbed(s.uuid); err == nil && !absorbed {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// ackLost acknowledges, as cancelled, the messages lost with their turn
// (lostWith), once the thread was told: their items, still in the FIFO,
// then find them acknowledged (takeSteered).
func (sg steering) ackLost(lost []workItem) {
	for _, it := range lost {
		sg.tr.jr.ack(it, inbox.AckCancel)
	}
}
