package conv

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// What Claude does on its own between messages (docs/turns.md, "Background
// work"): a background task that outlives its turn, and the turn the CLI
// runs by itself when it ends. The conversation's goroutine runs that turn
// as it runs a message's, and posts its answer into the thread as a reply
// of its own.

// ownSource is what a process that reports its own turns has
// (*agentproc.Process through procs' realProcess); a process without it
// (a test's in-memory fake) has no background work to report.
type ownSource interface {
	Own() <-chan *agentproc.Turn
	Background() []agentproc.BackgroundTask
	BackgroundBusy() bool
}

// taskStopper stops a background task (the CLI's stop_task).
type taskStopper interface {
	StopTask(ctx context.Context, taskID string) error
}

// stopBackground stops proc's background tasks for a "!stop all" and
// says what it stopped ("" when none ran). It needs nothing of the turn
// but its process: a function, not one more method of the turn runner.
func stopBackground(bg context.Context, log *slog.Logger, proc procs.Process) string {
	o := ownOf(proc)
	ts, ok := proc.(taskStopper)
	if o == nil || !ok {
		return ""
	}
	var stopped, failed []string
	for _, t := range o.Background() {
		ctx, cancel := context.WithTimeout(bg, controlTimeout)
		err := ts.StopTask(ctx, t.TaskID)
		cancel()
		name := orDefault(t.Description, t.TaskID)
		if err != nil {
			log.Warn("Stopping a background task failed", "task_id", t.TaskID, "error", err)
			failed = append(failed, name)
			continue
		}
		stopped = append(stopped, name)
	}
	return render.BackgroundStopped(stopped, failed)
}

// ownOf is proc's own turns, or nil.
func ownOf(proc procs.Process) ownSource {
	if proc == nil {
		return nil
	}
	o, _ := proc.(ownSource)
	return o
}

// ownTurns is the channel of proc's own turns (nil without).
func ownTurns(proc procs.Process) <-chan *agentproc.Turn {
	if o := ownOf(proc); o != nil {
		return o.Own()
	}
	return nil
}

// busyOnItsOwn reports whether proc works without a turn of ours:
// background tasks run, or one ended and its answer is coming. The idle
// reaper leaves such a process alone.
func busyOnItsOwn(proc procs.Process) bool {
	o := ownOf(proc)
	return o != nil && o.BackgroundBusy()
}

// background describes proc's running background tasks.
func background(proc procs.Process) []string {
	o := ownOf(proc)
	if o == nil {
		return nil
	}
	return descriptions(o.Background())
}

// descriptions names each task as !status and the live view show it.
func descriptions(tasks []agentproc.BackgroundTask) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, orDefault(t.Description, t.TaskID))
	}
	return out
}

// runOwn relays a turn the CLI ran by itself: the tasks that ended and its
// answer, posted as a reply of its own. The reply is journaled before it
// is posted and acknowledged once it is (keepOwn, postOwn): a kill in
// between neither loses it nor, where the platform can find its posts,
// doubles it.
func (tr *turnRunner) runOwn(t *agentproc.Turn) {
	var summaries []string
	var answer strings.Builder
	var model string
	for ev := range t.Events() {
		switch e := ev.(type) {
		case agentproc.TaskNotification:
			if e.Summary != "" {
				summaries = append(summaries, e.Summary)
			}
		case agentproc.Init:
			model = e.Model
		}
	}
	res, err := t.Result()
	failed := ""
	switch {
	case err != nil:
		failed = "Claude's own turn failed: " + err.Error()
	case res.IsError:
		failed = "Claude's own turn failed: " + orDefault(res.Text, res.Subtype)
	default:
		answer.WriteString(res.Text)
	}
	if res != nil {
		tr.noteResult(res, model)
		tr.ck.ownTurn() // checkpoint.go: the last turn is no longer revertible alone
		tr.saveNow()
	}
	tr.log.Info("Agent ran a turn by itself", "session_id", tr.rb.sessionID(), "tasks", len(summaries),
		"origin", originOf(res), "error", err)
	it := tr.jr.keepOwn(tr.chat.to, t.UUID(), render.OwnTurnReply(summaries, answer.String(), failed))
	if tr.e.killedAt(PointOwnKept) {
		return // a test's kill: the reply is journaled, not posted
	}
	postOwn(tr, it)
}

