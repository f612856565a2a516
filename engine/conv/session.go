package conv

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

// Conversation is one conversation (platform, channel, thread) and its Claude
// Code Conversation. Its goroutine (loop) is the only one that runs its work:
// it takes the FIFO in order, serves the control lane, and owns the agent
// process. The jobs are in parts it composes, each with its own lock and
// each readable alone:
//
//   - mb, the mailbox (mailbox.go): the FIFO and the control lane;
//   - jr, the journal (journal.go): the inbox file, one accept one fsync;
//   - rb, the record (recordbook.go): what survives a restart about it;
//   - agent, the process (agentslot.go): the live claude, its slot, lease;
//   - chat, the relay (relay.go): everything posted to the conversation;
//   - tr, the turn runner (turn.go, reply.go, recovery.go, attach.go):
//     one message as a turn, with its fallbacks;
//   - gate (rights.go): who may do what, read from the binding in force;
//   - shell (shell.go): the running !sh command; sessions, the last
//     !sessions listing (commands.go). The chat commands are the
//     registry's handlers (commands.go).
//
// Other goroutines reach a Conversation only through its mailbox (accept.go
// pushes, reload.go wakes) and read its parts' snapshots.
type Conversation struct {
	e       *Set
	key     string
	to      platform.Target // replies go here
	binding binding.Binding // as the session started; rights are read from liveBinding
	ws      string          // the workspace's normalized real path
	log     *slog.Logger

	mb    *mailbox
	jr    *journal
	rb    *recordBook
	agent *procs.Slot
	chat  *relay
	tr    *turnRunner
	gate  gate
	shell shellSlot // the running !sh command, if any (its own lock)
	act   feed      // what happens here, for the activity feed (activity.go)

	// awaitText says the running turn waits on a question or a plan's
	// feedback, which a plain reply in the thread answers (accept).
	awaitText *atomic.Bool

	// sessions is the last !sessions listing, for !resume <n>; only the
	// session goroutine touches it.
	sessions sessionList
}

// Key is the key of a conversation: its platform, channel and thread.
func Key(t platform.Target) string {
	return t.Platform + "/" + t.Channel + "/" + t.Thread
}

// defaultRetireAfter is how long a session without a live process and
// without work keeps its goroutine. Its state stays on disk, and the next
// message loads it again, so a long-running daemon does not keep one
// goroutine per thread it ever saw.
const defaultRetireAfter = 30 * time.Minute

