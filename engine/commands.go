package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/platform"
)

const helpText = `Commands (prefix ! or /):
!new — forget this conversation's session and start fresh
!btw <question> — ask a side question about the current session; its history stays unchanged
!stop — stop the running turn (queued messages stay queued)
!status — state, workspace, session, context use, queue, process
!sessions — this workspace's Claude Code sessions, newest first
!resume <n|id> — switch to a listed session
!allow [always] / !deny — answer the pending permission request
!compact [instructions] — compact the conversation now (when the context figure is high)
!model [name] — show or set this conversation's model
!mode [mode] — show or set the permission mode (within the modes the admin allows)
!sh <command> — admins, where enabled: run a shell command in the workspace; Claude hears of it next turn
!help — this list`

// commands are the known command names; "/x" is a command only when x is
// one of them, so Claude Code's other slash commands (/context) reach it.
var commands = map[string]bool{
	"new": true, "btw": true, "stop": true, "status": true, "sessions": true,
	"resume": true, "allow": true, "deny": true, "help": true,
	"compact": true, "model": true, "mode": true, "sh": true,
}

// parseCommand splits "!name args" (or "/name args" for a known name).
func parseCommand(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	if len(text) < 2 || (text[0] != '!' && text[0] != '/') {
		return "", "", false
	}
	fields := strings.Fields(text[1:])
	if len(fields) == 0 {
		return "", "", false
	}
	name = strings.ToLower(fields[0])
	if text[0] == '/' && !commands[name] {
		return "", "", false
	}
	args = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text[1:]), fields[0]))
	return name, args, true
}

// command runs a chat command. Commands that change which agent session a
// conversation uses (!new, !resume) go through the FIFO so that they apply
// after the turns sent before them; the others act at once.
func (e *Engine) command(ctx context.Context, s *session, m platform.Message, name, args string) {
	reply := func(text string) { s.send(ctx, text) }
	switch name {
	case "help":
		reply(helpText)
	case "new":
		if s.busy() {
			reply("A new session starts after the current turn and the messages queued before this command.")
		}
		s.enqueueCommand(ctx, workItem{kind: itemNew, msg: m})
	case "resume":
		e.resumeCommand(ctx, s, m, args)
	case "btw":
		e.btw(ctx, s, m, args)
	case "stop":
		if s.shell.stop() {
			reply("Stopping the shell command.")
			if !s.busy() {
				return
			}
		}
		s.control(ctx, control{kind: ctrlStop, to: s.to})
	case "sh":
		e.shellCommand(ctx, s, m, args)
	case "compact":
		e.compact(ctx, s, m, args)
	case "model":
		e.modelCommand(ctx, s, args)
	case "mode":
		e.modeCommand(ctx, s, args)
	case "status":
		reply(e.status(s))
	case "sessions":
		reply(e.listSessions(s))
	case "allow", "deny":
		choice := platform.ChoiceDeny
		if name == "allow" {
			choice = platform.ChoiceAllow
			if strings.EqualFold(args, "always") {
				choice = platform.ChoiceAlwaysAllow
			}
		}
		s.control(ctx, control{kind: ctrlAnswer, choice: choice, userName: orDefault(m.UserName, m.UserID), to: s.to})
	default:
		reply(fmt.Sprintf("Unknown command !%s. Send !help for the list.", name))
	}
}

// enqueueCommand queues a command that must order with turns.
func (s *session) enqueueCommand(ctx context.Context, it workItem) {
	if err := s.enqueue(ctx, it); err != nil {
		if s.e.isStopping() {
			s.send(ctx, shutdownText)
			return
		}
		s.send(ctx, "This conversation's session was just closed; please send the command again.")
	}
}

// control hands a control to the session goroutine without blocking past
// the caller's ctx or shutdown.
func (s *session) control(ctx context.Context, c control) {
	select {
	case s.ctrl <- c:
	case <-s.e.stopping:
	default:
		// The session goroutine reads controls at every step, so a full
		// buffer means it is stuck; never stall the adapter on it.
		s.log.Warn("Session control buffer full; control dropped", "kind", int(c.kind))
		s.sendTo(ctx, c.to, "The session is busy right now; please try again in a moment.")
	}
}

// busy reports whether a turn runs or work is queued.
func (s *session) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != stateIdle || len(s.queue) > 0
}

