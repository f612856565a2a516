package conv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/platform"
)

const helpText = `Commands (prefix ! or /):
!new — forget this conversation's session and start fresh
!btw <question> — ask a side question about the current session, read-only; its history stays unchanged
!stop — stop the running turn (queued messages stay queued)
!status — state, workspace, session, context use, queue, process
!sessions — this workspace's Claude Code sessions, newest first
!resume <n|id> — switch to a listed session
!allow [always] / !deny — answer the pending permission request
!skip — dismiss Claude's pending questions (a reply in the thread answers them)
!compact [instructions] — compact the conversation now (when the context figure is high)
!model [name] — show or set this conversation's model
!mode [mode] — show or set the permission mode (within the modes the admin allows)
!sh <command> — admins, where enabled: run a shell command in the workspace; Claude hears of it next turn
!schedules [pause|resume NAME] — this channel's schedules and their next run; admins pause and resume them
!help — this list`

// commands are the known command names; "/x" is a command only when x is
// one of them, so Claude Code's other slash commands (/context) reach it.
var commands = map[string]bool{
	"new": true, "btw": true, "stop": true, "status": true, "sessions": true,
	"resume": true, "allow": true, "deny": true, "help": true,
	"compact": true, "model": true, "mode": true, "sh": true, "skip": true, "schedules": true,
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

// command runs a command that acts at once, on the session goroutine (the
// accept path queued it in the control lane, after journaling its id).
// !new, !resume and !compact go through the FIFO instead, so that they
// apply after the turns sent before them (accept.go); !stop and the
// permission answers are controls of their own.
func (s *Conversation) command(m platform.Message, name, args string) {
	switch name {
	case "help":
		s.chat.send(helpText)
	case "btw":
		s.btw(m, args)
	case "sh":
		s.shellCommand(m, args)
	case "model":
		s.modelCommand(args)
	case "mode":
		s.modeCommand(args)
	case "status":
		s.chat.send(s.status() + s.unattendedStatus(m.UserID) + s.e.host.ClusterStatus())
	case "sessions":
		s.chat.send(s.listSessions())
	case "schedules":
		s.schedulesCommand(m, args) // trigger.go
	default:
		s.chat.send(fmt.Sprintf("Unknown command !%s. Send !help for the list.", name))
	}
}

// compactText is the turn a !compact queues: the CLI's /compact with the
// user's instructions, if any.
func compactText(instructions string) string {
	text := compactCommand
	if instructions = strings.Join(strings.Fields(instructions), " "); instructions != "" {
		text += " " + instructions
	}
	return text
}

// doNew closes the process and forgets the session id.
func (s *Conversation) doNew() {
	old := s.rb.sessionID()
	s.agent.Close()
	s.rb.forget()
	s.log.Info("Session reset by !new", "old_session_id", old)
	msg := "Started a new session: your next message begins with a fresh context."
	if old != "" {
		msg += fmt.Sprintf(" (The previous session %s stays on disk; !sessions lists it.)", old)
	}
	msg += s.newWorktree() // worktree.go
	s.chat.send(msg)
}

// doResume switches the conversation to another Claude session; the next
// message resumes it. What the user typed (a number from !sessions, or an
// id) is settled now, in order with the turns before it.
func (s *Conversation) doResume(it workItem) {
	id := it.resumeID
	if it.resumeArg != "" {
		var why string
		if id, why = s.resolveResume(it.msg, it.resumeArg); id == "" {
			s.chat.send(why)
			return
		}
	}
	if !agentproc.ValidSessionID(id) {
		// Only a journal edited by hand gets here: resolveResume checks.
		s.log.Error("Refusing to resume a session id that is not a UUID", "resume_id", id)
		s.chat.send("That is not a Claude Code session id, so the conversation keeps its session.")
		return
	}
	old := s.rb.sessionID()
	s.agent.Close()
	s.rb.forget()
	s.rb.update(func(r *Record) { r.SessionID = id })
	s.log.Info("Session switched by !resume", "old_session_id", old, "session_id", id)
	s.chat.send(fmt.Sprintf("Switched to session %s: your next message resumes it.", id))
}

// resolveResume finds the session !resume <arg> names: number n of the last
// !sessions listing (or a fresh one), or an id of this workspace's list,
// or, for an admin, any session UUID. It returns "" and what to tell the
// user when there is none.
func (s *Conversation) resolveResume(m platform.Message, arg string) (id, why string) {
	list := s.listed
	if list == nil {
		all, err := s.e.host.Transcripts().List(s.ws)
		if err != nil {
			s.log.Warn("Listing sessions failed", "error", err)
		}
		list, _ = resumable(all)
	}
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(list) {
			return "", fmt.Sprintf("There is no session %d; send !sessions for the list.", n)
		}
		return list[n-1].SessionID, ""
	}
	for _, si := range list {
		if si.SessionID == arg {
			return arg, ""
		}
	}
	// An id from outside this workspace's list can reach another project's
	// history: admins only.
	if !s.liveBinding().Admin(m.UserID) {
		return "", "Only an admin can resume a session that is not in this workspace's !sessions list."
	}
	// The id becomes an argument of claude, whose --resume takes an
	// optional value: anything but a UUID could pass for a flag.
	if !agentproc.ValidSessionID(arg) {
		return "", "That is not a Claude Code session id: give a number from !sessions or a session UUID."
	}
	return arg, ""
}

