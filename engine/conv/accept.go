package conv

import (
	"errors"
	"slices"

	"github.com/cc-connect/cc-connect/activity"
	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

func refused(why string) platform.Result {
	return platform.Result{Status: platform.Refused, Reason: why}
}

// accept journals m into the session, or hands a command that acts at once
// to its control lane, and says what became of it; d and checks go with
// an item it queues (Set.Accept). A command goes through its registry
// entry (commands.go): the gate checks who may run it, then it is queued
// as its timing says. What acts at once is journaled as a command (its
// message's id) and handed to the control lane as one control.
func (s *Conversation) accept(m platform.Message, d Delivery, checks []string) (platform.Result, error) {
	name, args, isCmd := parseCommand(m.Text)
	var c control
	refusal := "" // the command is refused: c is the notice that says so
	switch {
	case !isCmd && (s.awaitText.Load() || s.e.cluster.adopting.awaitsText(s.key, m.ID)) && len(m.Attachments) == 0 &&
		s.gate.allows(m.UserID, approvers):
		// The running turn waits on a question or a plan's feedback, or
		// the turn of a message adopted from the binding's previous host
		// is to wait on one (approvals.go: the reply is held for it like
		// a press): the reply answers it.
		name, c = "reply", control{kind: ctrlReply, text: m.Text, userName: orDefault(m.UserName, m.UserID), userID: m.UserID, msg: m}
	case !isCmd:
		return s.acceptItem(workItem{kind: itemTurn, msg: m, files: filesOf(m), dlv: d, checks: checks})
	default:
		cmd := lookup(name)
		if cmd == nil {
			cmd = &unknownCommand
		}
		cl := call{name: name, msg: m, args: args}
		// Who may run it is read from the binding in force now, for a
		// typed answer as for a button press (Set.Answer).
		refusal = s.gate.refuse(m.UserID, m.UserName, cmd.right(args), "command", name)
		switch {
		case name == "sh" && refusal != "":
			s.act.record(activity.Event{Kind: activity.Shell, User: m.UserID, UserName: m.UserName, Input: args, Outcome: "refused: " + refusal})
		case name == "revert" && refusal != "":
			// As runRevert's refusals: the console shows it to its presser.
			s.act.record(activity.Event{Kind: activity.Reverted, User: m.UserID, UserName: m.UserName, Request: m.ID,
				Outcome: "refused: " + cmd.refused(cl, refusal)})
		}
		switch {
		case refusal != "":
			c = control{kind: ctrlNotice, text: cmd.refused(cl, refusal)}
		case cmd.when != atOnce:
			it, why := cmd.queue(s, cl)
			if why != "" {
				return refused(why), nil
			}
			it.dlv, it.checks = d, checks
			return s.acceptItem(it)
		case cmd.control != nil:
			c = cmd.control(cl)
		default:
			c = control{kind: ctrlCommand, msg: m, cmd: name, args: args}
		}
	}
	c.to = s.to
	ok, err := s.jr.acceptControl(m, []control{c}, s.mb)
	if err != nil {
		return platform.Result{}, err
	}
	if !ok {
		// The goroutine is stuck: it reads its controls at every step.
		s.log.Warn("Session control lane full; command refused", "command", name)
		s.e.host.Notify(s.chat.chat(), s.to, render.Busy)
		return refused("conversation busy"), nil
	}
	if refusal != "" {
		return refused(refusal), nil
	}
	if c.kind == ctrlStop {
		s.act.record(activity.Event{Kind: activity.Stopped, User: m.UserID, UserName: m.UserName})
	}
	return platform.Result{Status: platform.Queued}, nil
}

// acceptItem journals it and queues it; a turn that has to wait is told
// its place by the session goroutine.
func (s *Conversation) acceptItem(it workItem) (platform.Result, error) {
	a, err := s.jr.accept(it, s.mb)
	switch {
	case err != nil:
		return platform.Result{}, err
	case a.pos < 0:
		return platform.Result{Status: platform.Duplicate}, nil
	case a.refusal != "":
		s.notice(a.refusal)
		return refused(a.reason), nil
	}
	if h := s.e.testHookQueued; h != nil {
		h()
	}
	s.e.noteQueue()
	queued := render.Queued(a.pos)
	if a.late {
		s.log.Info("A message came after a later one had started; it runs next", "message_id", it.msg.ID, "position", a.pos)
		if !a.waits {
			queued = render.RunsNow
		}
		s.notice(render.Late(it.msg.Text, queued))
	}
	if !a.waits {
		return platform.Result{Status: platform.Queued}, nil
	}
	if it.kind == itemTurn && !a.late && !slices.Contains(it.checks, checkRoot) && !steeringOf(s.tr).wouldSteer(it) {
		// (A reply that may not be the bot's is told nothing.)
		s.notice(queued)
	}
	return platform.Result{Status: platform.Queued, Position: a.pos}, nil
}

// replyAsTurn queues a thread reply that was taken for the answer to a
// question or a plan which was gone by the time the session goroutine read
// it (a button or another reply answered it first, the CLI withdrew it, the
// turn ended): the sender's words run as the conversation's next turn
// instead of being dropped. The message's own id was remembered as a
// command's (acceptControl), so the turn is journaled under a derived one;
// a redelivery of the message is still a duplicate of the command. A
// reply that came before the turn of a message adopted from the binding's
// previous host waits on its question or plan is held for that wait
// instead (approvals.go).
func (s *Conversation) replyAsTurn(c control) {
	if heldForAdoption(s.e, s.key, c) {
		return // for a question or plan adopted from the previous host (approvals.go)
	}
	m := c.msg
	if m.Text == "" { // not from a thread message (a test's bare control)
		s.chat.sendTo(c.to, render.NotWaiting)
		return
	}
	if m.ID != "" {
		m.ID += "#turn"
	}
	s.log.Info("A reply came after its question or plan was settled; it runs as a turn", "message_id", c.msg.ID)
	if _, err := s.acceptItem(workItem{kind: itemTurn, msg: m, files: filesOf(m)}); err != nil {
		s.log.Warn("Queueing a late reply as a turn failed", "message_id", c.msg.ID, "error", err)
		s.chat.sendTo(c.to, render.NotWaiting)
	}
}

// Accept journals m into its conversation (created from its files when it
// has none in memory), or hands a command that acts at once to its
// control lane, and says what became of it; b is m's binding, a its
// adapter, d its delivery from a cluster's stream (nil otherwise).
// ErrStopped: the engine is shutting down and nothing was written.
func (e *Set) Accept(b binding.Binding, a platform.Adapter, m platform.Message, d Delivery, unrooted bool) (platform.Result, error) {
	if m.Mentioned {
		e.threads.rootless.Forget(Key(m.Target)) // the bot's now
	}
	checks := e.checksFor(a, m, unrooted)
	// A session that retired between lookup and accept is created again.
	for {
		s, err := e.session(b, m, a)
		if err != nil {
			return platform.Result{}, err
		}
		res, err := s.accept(m, d, checks)
		if !errors.Is(err, errSessionClosed) {
			return res, err
		}
		if e.isStopping() {
			return platform.Result{}, ErrStopped
		}
	}
}

// Answer routes a button press on a permission prompt to the conversation
// that asked: only from the prompt's own conversation, only by one of the
// approvers of the binding in force now (gate.mayApprove). It returns the
// notice to post in the conversation the press came from when the press
// answers nothing there; "" when the conversation took it (and tells the
// presser itself when they may not approve).
func (e *Set) Answer(act platform.Action) string {
	reply := act.Target
	reply.MessageID = ""
	e.mu.Lock()
	key, pending := e.requests[act.RequestID]
	s := e.sessions[key]
	e.mu.Unlock()
	if !pending || s == nil {
		return "That permission request is no longer pending."
	}
	// The id alone is not enough: a press must come from the prompt's
	// own conversation, so that a request id seen (or guessed) in one
	// channel cannot be answered from another where the user may approve.
	if where := Key(reply); where != key {
		e.log.Warn("Refused a permission answer from another conversation", "session_key", key,
			"from", where, "user_id", act.UserID, "user_name", act.UserName, "request_id", act.RequestID)
		return "That permission request belongs to another conversation; answer it there."
	}
	who := orDefault(act.UserName, act.UserID)
	if !s.gate.mayApprove(act.UserID, act.UserName, act.RequestID) {
		s.notice(render.NotApprover(orDefault(act.UserName, act.UserID)))
		return ""
	}
	if !s.mb.pushControl(control{kind: ctrlAnswer, requestID: act.RequestID, choice: act.Choice, userName: who, userID: act.UserID, to: s.to,
		question: act.Question, options: act.Options}) {
		s.log.Warn("Session control lane full; permission answer dropped", "request_id", act.RequestID)
		return render.Busy
	}
	return ""
}
