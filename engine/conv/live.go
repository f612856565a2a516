package conv

import (
	"log/slog"
	"slices"

	"github.com/cc-connect/cc-connect/activity"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

// What a running turn shows as it goes, at the binding's progress level:
// the reply streamed into the thread while Claude writes it (one message
// edited in place, rolling over into more at the platform's split, paced
// within its edit limits), the status line or, verbose, a compact tool log
// and Claude's todo list, a notice when claude has gone quiet for
// stall_notice, and the interrupt at max_turn_time. Thinking never shows:
// agentproc carries only answer text as TextDelta, and only the main
// conversation's (not a subagent's) is streamed.

// streamHold is how long a reply's first text waits before it is shown:
// a short answer (most in a chat) is done by then and is posted once,
// whole, without the edit that would turn a streamed message into the
// reply; a longer one shows as it is written from then on. It is well
// inside the time a person takes to notice, and the typing indicator and
// the 👀 on the message show meanwhile that Claude is on it.
const streamHold = 400 * time.Millisecond

// live is the turn's live view. It lives on the session goroutine, for
// one turn, and posts through the conversation's relay.
type live struct {
	chat *relay
	log  *slog.Logger
	// sessionID names the Claude session, for the stall's log line.
	sessionID func() string

	level string
	caps  platform.Capabilities
	// progress is the status line (or tool log) message.
	progress progress

	// The reply as it is written: asked of the stream (stream.go), which
	// posts and edits off the session goroutine. streaming says its first
	// text was asked for (after streamHold); shown is the text asked for
	// last, lastEdit when. msgs and broken are what the stream left, set
	// by stop.
	stream    bool // the level and the platform stream the reply
	st        *stream
	text      strings.Builder
	para      bool // a new API call began: its text starts a paragraph
	streaming bool
	shown     string
	lastEdit  time.Time
	timer     *time.Timer // the first text's hold, or an edit waiting for EditInterval
	msgs      []platform.Target
	broken    bool // an edit failed: the final text is posted instead

	// verbose: the tool log and the checklist, under the status line.
	status string
	tools  toolLog
	todo   checklist
	// background are the background tasks running (own.go), shown
	// under the status line.
	background []string

	// stall_notice and max_turn_time.
	stallAfter time.Duration
	lastEvent  time.Time
	doing      string // what the turn did last, for the stall notice
	stalled    bool   // told already; cleared by the next event
	stallTimer *time.Timer
	maxTimer   *time.Timer
	overTime   time.Duration // set when max_turn_time stopped the turn

	// act publishes what only watchers want (activity's live kinds):
	// the reply's text as it streams and the todo list.
	act feed
}

// newLive gives a turn its live view, at the binding's progress level.
func newLive(chat *relay, log *slog.Logger, sessionID func() string, progress string, stallAfter, maxTurnTime time.Duration,
	posted func([]platform.Target)) *live {
	l := &live{chat: chat, log: log, sessionID: sessionID, level: binding.ProgressNormal, caps: chat.caps(),
		stallAfter: stallAfter, lastEvent: time.Now(), doing: "starting"}
	if progress != "" {
		l.level = progress
	}
	l.stream = l.level != binding.ProgressQuiet && l.caps.Edits
	l.st = newStream(chat, l.caps.Deletes, posted)
	if l.stallAfter > 0 {
		l.stallTimer = time.NewTimer(l.stallAfter)
	}
	if maxTurnTime > 0 {
		l.maxTimer = time.NewTimer(maxTurnTime)
	}
	return l
}

func (l *live) stop() {
	l.msgs, l.broken = l.st.settle()
	l.progress.stop()
	for _, t := range []*time.Timer{l.timer, l.stallTimer, l.maxTimer} {
		if t != nil {
			t.Stop()
		}
	}
	l.timer, l.stallTimer, l.maxTimer = nil, nil, nil
}

// wantsPartial says whether a process of b's conversations should send
// text deltas: the binding streams and the platform can edit.
func wantsPartial(b binding.Binding, caps platform.Capabilities) bool {
	return b.Progress != binding.ProgressQuiet && caps.Edits
}

// event notes that claude said something, for the stall notice.
func (l *live) event() {
	l.lastEvent = time.Now()
	l.stalled = false
}

// delta adds streamed answer text and shows it, now or when the edit
// interval allows.
func (l *live) delta(ev agentproc.TextDelta) {
	if ev.Parent != "" {
		return // a subagent's text is not the answer
	}
	if l.para && l.text.Len() > 0 {
		l.text.WriteString("\n\n")
	}
	l.para = false
	l.text.WriteString(ev.Text)
	l.act.record(activity.Event{Kind: activity.Text, Text: l.text.String()})
	l.doing = "writing the reply"
	if !l.stream {
		return
	}
	if !l.streaming {
		// The first text shows after streamHold: a reply that is done
		// by then is posted once, whole, and costs the platform no edit.
		if l.timer == nil {
			l.timer = time.NewTimer(streamHold)
		}
		return
	}
	if wait := l.caps.EditInterval - time.Since(l.lastEdit); wait > 0 {
		if l.timer == nil {
			l.timer = time.NewTimer(wait)
		}
		return
	}
	l.showStream()
}

// showStream makes the thread show the text so far.
func (l *live) showStream() {
	l.timer = nil
	text := render.Streaming(l.text.String())
	if text == "" || text == l.shown {
		return
	}
	l.st.show(text)
	l.streaming, l.shown, l.lastEdit = true, text, time.Now()
}

// restartStream moves the streamed reply below a prompt just posted: its
// messages are deleted and the text so far is posted again under the
// prompt at the next delta. Without deletes the messages keep what they
// show.
func (l *live) restartStream() {
	if !l.streaming {
		return
	}
	l.st.moveBelow()
	l.streaming, l.shown = false, ""
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// streamedMsgs are the messages a turn's reply was streamed into and that
// its final text can go to; nil when nothing was streamed or an edit
// failed (the final text is posted instead).
func streamedMsgs(l *live) []platform.Target {
	if l == nil || l.broken {
		return nil
	}
	return l.msgs
}

// finalReply replaces the streamed reply with the final text; false when
// nothing was streamed or the edit failed (the caller posts it).
func (l *live) finalReply(text string, rp platform.Reply) bool {
	if l == nil || len(l.msgs) == 0 {
		return false
	}
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	old := l.msgs
	if l.broken {
		l.chat.dropStream(old)
		return false
	}
	msgs, ok := l.chat.finishReply(old, text, rp)
	l.chat.dropStream(old[min(len(msgs), len(old)):])
	if !ok {
		return false
	}
	l.msgs = msgs
	return true
}

// noteTool records a tool call for the log, the checklist and the status.
func (l *live) noteTool(ev agentproc.ToolUse) {
	summary := render.ToolSummary(ev.Name, ev.Input)
	l.doing = "running " + summary
	l.para = true
	line := summary
	if ev.Parent != "" {
		line = "↳ " + summary // a subagent's
	}
	l.tools.start(ev.ID, line)
	if ev.Name == "TodoWrite" && l.todo.fromTodoWrite(ev.Input) {
		l.act.record(activity.Event{Kind: activity.Todos, Todos: todosOf(l.todo.shown())})
	}
	l.showStatus(render.Running(summary))
}

// noteToolResult marks a call's outcome, and keeps a task tool's list.
func (l *live) noteToolResult(ev agentproc.ToolResult) {
	known := l.tools.end(ev.ToolUseID, ev.IsError)
	changed := l.todo.fromTaskResult(ev.Structured)
	if changed {
		l.act.record(activity.Event{Kind: activity.Todos, Todos: todosOf(l.todo.shown())})
	}
	if l.level == binding.ProgressVerbose && (known || changed) {
		l.showStatus(l.status)
	}
}

// showStatus shows the status line (normal), with the tool log and the
// checklist under it (verbose); quiet shows nothing.
func (l *live) showStatus(status string) {
	l.status = status
	if l.level == binding.ProgressQuiet {
		return
	}
	l.chat.showProgress(&l.progress, render.ProgressText(render.Progress{Status: status, Background: l.background,
		Verbose: l.level == binding.ProgressVerbose, Tools: l.tools.calls, Todo: l.todo.shown(), MessageLimit: l.caps.MessageLimit}))
}

// noteBackground shows the background tasks running now, when they
// changed: those an earlier turn left running, as the turn starts, and
// each start and end the CLI reports while it runs.
func (l *live) noteBackground(tasks []string) {
	if slices.Equal(tasks, l.background) {
		return
	}
	had := len(l.background) > 0
	l.background = tasks
	switch {
	case l.status != "" || len(tasks) > 0:
		l.showStatus(l.status)
	case had && l.progress.posted && l.level != binding.ProgressQuiet:
		// The message showed the tasks alone: it says they ended.
		l.chat.showProgress(&l.progress, render.BackgroundEnded)
	}
}

// stallCheck posts the stall notice when claude has sent nothing for
// stall_notice, and sets the timer for the next check. A turn waiting on
// the chat (a permission, a question, a plan: waiting) is not stalled.
func (l *live) stallCheck(waiting bool) {
	quiet := time.Since(l.lastEvent)
	if quiet >= l.stallAfter && !l.stalled && !waiting {
		l.stalled = true
		l.log.Warn("Turn stalled: no event from claude", "session_id", l.sessionID(), "quiet_for", quiet.Round(time.Second), "doing", l.doing)
		l.chat.send(render.Stalled(quiet, l.doing))
	}
	next := l.stallAfter - time.Since(l.lastEvent)
	if next <= 0 {
		next = l.stallAfter
	}
	l.stallTimer = time.NewTimer(next)
}

// overMaxTime interrupts a turn that ran past max_turn_time.
func (tr *turnRunner) overMaxTime(t *turn, proc procs.Process) {
	l := t.live
	l.maxTimer = nil
	l.overTime = tr.e.opts.MaxTurnTime
	tr.log.Warn("Turn ran past max_turn_time; interrupting it", "session_id", tr.rb.sessionID(), "max_turn_time", l.overTime)
	t.stopped = true
	if t.started {
		_ = tr.interrupt(proc)
	}
	tr.chat.send(render.OverTime(l.overTime))
}

// noteMode keeps the permission mode the CLI reports it switched to (a
// plan approved into default or acceptEdits) as the conversation's, so
// that the next process starts in it: the mode belongs to the process
// (docs/claude-code.md §2).
func (rb *recordBook) noteMode(mode string) {
	if mode == "" {
		return
	}
	rb.update(func(r *Record) { r.ModeOverride = mode })
}

// endStream leaves a streamed reply of a turn that failed showing the text
// so far, marked as unfinished instead of with the mark that more is
// coming (the failure's notice follows it).
func (l *live) endStream() {
	if l == nil || len(l.msgs) == 0 || l.broken {
		return
	}
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if text := render.Unfinished(l.text.String()); text != "" {
		l.msgs, _ = l.chat.finishReply(l.msgs, text, platform.Reply{})
	}
}