// resumable keeps the sessions whose id may be resumed, and counts the
// transcripts left out because their name is not a session id.
func resumable(all []procs.SessionInfo) (list []procs.SessionInfo, bad int) {
	for _, si := range all {
		if si.BadID || !agentproc.ValidSessionID(si.SessionID) {
			bad++
			continue
		}
		list = append(list, si)
	}
	return list, bad
}

// listSessions lists the workspace's Claude Code sessions, newest first,
// and keeps the list for !resume <n>.
func (s *Conversation) listSessions() string {
	all, err := s.e.host.Transcripts().List(s.ws)
	if err != nil {
		s.log.Warn("Listing sessions failed", "error", err)
		return "Could not list sessions: " + s.forChat(err.Error())
	}
	list, bad := resumable(all)
	if bad > 0 {
		s.log.Warn("Transcripts whose name is not a session id left out of !sessions", "count", bad)
	}
	s.listed = list
	current := s.rb.sessionID()
	skipped := ""
	if bad > 0 {
		skipped = fmt.Sprintf("\n(%d transcript file(s) whose name is not a Claude Code session id were left out; they cannot be resumed.)", bad)
	}
	if len(list) == 0 {
		return "No Claude Code sessions in " + s.ws + " yet." + skipped
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Sessions in %s (newest first):", s.ws)
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
			humanAge(s.e.now().Sub(si.ModTime)), orDefault(Quote(si.FirstPrompt, 60), "(no prompt)"))
	}
	b.WriteString("\nSend !resume <n> to switch.")
	b.WriteString(skipped)
	return b.String()
}

// status is !status: what the conversation is doing and what it holds.
func (s *Conversation) status() string {
	e := s.e
	rec := s.rb.get()
	st, qlen, _ := s.mb.snapshot()
	proc := s.agent.Live()
	idleAt, _ := s.agent.IdleSince()
	var b strings.Builder
	fmt.Fprintf(&b, "State: %s", st)
	if st == stateRequiresAction {
		b.WriteString(" (waiting for a permission answer)")
	}
	fmt.Fprintf(&b, "\nWorkspace: %s", s.ws)
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
	fmt.Fprintf(&b, "\nModel: %s", e.cfg.modelLine(rec, s.liveBinding()))
	fmt.Fprintf(&b, "\nPermission mode: %s", e.cfg.modeOf(rec, s.liveBinding()))
	fmt.Fprintf(&b, "\nCost: $%.4f", rec.TotalCostUSD)
	if who := speakers(rec); len(who) > 0 {
		fmt.Fprintf(&b, "\nPeople in this session: %s", strings.Join(who, ", "))
	}
	if st := s.chat.platformStatus(); st != "" {
		fmt.Fprintf(&b, "\nPlatform: %s", st)
	}
	return b.String()
}