// doNew closes the process and forgets the session id (on the loop).
func (s *session) doNew() {
	old := s.sessionID()
	s.closeProc()
	s.forgetSession()
	s.log.Info("Session reset by !new", "old_session_id", old)
	msg := "Started a new session: your next message begins with a fresh context."
	if old != "" {
		msg += fmt.Sprintf(" (The previous session %s stays on disk; !sessions lists it.)", old)
	}
	s.send(s.e.bg, msg)
}

// doResume switches the conversation to another Claude session (on the
// loop); the next message resumes it.
func (s *session) doResume(id string) {
	old := s.sessionID()
	s.closeProc()
	s.forgetSession()
	s.update(func(r *record) { r.SessionID = id })
	s.log.Info("Session switched by !resume", "old_session_id", old, "session_id", id)
	s.send(s.e.bg, fmt.Sprintf("Switched to session %s: your next message resumes it.", id))
}

func (e *Engine) resumeCommand(ctx context.Context, s *session, m platform.Message, arg string) {
	if arg == "" {
		s.send(ctx, "Usage: !resume <n|id>, with n from !sessions.")
		return
	}
	s.mu.Lock()
	list := s.listed
	s.mu.Unlock()
	if list == nil {
		var err error
		if list, err = e.tx.List(s.ws.Path); err != nil {
			s.log.Warn("Listing sessions failed", "error", err)
		}
	}
	id := ""
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(list) {
			s.send(ctx, fmt.Sprintf("There is no session %d; send !sessions for the list.", n))
			return
		}
		id = list[n-1].SessionID
	} else {
		for _, si := range list {
			if si.SessionID == arg {
				id = arg
			}
		}
		if id == "" {
			// An id from outside this workspace's list can reach another
			// project's history: admins only.
			if !s.binding.admin(m.UserID) {
				s.send(ctx, "Only an admin can resume a session that is not in this workspace's !sessions list.")
				return
			}
			// The id becomes an argument of claude, whose --resume takes
			// an optional value: anything but a UUID could pass for a flag.
			if !agentproc.ValidSessionID(arg) {
				s.send(ctx, "That is not a Claude Code session id: give a number from !sessions or a session UUID.")
				return
			}
			id = arg
		}
	}
	if s.busy() {
		s.send(ctx, "Switching after the current turn and the messages queued before this command.")
	}
	s.enqueueCommand(ctx, workItem{kind: itemResume, msg: m, resumeID: id})
}

func (e *Engine) listSessions(s *session) string {
	list, err := e.tx.List(s.ws.Path)
	if err != nil {
		s.log.Warn("Listing sessions failed", "error", err)
		return "Could not list sessions: " + err.Error()
	}
	s.mu.Lock()
	s.listed = list
	current := s.rec.SessionID
	s.mu.Unlock()
	if len(list) == 0 {
		return "No Claude Code sessions in " + s.ws.Path + " yet."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions in %s (newest first):", s.ws.Path)
	const maxShown = 20
	for i, si := range list {
		if i == maxShown {
			fmt.Fprintf(&b, "\n… and %d more", len(list)-maxShown)
			break
		}
		mark := ""
		if si.SessionID == current {
			mark = " (current)"
		}
		fmt.Fprintf(&b, "\n%d. %s%s — %s, %s ago — %s", i+1, si.SessionID, mark, humanSize(si.Size),
			humanAge(e.now().Sub(si.ModTime)), orDefault(quote(si.FirstPrompt, 60), "(no prompt)"))
	}
	b.WriteString("\nSend !resume <n> to switch.")
	return b.String()
}

func (e *Engine) status(s *session) string {
	s.mu.Lock()
	rec, st, qlen, proc, idleAt, pending := s.rec, s.state, len(s.queue), s.proc, s.idleAt, s.pending
	s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "State: %s", st)
	if pending != "" {
		b.WriteString(" (waiting for a permission answer)")
	}
	fmt.Fprintf(&b, "\nWorkspace: %s", s.ws.Path)
	fmt.Fprintf(&b, "\nSession: %s", orDefault(rec.SessionID, "none yet"))
	if rec.ContextTokens > 0 {
		fmt.Fprintf(&b, "\n%s", rec.figures().StatusLine())
	} else {
		b.WriteString("\nContext: no figures yet")
	}
	fmt.Fprintf(&b, "\nQueue: %d waiting", qlen)
	if proc != nil {
		fmt.Fprintf(&b, "\nProcess: alive, pid %d", proc.Pid())
		if st == stateIdle {
			fmt.Fprintf(&b, "\nIdle: %s", humanAge(e.now().Sub(idleAt)))
		}
	} else {
		b.WriteString("\nProcess: not running")
	}
	if !rec.LastActivity.IsZero() {
		fmt.Fprintf(&b, "\nLast turn: %s ago", humanAge(e.now().Sub(rec.LastActivity)))
	}
	fmt.Fprintf(&b, "\nModel: %s", e.modelLine(rec))
	fmt.Fprintf(&b, "\nPermission mode: %s", e.modeOf(rec))
	fmt.Fprintf(&b, "\nCost: $%.4f", rec.TotalCostUSD)
	if st, ok := s.chat().(platform.Statuser); ok {
		fmt.Fprintf(&b, "\nPlatform: %s", st.Status())
	}
	return b.String()
}