// session returns the session of m's conversation, creating it (loading
// its record and journal) on first use and starting its goroutine. It
// reads files but posts nothing: what creating it has to tell the thread
// waits in the control lane.
func (e *Set) session(b binding.Binding, m platform.Message, a platform.Adapter) (*Conversation, error) {
	key := Key(m.Target)
	e.mu.Lock()
	if s, ok := e.sessions[key]; ok {
		e.mu.Unlock()
		return s, nil
	}
	if e.shutting {
		e.mu.Unlock()
		return nil, ErrStopped
	}
	to := m.Target
	to.MessageID = ""
	ws := b.Workspace // normalized: Host.Binding
	log := e.log.With("platform", to.Platform, "channel", to.Channel, "thread", to.Thread, "session_key", key, "workspace", ws)
	s := &Conversation{e: e, key: key, to: to, binding: b, ws: ws, log: log, awaitText: new(atomic.Bool)}
	s.gate = gate{binding: s.liveBinding, log: log}
	s.act = feed{sink: e.activity, now: e.now, key: key, to: to, binding: s.liveBinding}
	s.mb = newMailbox(e.opts.QueueLimit, e.busy.add)
	s.jr = &journal{path: InboxPath(e.opts.StateDir, key), stateDir: e.opts.StateDir, limits: e.jrs.inboxLimits(),
		seen: e.jrs.seenIDs(), now: e.now, log: log, killedAt: e.killedAt}
	s.jr.admins = func() []string { return s.liveBinding().Admins }
	s.jr.queued = func(it workItem) {
		if it.run == nil { // a run's start is published by Submit
			s.act.asked(it)
		}
	}
	if e.cluster.clustered(to.Platform) {
		s.jr.cl = newClusterLedger()
		s.jr.cl.answer = func(ctx context.Context, id string) error { return e.cluster.answer(ctx, b.Key(), to, id) }
		if e.cluster.Replies != nil {
			s.jr.cl.pending = &pendingReplies{replies: e.cluster.Replies, b: b.Key(), to: to, host: e.cluster.Host}
		}
	}
	s.rb = &recordBook{store: e.store, log: log}
	s.agent = procs.NewSlot(procs.SlotConfig{Dir: ws, StateDir: e.opts.StateDir, Grace: e.opts.ShutdownGrace, Caps: e.slots, BG: e.bg, Log: log, Now: e.now})
	s.chat = &relay{to: to, original: a, current: e.host.Chat, bg: e.bg, log: log, metrics: e.metrics}
	s.tr = &turnRunner{e: e, key: key, ws: ws, log: log, jr: s.jr, mb: s.mb, rb: s.rb, agent: s.agent, chat: s.chat,
		other: s.handleControl, lateReply: s.replyAsTurn, check: s.check,
		stopShell: func(to platform.Target) bool { return s.shell.stopFor(s.chat, to) }, binding: s.liveBinding, awaitText: s.awaitText,
		act: s.act, tail: &tail{e: e}, ho: handover{jr: s.jr, log: log}, purse: &purse{spending: e.spend, key: key, log: log,
			binding: func() (binding.Binding, bool) { return e.resolve(to.Platform, to.Channel) }}}
	s.tr.limit = &limitGate{book: e.limits, send: func(text string) { s.chat.send(text) }, log: log,
		login: func() string { return loginOf(e.cfg.agentConfig(s.liveBinding(), s.tr.dm)) }}
	s.tr.ck = &checkpoints{rb: s.rb, chat: s.chat, log: log, bg: e.bg, ws: func() string { return s.tr.ws }, forChat: s.forChat, act: s.act,
		diffPath: DiffPath(e.opts.StateDir, key)}
	if s.jr.cl != nil && e.cluster.Contexts != nil {
		s.tr.rep = &replica{contexts: e.cluster.Contexts, b: b.Key(), to: to, log: log}
	}
	if s.jr.cl != nil && e.cluster.Approvals != nil {
		s.tr.shared = &sharedApprovals{store: e.cluster.Approvals, b: b.Key(), to: to, host: e.cluster.Host, log: log, bg: e.bg,
			fence: func() Fence { return e.cluster.fence(b.Platform, b.Channel) }, stopping: e.isStopping}
	}
	s.tr.team = &team{host: e.host, cfg: e.cfg, chat: s.chat, rb: s.rb, binding: s.liveBinding, ws: func() string { return s.tr.ws },
		agentUser: e.opts.Agent.User, bg: e.bg, metrics: e.metrics, log: log}
	s.tr.att = &attacher{cfg: e.cfg, chat: s.chat, rb: s.rb, binding: s.liveBinding, ws: func() string { return s.tr.ws },
		bg: e.bg, stopping: e.stopping, fetchTimeout: e.fetchTimeout, log: log}

	rec, ok, lerr := e.store.Load(key, e.now())
	badIDs := rec.dropInvalidIDs()
	if ok {
		if rec.Workspace != ws && rec.Worktree == "" { // a worktree's is its own (worktree.go)
			log.Warn("Stored session belongs to another workspace; keeping its id",
				"session_id", rec.SessionID, "stored_workspace", rec.Workspace)
			rec.Workspace = ws
		}
	} else {
		rec = Record{Key: key, Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, Workspace: ws}
	}
	rec.DM = rec.DM || m.IsDM
	s.rb.rec = rec
	s.tr.dm, s.tr.team.dm = rec.DM, rec.DM
	// Written by the next save; until then every load drops them again.
	s.rb.dirty = len(badIDs) > 0
	pending := s.jr.queueable(s.jr.open())
	e.sessions[key] = s
	e.wg.Add(1)
	e.mu.Unlock()
	if len(pending) > 0 {
		s.mb.push(pending...)
		e.runs.noteRecoveredRuns(pending)
		// The late notices a kill may have lost (order.go).
		for _, i := range lateAtRecovery(pending) {
			log.Info("A recovered message was posted before a later one that had started; it runs after it", "message_id", pending[i].msg.ID, "position", i+1)
			s.notice(render.Late(pending[i].msg.Text, render.Queued(i+1)))
		}
	}
	e.cluster.settleParked(s)
	if err := s.jr.openErr(); err != nil {
		log.Error("Inbox journal unreadable; the conversation refuses new input until an admin inspects it",
			"path", s.jr.path, "error", err, "admins", s.liveBinding().Admins)
		s.notice(s.jr.failClosedText(err))
	}
	if len(badIDs) > 0 {
		log.Warn("Stored session ids that are not UUIDs dropped", "dropped", badIDs)
		s.notice("This conversation's stored Claude Code session id is not a valid session id, so it was dropped: your next message starts a new session.")
	}
	if lerr != nil {
		log.Error("Session state unreadable; starting without it", "error", lerr)
		// The error names the file and where it was moved: the log has it.
		s.notice("Stored state for this conversation was unreadable and has been moved aside (the log says where); starting a new session.")
	}
	go s.loop()
	return s, nil
}

