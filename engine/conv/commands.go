package conv

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/schedule"
)

// The chat commands. Each is one entry of the registry: its name, usage
// and help line, who may run it, when it acts, and its handler. The
// accept path (accept.go), the control lane (session.go), !help and the
// docs' command lists (a test holds them to it) all read the registry.

// timing is when a command acts.
type timing int

const (
	// atOnce: through the control lane, on the conversation's goroutine,
	// while a turn runs too; only its message's id is journaled.
	atOnce timing = iota
	// inOrder: at the head of the queue, after the messages sent before
	// it, journaled like a message (!new, !resume).
	inOrder
	// asTurn: as a turn of its own (!compact).
	asTurn
)

// call is one command as its handler gets it.
type call struct {
	name string
	msg  platform.Message
	args string
	it   workItem // an inOrder command's item, as journaled
}

// user names the sender as the chat shows them.
func (c call) user() string { return orDefault(c.msg.UserName, c.msg.UserID) }

// command is one entry of the registry.
type command struct {
	name  string
	usage string // what follows the name in !help: "<question>"
	// help is !help's line; "" lists the command on the line of the entry
	// before it (!deny with !allow).
	help string
	// who may run it; whoFor, when set, decides by the arguments instead
	// (!schedules: listing is anyone's, pausing the admins').
	who    right
	whoFor func(args string) right
	// refused is what the sender is told when the gate refuses them, why
	// being its reason.
	refused func(c call, why string) string
	when    timing

	// The handler, by timing. An atOnce command either has control, the
	// control a running turn serves (!stop, the answers), or run, run on
	// the conversation's goroutine as the control lane reaches it. An
	// inOrder command has queue, which makes its item on the accept path
	// (or refuses it: its notice queued, the reason returned), and run,
	// run at the head of the queue; an asTurn command has queue alone.
	control func(c call) control
	queue   func(s *Conversation, c call) (workItem, string)
	run     func(s *Conversation, c call)
}

// right is who may run the command with args.
func (c *command) right(args string) right {
	if c.whoFor != nil {
		return c.whoFor(args)
	}
	return c.who
}

// registry is the commands, in !help's order; it is filled by init, since
// !help reads it.
var registry []command

func init() {
	registry = []command{
		{name: "new", help: "forget this conversation's session and start fresh", when: inOrder, queue: queueNew, run: runNew},
		{name: "btw", usage: "<question>", help: "ask a side question about the current session, read-only; its history stays unchanged", run: runBtw},
		// The session goroutine stops a running !sh first, then the turn.
		{name: "stop", usage: "[all]", help: "stop the running turn (queued messages stay queued); with all, Claude's background tasks too",
			control: func(c call) control { return control{kind: ctrlStop, args: strings.TrimSpace(c.args)} }},
		{name: "status", help: "state, workspace, session, context use, queue, process, what the last turn changed", run: runStatus},
		{name: "sessions", help: "this workspace's Claude Code sessions, newest first", run: runSessions},
		{name: "resume", usage: "<n|id>", help: "switch to a listed session", when: inOrder, queue: queueResume, run: runResume},
		{name: "allow", usage: "[always]", help: "answer the pending permission request", who: approvers, refused: notApprover, control: answerControl},
		{name: "deny", who: approvers, refused: notApprover, control: answerControl},
		{name: "skip", help: "dismiss Claude's pending questions (a reply in the thread answers them)", who: approvers, refused: notApprover, control: answerControl},
		{name: "steer", usage: "<message>", help: "send a message into the running turn (as a turn of its own when none runs)", when: asTurn, queue: queueFollow(followSteer)},
		{name: "queue", usage: "<message>", help: "send a message that waits for the running turn to end", when: asTurn, queue: queueFollow(followQueue)},
		{name: "compact", usage: "[instructions]", help: "compact the conversation now (when the context figure is high)", when: asTurn, queue: queueCompact},
		{name: "diff", help: "post the diff of the last turn's file changes, as a file", run: func(s *Conversation, _ call) { s.tr.ck.diff() }},
		{name: "revert", help: "approvers: undo the file changes of the last turn (once; only the last turn)",
			who: approvers, refused: revertRefused, run: runRevert},
		{name: "model", usage: "[name]", help: "show or set this conversation's model", run: runModel},
		{name: "mode", usage: "[mode]", help: "show or set the permission mode (within the modes the admin allows)", run: runMode},
		{name: "sh", usage: "<command>", help: "admins, where enabled: run a shell command in the workspace; Claude hears of it next turn",
			who: shellAdmins, refused: shellRefused, run: runShell},
		{name: "schedules", usage: "[pause|resume NAME]", help: "this channel's schedules and their next run; admins pause and resume them",
			whoFor: schedulesRight, refused: schedulesRefused, run: runSchedules},
		{name: "console", help: "get a one-time link to the console in the browser, by direct message", run: runConsole},
		{name: "help", help: "this list", run: func(s *Conversation, _ call) { s.chat.send(helpText()) }},
	}
}