// btw answers a side question from a fork of the current session, in its
// own process, while the main session goes on; the main history is left
// unchanged because the fork writes to a new session.
func (e *Engine) btw(ctx context.Context, s *session, m platform.Message, question string) {
	if question == "" {
		s.send(ctx, "Usage: !btw <question>")
		return
	}
	id := s.sessionID()
	if id == "" {
		s.send(ctx, "There is no session to ask about yet: send a normal message first.")
		return
	}
	e.mu.Lock()
	if e.shutting {
		e.mu.Unlock()
		s.send(ctx, shutdownText)
		return
	}
	e.wg.Add(1)
	e.busy++
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer e.addBusy(-1)
		s.sideQuestion(id, question)
	}()
}

const sidePrefix = "(side answer) "

func (s *session) sideQuestion(id, question string) {
	e := s.e
	if err := e.acquireSlot(e.bg, s.ws.Path, s, func() { s.send(e.bg, sidePrefix+noticeWaiting) }, nil, nil); err != nil {
		s.send(e.bg, sidePrefix+"not answered: cc-connect is shutting down.")
		return
	}
	defer e.slots.release(s.ws.Path)
	s.log.Info("Starting a side-question process", "cwd", s.ws.Path, "session_id", id, "fork", true)
	// The conversation's !model applies; its !mode does not, since a side
	// question must not run tools that change the workspace.
	model, _ := s.spawnSettings()
	proc, err := e.spawn(e.bg, e.opts.Agent, agentproc.StartOptions{Dir: s.ws.Path, ResumeID: id, Fork: true, Model: model}, s.log)
	if err != nil {
		s.log.Error("Starting the side-question process failed", "session_id", id, "error", err)
		s.send(e.bg, sidePrefix+"could not start: "+err.Error())
		return
	}
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
	var text strings.Builder
	var res *agentproc.Result
	tr, err := proc.StartTurn(e.bg, agentproc.UserMessage{Text: question})
	if err == nil {
		res, err = waitTurn(tr, func(ev agentproc.Event) {
			switch ev := ev.(type) {
			case agentproc.AssistantText:
				if !ev.Synthetic {
					text.WriteString(ev.Text)
				}
			case agentproc.PermissionRequest:
				// A side question must not change the workspace. Answering
				// only writes to stdin, so it does not block the reader long.
				if err := proc.RespondPermission(e.bg, ev.RequestID, agentproc.PermissionDecision{
					Behavior: agentproc.Deny, Message: "Side questions cannot use tools that need approval; answer from the conversation."}); err != nil {
					s.log.Debug("Denying a side question's tool failed", "error", err)
				}
			}
		})
	}
	close(done)
	<-stopped
	if cerr := proc.Close(e.bg); cerr != nil {
		s.log.Debug("Side-question process closed with error", "error", cerr)
	}
	if err != nil {
		var exitErr *agentproc.ExitError
		msg := err.Error()
		if errors.As(err, &exitErr) {
			msg = fmt.Sprintf("the agent process %s: %s", exitDescription(exitErr), orNone(lastLine(exitErr.StderrTail)))
		}
		s.log.Error("Side question failed", "session_id", id, "error", err)
		s.send(e.bg, sidePrefix+"failed: "+msg)
		return
	}
	answer := res.Text
	if answer == "" {
		answer = text.String()
	}
	answer, _, _ = ctxindicator.StripSelfReport(answer)
	if strings.TrimSpace(answer) == "" {
		answer = "(no reply text)"
	}
	s.send(e.bg, sidePrefix+answer)
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	}
}

// journaledCommand reports whether a command goes through the FIFO, and so
// through the journal (its entry makes its id seen); the others act at
// once and journal only their id.
func journaledCommand(name string) bool {
	return name == "new" || name == "resume" || name == "compact"
}