// btw answers a side question from a fork of the current session, in its
// own process, while the main session goes on; the main history is left
// unchanged because the fork writes to a new session.
func (s *Conversation) btw(m platform.Message, question string) {
	e := s.e
	if question == "" {
		s.chat.send("Usage: !btw <question>")
		return
	}
	id := s.rb.sessionID()
	if id == "" {
		s.chat.send("There is no session to ask about yet: send a normal message first.")
		return
	}
	e.mu.Lock()
	if e.shutting {
		e.mu.Unlock()
		s.chat.send(ShutdownText)
		return
	}
	e.wg.Add(1)
	e.busy.add(1)
	e.mu.Unlock()
	ws := s.ws // read here: a worktree move changes it on this goroutine (worktree.go)
	go func() {
		defer e.wg.Done()
		defer e.busy.add(-1)
		s.sideQuestion(id, question, m.UserID, ws)
	}()
}

const SidePrefix = "(side answer) "

// sideQuestion answers !btw on a goroutine of its own (the engine waits
// for it): its own process on a fork of the session, its own slot.
func (s *Conversation) sideQuestion(id, question, user, ws string) {
	e := s.e
	hold, over := s.tr.purse.reserveFork(user) // spend.go
	if over != nil {
		s.log.Info("Side question refused: a spending cap is reached", "user_id", user, "error", over)
		s.chat.send(SidePrefix + over.Text(s.tr.purse.now()))
		return
	}
	defer s.tr.purse.release(hold, s.log) // frees it when no result settled it
	if err := e.acquireSlotCap(e.bg, ws, e.cfg.wsCapFor(s.liveBinding()), s.key, func() { s.chat.send(SidePrefix + NoticeWaiting) }, nil, nil); err != nil {
		s.chat.send(SidePrefix + "not answered: cc-connect is shutting down.")
		return
	}
	defer e.slots.Release(ws)
	s.log.Info("Starting a side-question process", "session_id", id, "fork", true)
	// The conversation's !model applies; its !mode and the configured
	// permission mode do not: a side question runs read-only, whatever
	// they say (agentproc.StartOptions.ReadOnly).
	model, _ := s.rb.spawnSettings()
	proc, err := e.host.Spawn(e.bg, e.cfg.agentConfig(s.liveBinding(), s.tr.dm), agentproc.StartOptions{Dir: ws, ResumeID: id, Fork: true, Model: model, ReadOnly: true}, s.log)
	if err != nil {
		s.log.Error("Starting the side-question process failed", "session_id", id, "error", err)
		s.chat.send(SidePrefix + "could not start: " + s.forChat(err.Error()))
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
	var (
		text    strings.Builder
		unsafe  string // a tool the fork was given that can change things
		killing sync.WaitGroup
		res     *agentproc.Result
	)
	tr, err := proc.StartTurn(e.bg, agentproc.UserMessage{Text: question})
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
					s.log.Error("Side-question process could change the workspace; killing it", "tool", t,
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
	killing.Wait()
	if cerr := proc.Close(e.bg); cerr != nil {
		s.log.Debug("Side-question process closed with error", "error", cerr)
	}
	if unsafe != "" {
		s.chat.send(SidePrefix + "not answered: the agent started with a tool that can change the workspace (" + unsafe + "), so it was stopped.")
		return
	}
	if err != nil {
		var exitErr *agentproc.ExitError
		msg := s.forChat(err.Error())
		if errors.As(err, &exitErr) {
			msg = fmt.Sprintf("the agent process %s: %s", exitDescription(exitErr), orNone(s.forChat(lastLine(exitErr.StderrTail))))
		}
		s.log.Error("Side question failed", "session_id", id, "error", err)
		s.chat.send(SidePrefix + "failed: " + msg)
		return
	}
	s.tr.purse.settleFork(hold, user, id, res)
	answer := res.Text
	if answer == "" {
		answer = text.String()
	}
	answer, _, _ = ctxindicator.StripSelfReport(answer)
	if strings.TrimSpace(answer) == "" {
		answer = "(no reply text)"
	}
	s.chat.send(SidePrefix + answer)
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