// Has reports whether the conversation already has a session, in memory or
// on disk.
func (e *Set) Has(key string) bool {
	e.mu.Lock()
	_, ok := e.sessions[key]
	e.mu.Unlock()
	return ok || e.store.Exists(key)
}

// notice hands text to the session goroutine to post; false when the
// control lane is closed or full (the text is logged then).
func (s *Conversation) notice(text string) bool {
	if !s.mb.pushControl(control{kind: ctrlNotice, text: text, to: s.to}) {
		s.log.Warn("Notice not posted: the conversation's control lane is closed or full", "notice", Quote(text, 120))
		return false
	}
	return true
}

func (s *Conversation) loop() {
	defer s.e.wg.Done()
	if h := s.e.testHookLooping; h != nil {
		h(s.key)
	}
	for {
		it, ok := s.next()
		if !ok {
			s.tr.tail.wait()
			s.agent.Close()
			s.agent.Release() // a lease recovery took without starting a process
			s.jr.close()
			return
		}
		if err := s.jr.fenced(it); err != nil {
			// Served elsewhere now (cluster.go): not run, not acknowledged.
			s.jr.park(it, err)
			s.e.busy.add(-1)
			continue
		}
		switch {
		case it.kind == itemTurn && it.steeredInto != "":
			takeSteered(s.tr, it) // steer.go: answered with its turn, or run now
		case it.kind == itemTurn && it.recovered:
			s.tr.recover(it)
		case it.kind == itemTurn && it.ownBy != nil && s.agent.Live() != it.ownBy:
			// The CLI that had it is gone: what became of it, the
			// transcript says (steer.go).
			it.ownBy, it.afterCrash = nil, true
			s.tr.recover(it)
		case it.kind == itemTurn:
			s.tr.run(it)
		case it.kind == itemNew, it.kind == itemResume:
			runInOrder(s, it) // the command's handler (commands.go)
			s.jr.ack(it, inbox.AckResult)
		case it.kind == itemRun:
			s.handOff(it)
		case it.kind == itemOwn:
			postOwn(s.tr, it) // own.go: journaled before a restart
		case it.kind == itemPending:
			postPending(s, it.pending)
		}
		s.e.runs.runFinished(it)
		s.e.busy.add(-1)
	}
}