// unknownCommand answers a "!name" no entry has.
var unknownCommand = command{run: func(s *Conversation, c call) { s.chat.send(render.UnknownCommand(c.name)) }}

// lookup is the entry of a command name (lower case); nil when none.
func lookup(name string) *command {
	for i := range registry {
		if registry[i].name == name {
			return &registry[i]
		}
	}
	return nil
}

// helpText is !help.
func helpText() string {
	cmds := make([]render.Command, len(registry))
	for i, c := range registry {
		cmds[i] = render.Command{Name: c.name, Usage: c.usage, Help: c.help}
	}
	return render.Help(cmds)
}

// parseCommand splits "!name args" (or "/name args" for a command of the
// registry, so that Claude Code's own slash commands, /context, reach it).
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
	if text[0] == '/' && lookup(name) == nil {
		return "", "", false
	}
	args = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text[1:]), fields[0]))
	return name, args, true
}

// inOrderKinds are the journal's item kinds of the inOrder commands.
var inOrderKinds = map[itemKind]string{itemNew: "new", itemResume: "resume"}

// runInOrder runs the handler of an inOrder command's item at the head of
// the queue (session goroutine).
func runInOrder(s *Conversation, it workItem) {
	name := inOrderKinds[it.kind]
	lookup(name).run(s, call{name: name, msg: it.msg, args: it.resumeArg, it: it})
}

// notApprover is the refusal of a permission answer.
func notApprover(c call, _ string) string { return render.NotApprover(c.user()) }

// answerControl answers the pending permission request, question or plan
// (!allow [always|edits], !deny, !skip).
func answerControl(c call) control {
	choice := platform.ChoiceDeny
	switch {
	case c.name == "skip":
		choice = platform.ChoiceDismiss
	case c.name == "allow" && strings.EqualFold(c.args, "always"):
		choice = platform.ChoiceAlwaysAllow
	case c.name == "allow" && strings.EqualFold(c.args, "edits"):
		choice = platform.ChoicePlanAcceptEdits // a plan, approved into acceptEdits
	case c.name == "allow":
		choice = platform.ChoiceAllow
	}
	return control{kind: ctrlAnswer, choice: choice, userName: c.user(), userID: c.msg.UserID}
}

// queueNew queues !new behind what was sent before it.
func queueNew(s *Conversation, c call) (workItem, string) {
	if _, _, busy := s.mb.snapshot(); busy {
		s.notice(render.NewAfterTurn)
	}
	return workItem{kind: itemNew, msg: c.msg}, ""
}

// runNew closes the process and forgets the session id.
func runNew(s *Conversation, _ call) {
	old := s.rb.sessionID()
	s.agent.Close()
	s.rb.forget()
	s.log.Info("Session reset by !new", "old_session_id", old)
	s.chat.send(render.NewSession(old, newWorktree(s.e, s.rb, s.key, s.binding.Workspace)))
}

// queueResume queues !resume behind what was sent before it. Which
// session n or the id names is settled when it runs, in order: listing
// the workspace's sessions is not the accept path's.
func queueResume(s *Conversation, c call) (workItem, string) {
	if c.args == "" {
		s.notice(render.ResumeUsage)
		return workItem{}, "usage"
	}
	if _, _, busy := s.mb.snapshot(); busy {
		s.notice(render.ResumeAfterTurn)
	}
	return workItem{kind: itemResume, msg: c.msg, resumeArg: c.args}, ""
}