// keepOwn journals the reply of the CLI's own turn u, to post in to (one
// fsync), and returns it as the item postOwn posts. Claude's process dies
// with cc-connect, so after a kill this entry is all that is left of that
// turn's answer. A journal that cannot take it (unreadable, full) leaves
// the item without an entry: it is posted all the same, only not kept.
func (j *journal) keepOwn(to platform.Target, u, text string) workItem {
	now := j.now()
	to.MessageID = ""
	it := workItem{kind: itemOwn, uuid: u, msg: platform.Message{ID: "own-" + u, Target: to, Text: text, Received: now}}
	in := j.file()
	if in == nil {
		j.log.Warn("Claude's own reply not journaled: the journal is unreadable; a kill before it is posted loses it")
		return it
	}
	en := inbox.Entry{ID: it.msg.ID, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, Text: text,
		Received: now, Accepted: now, UUID: u, Kind: kindOwn}
	if err := in.Append(en); err != nil {
		j.log.Warn("Claude's own reply not journaled; a kill before it is posted loses it", "error", err)
		return it
	}
	it.inboxID = en.ID
	return it
}

// postOwn posts the journaled reply of a turn the CLI ran by itself and
// acknowledges it: keyed by that turn, marked as being posted first, so
// that after a kill the platforms that find their posts (or record their
// parts) post only what did not land. One that cannot tell gets it again,
// headed by a line that says why. The turn runner's parts are all it
// uses: a function, as takeSteered is, not one more method of it.
func postOwn(tr *turnRunner, it workItem) {
	again := it.replying
	switch {
	case !again:
		tr.jr.markReplying(it, nil, "")
	case !tr.chat.canFindReplies() && (!tr.chat.recordsParts() || len(it.parts) == 0):
		tr.log.Info("Posting again Claude's own reply that was being posted at the restart", "message_id", it.inboxID)
		tr.chat.send(render.OwnReplyAgain)
		again = false
	default:
		tr.log.Info("Completing Claude's own reply that was being posted at the restart", "message_id", it.inboxID)
	}
	tr.chat.sendReply(it.msg.Text, tr.replyOf(it, again))
	if tr.e.killedAt(PointOwnSent) {
		return // a test's kill: the reply is posted, the entry not acked
	}
	// The ack is written now; its fsync goes to the tail, as a turn's
	// does, so that a message sent on seeing this reply starts at once.
	tr.tail.run(tr.jr.ackLater(it, inbox.AckResult))
}

// ownFirst puts the journaled replies of Claude's own turns ahead of the
// other pending items, in their order: each is an answer already written
// (its turn ended before whatever was started or waits), only its post
// is left.
func ownFirst(items []workItem) []workItem {
	out := make([]workItem, 0, len(items))
	for _, it := range items {
		if it.kind == itemOwn {
			out = append(out, it)
		}
	}
	for _, it := range items {
		if it.kind != itemOwn {
			out = append(out, it)
		}
	}
	return out
}

func originOf(res *agentproc.Result) string {
	if res == nil {
		return ""
	}
	return res.Origin
}

// startTurn starts msg on proc; when the CLI is running a turn of its own
// just then, that turn is relayed first.
func (tr *turnRunner) startTurn(proc procs.Process, msg agentproc.UserMessage) (procs.Turn, error) {
	for {
		t, err := proc.StartTurn(tr.e.bg, msg)
		own := ownTurns(proc)
		if !errors.Is(err, agentproc.ErrTurnInProgress) || own == nil {
			return t, err
		}
		select {
		case ot := <-own:
			tr.runOwn(ot)
		case <-proc.Done():
			return nil, err
		}
	}
}