// next blocks until the FIFO has an item, serving the control lane, idle
// reaping and a process that dies while idle meanwhile. It returns false
// when the session ends (the engine stops, it retired); items still queued
// at a stop are refused.
func (s *Conversation) next() (workItem, bool) {
	for {
		if s.e.isStopping() {
			s.refuseQueued()
			return workItem{}, false
		}
		if s.retireIfStale() { // reload.go
			return workItem{}, false
		}
		if c, ok := s.mb.takeControl(); ok {
			s.handleControl(c)
			s.mb.counted(-1)
			continue
		}
		if s.tr.restoring != nil {
			// No turn runs here: the newer context taken over goes in
			// before anything else runs (context.go).
			placeRestored(s)
			continue
		}
		if it, ok := s.mb.peek(); ok && len(it.checks) > 0 {
			// Read back from the platform before it runs (checks.go);
			// one that ran before a restart was checked then.
			if it.started {
				s.mb.checked(it.inboxID, false)
			} else {
				s.check(it)
			}
			// A thread not the bot's leaves nothing behind.
			if s.e.threads.rootless.Has(s.key) && s.rb.sessionID() == "" && s.retire() {
				return workItem{}, false
			}
			continue
		}
		// An exhausted usage window holds the next turn back
		// (limits.go); commands and controls still run.
		var limitC <-chan time.Time
		var limitW limitWindow
		if it, ok := s.mb.peek(); ok && waitsForLimit(it) {
			limitC, limitW = s.tr.limit.hold()
		}
		if it, ok := s.mb.peek(); ok && (limitC == nil || !waitsForLimit(it)) {
			it, _ = s.mb.take()
			s.e.noteQueue()
			return it, true
		}
		proc := s.agent.Live()
		idleAt, _ := s.agent.IdleSince()

		var reapC, retireC <-chan time.Time
		var procDone <-chan struct{}
		var timer *time.Timer
		own := ownTurns(proc) // own.go: what the CLI runs by itself
		if proc != nil {
			procDone = proc.Done()
			// A process with a background task running (or whose answer
			// to one is coming) is not idle: the task would die with it,
			// and its answer never come.
			if t := s.e.opts.IdleTimeout; t > 0 && !busyOnItsOwn(proc) {
				timer = time.NewTimer(max(0, t-s.e.now().Sub(idleAt)))
				reapC = timer.C
			}
		} else if s.e.retireAfter > 0 {
			timer = time.NewTimer(s.e.retireAfter)
			retireC = timer.C
		}
		select {
		case <-s.mb.work:
		case <-s.mb.ctrl:
		case <-limitC:
			s.tr.limit.reset(limitW)
		case <-retireC:
			if s.retire() {
				return workItem{}, false
			}
		case <-reapC:
			s.reap("idle timeout")
		case t := <-own:
			s.mb.setState(stateRunning)
			s.tr.runOwn(t)
			s.mb.setState(stateIdle)
		case <-procDone:
			s.log.Warn("Agent process ended while idle; the next message resumes", "session_id", s.rb.sessionID(), "stderr", lastLine(proc.StderrTail()))
			s.agent.Close()
		case <-s.e.stopping:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// retire ends an idle session without a process: it leaves the engine's
// map, and the next message creates it again from its stored state. The
// journal's accept lock keeps an accept from landing between the check
// and the close.
func (s *Conversation) retire() bool {
	s.jr.acceptMu.Lock()
	defer s.jr.acceptMu.Unlock()
	s.e.mu.Lock()
	defer s.e.mu.Unlock()
	// A running !sh writes the record when it ends: the session must
	// outlive it, or a new one could load the record before that write.
	if !s.mb.closeIfIdle(func() bool { return s.agent.Live() == nil && !s.shell.running() }) {
		return false
	}
	if s.e.sessions[s.key] == s {
		delete(s.e.sessions, s.key)
	}
	s.log.Debug("Session retired after inactivity", "session_id", s.rb.sessionID())
	return true
}

// refuseQueued closes the mailbox at shutdown and tells the thread what
// becomes of what was still in it: journaled work stays for the next
// start, anything else must be sent again.
func (s *Conversation) refuseQueued() {
	s.jr.acceptMu.Lock()
	items, ctrls := s.mb.closeAll()
	s.jr.acceptMu.Unlock()
	s.e.noteQueue()
	for _, c := range ctrls {
		if c.kind == ctrlNotice {
			s.chat.sendTo(c.to, c.text)
		}
		s.mb.counted(-1)
	}
	for _, it := range items {
		switch {
		case s.tr.ho.takes(it):
			s.tr.ho.leave(it, "queued when cc-connect stopped")
		case it.kind == itemTurn && it.inboxID != "":
			// It stays in the journal; the next start runs it.
			s.chat.send(render.RestartQueuedText + Quote(it.msg.Text, 80))
		case it.kind == itemTurn:
			s.chat.send(render.ShutdownDropped(it.msg.Text))
		}
		s.mb.counted(-1)
	}
}

// handleControl handles a control that no running turn took: every kind
// while the conversation is idle; while a turn runs (turn.go's other), only
// notices and the commands that act at once reach it, the turn taking the
// answers, !stop, replies, reaps and fences itself. A command acts through
// its registry entry's handler (commands.go).
func (s *Conversation) handleControl(c control) {
	switch c.kind {
	case ctrlNotice:
		s.chat.sendTo(c.to, c.text)
	case ctrlCommand:
		cmd := lookup(c.cmd)
		if cmd == nil {
			cmd = &unknownCommand
		}
		cmd.run(s, call{name: c.cmd, msg: c.msg, args: c.args})
	case ctrlAnswer:
		if !heldForAdoption(s.e, s.key, c) { // approvals.go
			s.chat.sendTo(c.to, render.NoPermissionPending)
		}
	case ctrlReply:
		s.replyAsTurn(c)
	case ctrlStop:
		stopped := ""
		if c.args == "all" {
			stopped = stopBackground(s.e.bg, s.log, s.agent.Live()) // own.go
		}
		switch {
		case s.shell.stopFor(s.chat, c.to):
			if stopped != "" {
				s.chat.sendTo(c.to, stopped)
			}
		case stopped != "":
			s.chat.sendTo(c.to, stopped)
		default:
			text := render.NothingRunning
			if bg := background(s.agent.Live()); len(bg) > 0 {
				text += " " + render.BackgroundRunning(bg) + " (!stop all stops them)."
			}
			s.chat.sendTo(c.to, text)
		}
	case ctrlReap:
		if bg := background(s.agent.Live()); len(bg) > 0 {
			s.chat.send(render.ReapedWithBackground(bg))
		}
		s.reap("slot needed by another session")
	case ctrlFence:
		// Nothing runs: what is queued is checked before it runs.
	case ctrlRestored:
		// Placed by next once no turn runs (context.go): a running turn
		// is the older context's, and its process still writes.
		if st, _, _ := s.mb.snapshot(); st != stateIdle {
			s.log.Info("A restored context reached a running turn; it is placed once the turn ends and its process has exited",
				"session_id", s.rb.sessionID(), "restored_session_id", c.restore.SessionID)
		}
		s.tr.restoring = c.restore
	}
}

// reap closes an idle live process and keeps the session id, so the next
// message resumes.
func (s *Conversation) reap(why string) {
	idleAt, live := s.agent.IdleSince()
	if !live {
		return
	}
	rec := s.rb.get()
	s.log.Info("Reaping idle agent process", "reason", why, "session_id", rec.SessionID,
		"idle", s.e.now().Sub(idleAt).Round(time.Millisecond), "context_tokens", rec.ContextTokens)
	s.agent.Close()
}

// idleLiveSince returns when the live process went idle, as a sortable
// number, and false when there is no idle live process.
func (s *Conversation) idleLiveSince() (int64, bool) {
	if _, _, busy := s.mb.snapshot(); busy {
		return 0, false
	}
	at, live := s.agent.IdleSince()
	return at.UnixNano(), live
}

// lastActive is when the conversation last finished a turn, or started.
func (s *Conversation) lastActive() time.Time {
	rec := s.rb.get()
	idleAt, _ := s.agent.IdleSince()
	if rec.LastActivity.After(idleAt) {
		return rec.LastActivity
	}
	return idleAt
}