// runResume switches the conversation to another Claude session; the next
// message resumes it. What the user typed (a number from !sessions, or an
// id) is settled now, in order with the turns before it; a recovered item
// may carry the id itself.
func runResume(s *Conversation, c call) {
	id := c.it.resumeID
	if c.args != "" {
		var listed bool
		var why string
		id, listed, why = s.sessions.find(s.e.host.Transcripts(), s.ws, c.args, s.log)
		switch {
		case why != "" || listed:
		// An id from outside this workspace's list can reach another
		// project's history: admins only.
		case s.gate.refuse(c.msg.UserID, c.msg.UserName, admins, "command", c.name) != "":
			why = render.ResumeNotAdmin
		// The id becomes an argument of claude, whose --resume takes an
		// optional value: anything but a UUID could pass for a flag.
		case !agentproc.ValidSessionID(id):
			why = render.ResumeBadID
		}
		if why != "" {
			s.chat.send(why)
			return
		}
	}
	if !agentproc.ValidSessionID(id) {
		// Only a journal edited by hand gets here: the checks above hold
		// every id a user typed.
		s.log.Error("Refusing to resume a session id that is not a UUID", "resume_id", id)
		s.chat.send(render.ResumeNotAnID)
		return
	}
	old := s.rb.sessionID()
	s.agent.Close()
	s.rb.forget()
	s.rb.update(func(r *Record) { r.SessionID = id })
	s.log.Info("Session switched by !resume", "old_session_id", old, "session_id", id)
	s.chat.send(render.Resumed(id))
}

// queueCompact queues !compact as a turn: the CLI's /compact with the
// user's instructions.
func queueCompact(s *Conversation, c call) (workItem, string) {
	if s.rb.sessionID() == "" {
		s.notice(render.NothingToCompact)
		return workItem{}, "nothing to compact"
	}
	m := c.msg
	m.Text = compactText(c.args)
	return workItem{kind: itemTurn, msg: m}, ""
}

