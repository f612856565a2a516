package conv

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
)

// sideQuestion is one !btw: answered on a goroutine of its own (the Set
// waits for it) by its own process, on a fork of the session, read-only,
// under the process caps and the spending caps, while the conversation
// goes on. The session's history is left unchanged: the fork writes to a
// new session.
type sideQuestion struct {
	e        *Set
	key      string
	id       string // the session asked about
	question string
	user     string // who asked, for the spending caps
	ws       string
	dm       bool // the conversation is a direct message (settings.agentConfig)
	rb       *recordBook
	purse    *purse
	chat     *relay
	log      *slog.Logger
	binding  func() binding.Binding
	forChat  func(string) string
}

// run asks the fork and posts its answer, or why there is none.
func (q *sideQuestion) run() {
	e := q.e
	hold, over := q.purse.reserveFork(q.user) // spend.go
	if over != nil {
		q.log.Info("Side question refused: a spending cap is reached", "user_id", q.user, "error", over)
		q.chat.send(render.Side(over.Text(q.purse.now())))
		return
	}
	defer q.purse.release(hold, q.log) // frees it when no result settled it
	if err := e.acquireSlotCap(e.bg, q.ws, e.cfg.wsCapFor(q.binding()), q.key, func() { q.chat.send(render.Side(render.NoticeWaiting)) }, nil, nil); err != nil {
		q.chat.send(render.SideShutdown)
		return
	}
	defer e.slots.Release(q.ws)
	q.log.Info("Starting a side-question process", "session_id", q.id, "fork", true)
	// The conversation's !model applies; its !mode and the configured
	// permission mode do not: a side question runs read-only, whatever
	// they say (agentproc.StartOptions.ReadOnly).
	model, _ := q.rb.spawnSettings()
	proc, err := e.host.Spawn(e.bg, e.cfg.agentConfig(q.binding(), q.dm), agentproc.StartOptions{Dir: q.ws, ResumeID: q.id, Fork: true, Model: model, ReadOnly: true}, q.log)
	if err != nil {
		q.log.Error("Starting the side-question process failed", "session_id", q.id, "error", err)
		q.chat.send(render.SideNoStart(q.forChat(err.Error())))
		return
	}
	res, text, unsafe, err := q.ask(proc)
	if unsafe != "" {
		q.chat.send(render.SideWritable(unsafe))
		return
	}
	if err != nil {
		var exitErr *agentproc.ExitError
		msg := q.forChat(err.Error())
		if errors.As(err, &exitErr) {
			msg = render.ProcessEnded(exitDescription(exitErr), orNone(q.forChat(lastLine(exitErr.StderrTail))))
		}
		q.log.Error("Side question failed", "session_id", q.id, "error", err)
		q.chat.send(render.SideFailed(msg))
		return
	}
	q.purse.settleFork(hold, q.user, q.id, res)
	answer := res.Text
	if answer == "" {
		answer = text
	}
	answer, _, _ = ctxindicator.StripSelfReport(answer)
	if strings.TrimSpace(answer) == "" {
		answer = render.SideNoText
	}
	q.chat.send(render.Side(answer))
}

// ask runs the question as the fork's one turn and closes it: the result,
// the text it wrote, the tool that could change the workspace when it was
// stopped for one, or the error.
func (q *sideQuestion) ask(proc procs.Process) (res *agentproc.Result, text, unsafe string, err error) {
	e := q.e
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		// On shutdown, give the side question the same grace as turns.
		defer close(stopped)
		select {
		case <-done:
		case <-e.stopping:
			t := time.NewTimer(e.opts.ShutdownGrace)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				_ = proc.Close(e.bg)
			}
		}
	}()
	var (
		written strings.Builder
		killing sync.WaitGroup
	)
	tr, err := proc.StartTurn(e.bg, agentproc.UserMessage{Text: q.question})
	if err == nil {
		res, err = procs.WaitTurn(tr, func(ev agentproc.Event) {
			switch ev := ev.(type) {
			case agentproc.Init:
				// The CLI says which tools the fork has before it first
				// asks the model. Should a CLI ever ignore the read-only
				// flags, the fork is killed at once (Close with a
				// cancelled ctx goes straight to SIGKILL), from another
				// goroutine: Close waits for the exit, and the turn's
				// events are still read here until it ends.
				if t := writableTool(ev); t != "" && unsafe == "" {
					unsafe = t
					q.log.Error("Side-question process could change the workspace; killing it", "tool", t,
						"tools", ev.Tools, "permission_mode", ev.PermissionMode)
					ctx, cancel := context.WithCancel(e.bg)
					cancel()
					killing.Add(1)
					go func() {
						defer killing.Done()
						_ = proc.Close(ctx)
					}()
				}
			case agentproc.AssistantText:
				if !ev.Synthetic {
					written.WriteString(ev.Text)
				}
			case agentproc.PermissionRequest:
				// A side question must not change the workspace. Answering
				// only writes to stdin, so it does not block the reader long.
				if err := proc.RespondPermission(e.bg, ev.RequestID, agentproc.PermissionDecision{
					Behavior: agentproc.Deny, Message: "Side questions cannot use tools that need approval; answer from the conversation."}); err != nil {
					q.log.Debug("Denying a side question's tool failed", "error", err)
				}
			}
		})
	}
	close(done)
	<-stopped
	killing.Wait()
	if cerr := proc.Close(e.bg); cerr != nil {
		q.log.Debug("Side-question process closed with error", "error", cerr)
	}
	return res, written.String(), unsafe, err
}

// writableTool returns a tool of a side question's process that is not one
// of agentproc.ReadOnlyTools, or "" when it has none and runs in plan mode.
func writableTool(ev agentproc.Init) string {
	for _, t := range ev.Tools {
		if !slices.Contains(agentproc.ReadOnlyTools, t) {
			return t
		}
	}
	if ev.PermissionMode != "plan" {
		return "permission mode " + ev.PermissionMode
	}
	return ""
}