// queueFollow makes the turn of a !steer or !queue: the message after the
// command, which goes into the running turn or waits for it as follow
// says, whatever the binding's follow_ups.
func queueFollow(follow string) func(s *Conversation, c call) (workItem, string) {
	return func(s *Conversation, c call) (workItem, string) {
		text := strings.TrimSpace(c.args)
		if text == "" {
			s.notice(render.FollowUsage(c.name))
			return workItem{}, "no message"
		}
		m := c.msg
		m.Text = text
		return workItem{kind: itemTurn, msg: m, files: filesOf(m), follow: follow}, ""
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

// sessionList is the workspace's Claude Code sessions as !sessions last
// listed them, for !resume <n>. Only the conversation's goroutine uses it.
type sessionList struct {
	listed []procs.SessionInfo
}

// read lists the workspace's sessions, newest first, keeps the list for
// !resume <n>, and counts the transcripts left out (resumable).
func (l *sessionList) read(t procs.Transcripts, ws string) (list []procs.SessionInfo, bad int, err error) {
	all, err := t.List(ws)
	if err != nil {
		return nil, 0, err
	}
	list, bad = resumable(all)
	l.listed = list
	return list, bad, nil
}

// find is the session !resume <arg> names: number n of the last listing
// (or a fresh one), or an id; listed is false for an id outside the
// workspace's list. why, when set, is what to tell the user instead.
func (l *sessionList) find(t procs.Transcripts, ws, arg string, log *slog.Logger) (id string, listed bool, why string) {
	list := l.listed
	if list == nil {
		all, err := t.List(ws)
		if err != nil {
			log.Warn("Listing sessions failed", "error", err)
		}
		list, _ = resumable(all)
	}
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(list) {
			return "", false, render.NoSuchSession(n)
		}
		return list[n-1].SessionID, true, ""
	}
	for _, si := range list {
		if si.SessionID == arg {
			return arg, true, ""
		}
	}
	return arg, false, ""
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

// runSessions lists the workspace's Claude Code sessions, newest first,
// and keeps the list for !resume <n>.
func runSessions(s *Conversation, _ call) {
	list, bad, err := s.sessions.read(s.e.host.Transcripts(), s.ws)
	if err != nil {
		s.log.Warn("Listing sessions failed", "error", err)
		s.chat.send(render.SessionsFailed(s.forChat(err.Error())))
		return
	}
	if bad > 0 {
		s.log.Warn("Transcripts whose name is not a session id left out of !sessions", "count", bad)
	}
	current := s.rb.sessionID()
	shown := make([]render.Session, len(list))
	for i, si := range list {
		shown[i] = render.Session{ID: si.SessionID, Current: si.SessionID == current, Size: si.Size, ModTime: si.ModTime, FirstPrompt: si.FirstPrompt}
	}
	s.chat.send(render.SessionsText(render.Sessions{Now: s.e.now(), Workspace: s.ws, List: shown, Skipped: bad}))
}

// runStatus is !status: what the conversation is doing and what it holds.
func runStatus(s *Conversation, c call) {
	rec := s.rb.get()
	st, qlen, _ := s.mb.snapshot()
	b := s.liveBinding()
	v := render.Status{Now: s.e.now(), State: string(st), LoginFailed: rec.LoginFailed, Workspace: s.ws, SessionID: rec.SessionID, Queue: qlen,
		LastTurn: rec.LastActivity, Model: s.e.cfg.modelLine(rec, b), Mode: s.e.cfg.modeOf(rec, b),
		CostUSD: rec.TotalCostUSD, People: speakers(rec), Platform: s.chat.platformStatus(),
		Extra: []string{worktreeStatus(s.e.bg, s.binding.Workspace, s.e.opts.Agent, s.e.opts.StateDir, rec),
			s.tr.purse.statusLine(c.msg.UserID), render.BackgroundRunning(background(s.agent.Live())), s.tr.limit.status()},
		Cluster: s.e.host.ClusterStatus()}
	if rec.ContextTokens > 0 {
		v.Context = rec.figures().StatusLine()
	}
	// The record's note of the last turn, as !revert reads it; one of an
	// earlier session (!new, !resume) is not this session's.
	if lt := s.tr.ck.last(); len(lt.Files) > 0 && lt.SessionID == rec.SessionID {
		v.Changes = render.TurnChanges{Files: lt.Files, Added: lt.Added, Removed: lt.Removed}
		v.Revert = revertRefusal(revertStateOf(s), "")
	}
	if proc := s.agent.Live(); proc != nil {
		v.Pid = proc.Pid()
		v.IdleSince, _ = s.agent.IdleSince()
	}
	s.chat.send(render.StatusText(v))
}

// runBtw answers a side question from a fork of the current session, in
// its own process, while the main session goes on (btw.go).
func runBtw(s *Conversation, c call) {
	switch {
	case c.args == "":
		s.chat.send(render.BtwUsage)
		return
	case s.rb.sessionID() == "":
		s.chat.send(render.BtwNoSession)
		return
	}
	q := &sideQuestion{e: s.e, key: s.key, id: s.rb.sessionID(), question: c.args, user: c.msg.UserID,
		ws: s.ws, // read here: a worktree move changes it on this goroutine (worktree.go)
		dm: s.tr.dm, rb: s.rb, purse: s.tr.purse, chat: s.chat, log: s.log, binding: s.liveBinding, forChat: s.forChat}
	if !spawnWork(s.e, q.run) {
		s.chat.send(render.ShutdownText)
	}
}

// runShell runs an admin's !sh in the workspace (shell.go); the gate let
// only an admin through, where the binding allows it.
func runShell(s *Conversation, c call) {
	if strings.TrimSpace(c.args) == "" {
		s.chat.send(render.ShellUsage)
		return
	}
	sh := &shellRun{e: s.e, slot: &s.shell, msg: c.msg, command: c.args, ws: s.ws, rb: s.rb, chat: s.chat, log: s.log, forChat: s.forChat, act: s.act}
	sh.start()
}

// shellRefused is the refusal of !sh: off here, or not an admin.
func shellRefused(_ call, why string) string {
	if why == "shell is off for this binding" {
		return render.ShellOffText
	}
	return render.ShellNotAdminText
}

// runSchedules is !schedules [pause|resume NAME]: this channel's
// schedules; the gate let only an admin pause or resume one.
func runSchedules(s *Conversation, c call) {
	sc := s.e.host.Schedules()
	if sc == nil {
		s.chat.send(render.NoSchedules)
		return
	}
	// In a cluster the pauses are read and written in its bucket
	// (schedule.Pauses), bounded there.
	s.chat.send(sc.Chat(s.e.bg, c.args, schedule.Asker{Platform: s.to.Platform, Channel: s.to.Channel, UserID: c.msg.UserID}))
}

// schedulesChange reads "pause NAME" or "resume NAME".
func schedulesChange(args string) (verb string, ok bool) {
	f := strings.Fields(args)
	if len(f) != 2 {
		return "", false
	}
	verb = strings.ToLower(f[0])
	return verb, verb == "pause" || verb == "resume"
}

// schedulesRight: the listing is anyone's, a pause or a resume the
// binding's admins'.
func schedulesRight(args string) right {
	if _, ok := schedulesChange(args); ok {
		return admins
	}
	return anyone
}

func schedulesRefused(c call, _ string) string {
	verb, _ := schedulesChange(c.args)
	return render.SchedulesNotAdmin(verb)
}

// runModel shows or sets the model of this conversation.
func runModel(s *Conversation, c call) {
	st := s.e.cfg
	arg := c.args
	if arg == "" {
		s.chat.send(render.ModelShown(st.modelLine(s.rb.get(), s.liveBinding())))
		return
	}
	if !validSetting(arg) {
		s.chat.send(render.NotAModel(arg))
		return
	}
	override := arg
	live := arg
	if strings.EqualFold(arg, "default") {
		override = ""
		live = orDefault(st.agentConfig(s.liveBinding(), false).Model, "default")
	}
	err := setLive(s.e.bg, s.rb, s.agent, s.log, func(r *Record) *string { return &r.ModelOverride }, override,
		func(ctx context.Context, c procs.Controller) error { return c.SetModel(ctx, live) })
	if err != nil {
		s.log.Warn("Setting the model failed", "model", arg, "error", err)
		s.chat.send(render.ModelRefused(s.forChat(controlMessage(err))))
		return
	}
	s.log.Info("Model set for the conversation", "model", orDefault(override, "configured default"))
	if override == "" {
		s.chat.send(render.ModelDefault(st.agentConfig(s.liveBinding(), false).Model))
		return
	}
	s.chat.send(render.ModelSet(override))
}

// runMode shows or sets the permission mode of this conversation, within
// the modes the config allows.
func runMode(s *Conversation, c call) {
	st := s.e.cfg
	arg := c.args
	allowed := st.modesFor(s.liveBinding())
	if arg == "" {
		s.chat.send(render.ModeShown(st.modeOf(s.rb.get(), s.liveBinding()), allowed))
		return
	}
	i := slices.IndexFunc(allowed, func(m string) bool { return strings.EqualFold(m, arg) })
	if i < 0 {
		s.chat.send(render.ModeNotAllowed(arg, allowed))
		return
	}
	mode := allowed[i]
	err := setLive(s.e.bg, s.rb, s.agent, s.log, func(r *Record) *string { return &r.ModeOverride }, mode,
		func(ctx context.Context, c procs.Controller) error { return c.SetPermissionMode(ctx, mode) })
	if err != nil {
		s.log.Warn("Setting the permission mode failed", "mode", mode, "error", err)
		s.chat.send(render.ModeRefused(s.forChat(controlMessage(err))))
		return
	}
	s.log.Info("Permission mode set for the conversation", "mode", mode)
	s.chat.send(render.ModeSet(mode))
}

// spawnWork runs f on a goroutine the Set waits for at shutdown, counted
// as outstanding work (WaitIdle); false, f not run, once the Set stops.
func spawnWork(e *Set, f func()) bool {
	e.mu.Lock()
	if e.shutting {
		e.mu.Unlock()
		return false
	}
	e.wg.Add(1)
	e.busy.add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		defer e.busy.add(-1)
		f()
	}()
	return true
}

// runConsole sends the person a one-time sign-in link to the console by
// direct message (never in a channel, where others would see it): in
// the DM itself when that is where they asked, else through the
// adapter's DirectMessenger. The link is issued only once it can be
// delivered.
func runConsole(s *Conversation, c call) {
	issue := s.e.opts.ConsoleLinks
	if issue == nil {
		s.chat.send(render.ConsoleOff)
		return
	}
	dm, canDM := s.chat.chat().(platform.DirectMessenger)
	if !c.msg.IsDM && !canDM {
		s.chat.send(render.ConsoleNeedsDM)
		return
	}
	link, err := issue(s.to.Platform, c.msg.UserID, c.user())
	if err != nil {
		s.log.Warn("Issuing a console link failed", "user_id", c.msg.UserID, "error", err)
		s.chat.send(render.ConsoleFailed)
		return
	}
	text := render.ConsoleLink(link)
	if c.msg.IsDM {
		s.chat.send(text)
		return
	}
	ctx, cancel := context.WithTimeout(s.e.bg, consoleDMTimeout)
	defer cancel()
	if _, err := dm.SendDirect(ctx, c.msg.UserID, text); err != nil {
		s.log.Warn("Sending the console link by direct message failed", "user_id", c.msg.UserID, "error", err)
		if errors.Is(err, platform.ErrNoDirectChat) {
			s.chat.send(render.ConsoleNoDirectChat)
			return
		}
		s.chat.send(render.ConsoleFailed)
		return
	}
	s.log.Info("Console link sent by direct message", "user_id", c.msg.UserID)
	s.chat.send(render.ConsoleSent(c.user()))
}

// consoleDMTimeout bounds the direct message of !console.
const consoleDMTimeout = 30 * time.Second

// revertRefused is the refusal of !revert (or its button) to someone who
// may not approve.
func revertRefused(c call, _ string) string { return render.RevertNotApprover(c.user()) }

// runRevert undoes the file changes of the last turn (checkpoint.go): not
// while a turn runs, only the last turn (a button names its turn in the
// arguments), once. Without a live process it starts one on the turn's
// session, whose checkpoints the CLI kept.
func runRevert(s *Conversation, c call) {
	if why := revertRefusal(revertStateOf(s), strings.TrimSpace(c.args)); why != "" {
		// Published too, so that a press from the console shows the
		// same reason as the thread.
		s.act.record(activity.Event{Kind: activity.Reverted, User: c.msg.UserID, UserName: c.msg.UserName,
			Request: c.msg.ID, Outcome: "refused: " + why})
		s.chat.send(why)
		return
	}
	if err := s.tr.ensureProcess(); err != nil {
		s.log.Warn("Starting Claude to revert the last turn failed", "error", err)
		s.chat.send(render.RevertFailed(s.forChat(err.Error())))
		return
	}
	m := c.msg
	m.UserName = c.user()
	s.tr.ck.revert(s.agent.Live(), m, s.e.now())
	s.agent.MarkIdle()
}

// revertState is what decides whether the last turn can be reverted now:
// whether a turn runs, the binding's checkpoints in force, the record's
// note of the last turn and the conversation's Claude session.
type revertState struct {
	busy, on bool
	last     lastTurn
	session  string
}

// revertStateOf is s's revertState as it is now; its parts are each read
// under their own lock, so any goroutine may ask.
func revertStateOf(s *Conversation) revertState {
	st, _, _ := s.mb.snapshot()
	return revertState{busy: st != stateIdle, on: s.liveBinding().CheckpointsOn(), last: s.tr.ck.last(), session: s.rb.sessionID()}
}

// revertRefusal is why !revert of turn arg ("" for the last) is refused
// now, "" when it would go ahead: what !revert answers, what !status says
// of the last turn's changes, and what the console shows beside its
// Revert button (LastChanges).
func revertRefusal(st revertState, arg string) string {
	if st.busy {
		return render.RevertBusy
	}
	if !st.on {
		return render.RevertOff
	}
	return st.last.refusal(arg, st.session)
}

// RevertPress is the "!revert <turn>" a press of a turn summary's Revert
// button stands for, sent by its presser into the summary's thread; false
// for any other press. The engine accepts it as that person's message, so
// that the allow list, the command's right (approvers) and the thread's
// conversation apply as to a typed !revert.
func RevertPress(act platform.Action) (platform.Message, bool) {
	uuid, ok := strings.CutPrefix(act.RequestID, revertRequest)
	if !ok || act.Choice != platform.ChoiceRevert {
		return platform.Message{}, false
	}
	to := act.Target
	to.MessageID = ""
	id := RevertPressID(orDefault(act.ID, newUUID()))
	return platform.Message{ID: id, Target: to, UserID: act.UserID, UserName: act.UserName,
		Text: "!revert " + uuid, Mentioned: true, Received: time.Now()}, true
}
