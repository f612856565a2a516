package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

const (
	refusalText  = "Sorry, you are not allowed to use the agent here. Ask an admin of this cc-connect to add you."
	shutdownText = "cc-connect is shutting down; this message was not processed. Please send it again later."
)

// The accept path. HandleMessage runs on the adapter's goroutine, where one
// slow call would hold up every conversation the adapter serves, and
// delay its acknowledgement to the platform (Slack redelivers after 3 s).
// So it does only what durability needs, in this order:
//
//  1. normalize: a bot's or an empty message is ignored;
//  2. dedupe: one check (inbox.Seen.Claim) against every id journaled
//     within the seen window; a second copy of a message being accepted
//     waits for the first to be on disk;
//  3. route: binding, allow list, mention, the conversation's session
//     (created from its files when it has none in memory); a reply
//     without a mention in a thread the engine does not know has the
//     thread's root read back, and accepted first when it mentions the
//     bot (threadroot.go); the first message of a known thread after a
//     start has the messages before it that the engine never journaled
//     read back and accepted first (ordergap.go): the platform calls on
//     this path, each once per thread;
//  4. journal: one record, one fsync (journal.accept), which makes the id
//     seen too, and the item is in the conversation's FIFO;
//  5. return what it did (platform.Result): the adapter acknowledges.
//
// Nothing on it posts to the chat or downloads a file: notices ("Queued
// (position n)", refusals) go to the conversation's control lane or, for
// a conversation without a session, to a notifier goroutine (notify), and
// attachments are fetched on the session goroutine before the turn.

func ignored(why string) platform.Result {
	return platform.Result{Status: platform.Ignored, Reason: why}
}
func refused(why string) platform.Result {
	return platform.Result{Status: platform.Refused, Reason: why}
}

// HandleMessage accepts, refuses or ignores one chat message and says which
// (see the accept path above). An error means it was not handled and must
// not be acknowledged.
func (e *Engine) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	return e.handleMessage(ctx, m, nil)
}

// handleMessage is HandleMessage for a message from a cluster's stream too
// (d is its delivery, nil otherwise: cluster.go).
func (e *Engine) handleMessage(ctx context.Context, m platform.Message, d *ingress.Delivery) (res platform.Result, err error) {
	// The platform's ack waits for this (Slack redelivers after 3 s): a
	// slow disk shows in the accept duration before it shows as doubles.
	began := time.Now()
	defer func() {
		if err == nil && res.Status == platform.Queued {
			e.metrics.MessageAccepted(m.Target.Platform, time.Since(began))
		}
	}()
	log := e.log.With("platform", m.Target.Platform, "channel", m.Target.Channel, "thread", m.Target.Thread)
	e.metrics.PlatformEvent(m.Target.Platform, "message")
	if m.IsBot {
		log.Debug("Ignoring a bot's message", "user_id", m.UserID)
		return ignored("a bot's message"), nil
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0 {
		log.Debug("Ignoring an empty message")
		return ignored("empty"), nil
	}
	claim, err := e.seenClaim(ctx, m)
	switch {
	case errors.Is(err, inbox.ErrDuplicate):
		log.Debug("Ignoring a message accepted before", "message_id", m.ID)
		return platform.Result{Status: platform.Duplicate}, nil
	case err != nil:
		return platform.Result{}, fmt.Errorf("handling a message: %w", err)
	case claim != nil:
		defer claim.Release()
	}
	if e.killedAt(pointClaimed) {
		return platform.Result{}, errKilled
	}
	b, ok := e.resolve(m.Target.Platform, m.Target.Channel)
	if !ok {
		log.Debug("Ignoring a message from an unbound channel")
		return ignored("unbound channel"), nil
	}
	a, ok := e.adapter(m.Target.Platform)
	if !ok {
		return platform.Result{}, fmt.Errorf("handling a message: no adapter named %q", m.Target.Platform)
	}
	key := keyOf(m.Target)
	if b.NeedsMention(m.IsDM) && !m.Mentioned && !e.hasSession(key) {
		root, ok := e.threadRoot(ctx, a, m)
		if !ok {
			log.Debug("Ignoring a message that does not mention the bot", "session_key", key)
			return ignored("no mention of the bot"), nil
		}
		// The root never reached the engine, or not yet (threadroot.go):
		// it goes first, so the conversation starts where it started.
		log.Info("Accepting a thread's root read back from the platform, before a reply that came first",
			"session_key", key, "message_id", root.ID)
		if _, err := e.HandleMessage(ctx, root); err != nil {
			return platform.Result{}, err
		}
		if !e.hasSession(key) {
			log.Debug("Ignoring a reply whose thread's root was not accepted", "session_key", key)
			return ignored("no mention of the bot"), nil
		}
	}
	reply := m.Target
	reply.MessageID = ""
	if !b.Allowed(m.UserID) {
		e.refuseOnce(a, reply, m)
		return refused("user not allowed"), nil
	}
	// The first message of a known thread after a start: what a dead
	// instance took and never journaled goes first (ordergap.go).
	for _, mm := range e.missingBefore(ctx, a, b, m) {
		log.Info("Accepting a message read back from its thread, posted before one that came first after a start",
			"session_key", key, "message_id", mm.ID)
		if _, err := e.HandleMessage(ctx, mm); err != nil {
			return platform.Result{}, err
		}
	}
	// A session that retired between lookup and accept is created again.
	for {
		s, err := e.session(b, m, a)
		if err != nil {
			e.notify(a, reply, shutdownText)
			return refused("shutting down"), nil
		}
		res, err := s.accept(m, d)
		if !errors.Is(err, errSessionClosed) {
			return res, err
		}
		if e.isStopping() {
			e.notify(a, reply, shutdownText)
			return refused("shutting down"), nil
		}
	}
}

// accept journals m into the session, or hands a command that acts at once
// to its control lane, and says what became of it.
func (s *session) accept(m platform.Message, d *ingress.Delivery) (platform.Result, error) {
	acceptItem := func(it workItem) (platform.Result, error) {
		it.dlv = d
		return s.acceptItem(it)
	}
	name, args, isCmd := parseCommand(m.Text)
	if !isCmd && s.awaitText.Load() && len(m.Attachments) == 0 && s.liveBinding().Approver(m.UserID) {
		// The running turn waits on a question or a plan's feedback: the
		// reply answers it (journaled as a command that acted at once).
		return s.acceptControls(m, "reply", []control{{kind: ctrlReply, text: m.Text, userName: orDefault(m.UserName, m.UserID), to: s.to, msg: m}}, "")
	}
	if !isCmd {
		return acceptItem(workItem{kind: itemTurn, msg: m, files: filesOf(m)})
	}
	_, _, busy := s.mb.snapshot()
	switch name {
	case "new":
		if busy {
			s.notice("A new session starts after the current turn and the messages queued before this command.")
		}
		return acceptItem(workItem{kind: itemNew, msg: m})
	case "resume":
		if args == "" {
			s.notice("Usage: !resume <n|id>, with n from !sessions.")
			return refused("usage"), nil
		}
		if busy {
			s.notice("Switching after the current turn and the messages queued before this command.")
		}
		// Which session n or the id names is settled when it runs, in
		// order: listing the workspace's sessions is not the accept path's.
		return acceptItem(workItem{kind: itemResume, msg: m, resumeArg: args})
	case "compact":
		if s.rb.sessionID() == "" {
			s.notice("There is no conversation to compact yet.")
			return refused("nothing to compact"), nil
		}
		m.Text = compactText(args)
		return acceptItem(workItem{kind: itemTurn, msg: m})
	}
	var cs []control
	refusal := "" // the command is refused, with a notice in cs
	switch name {
	case "stop":
		// The session goroutine stops a running !sh first, then the turn.
		cs = append(cs, control{kind: ctrlStop, to: s.to})
	case "skip":
		if !s.mayApprove(m.UserID, m.UserName, "") {
			refusal = "not an approver"
			cs = append(cs, control{kind: ctrlNotice, text: notApproverText(m.UserName, m.UserID), to: s.to})
			break
		}
		cs = append(cs, control{kind: ctrlAnswer, choice: platform.ChoiceDismiss, userName: orDefault(m.UserName, m.UserID), to: s.to})
	case "allow", "deny":
		// Who may answer is read from the binding in force now, for a
		// typed answer as for a button press.
		if !s.mayApprove(m.UserID, m.UserName, "") {
			refusal = "not an approver"
			cs = append(cs, control{kind: ctrlNotice, text: notApproverText(m.UserName, m.UserID), to: s.to})
			break
		}
		choice := platform.ChoiceDeny
		if name == "allow" {
			choice = platform.ChoiceAllow
			if strings.EqualFold(args, "always") {
				choice = platform.ChoiceAlwaysAllow
			}
			if strings.EqualFold(args, "edits") {
				choice = platform.ChoicePlanAcceptEdits // a plan, approved into acceptEdits
			}
		}
		cs = append(cs, control{kind: ctrlAnswer, choice: choice, userName: orDefault(m.UserName, m.UserID), to: s.to})
	default:
		cs = append(cs, control{kind: ctrlCommand, msg: m, cmd: name, args: args, to: s.to})
	}
	return s.acceptControls(m, name, cs, refusal)
}

// acceptControls journals m as a command that acts at once and hands its
// controls to the session's control lane.
func (s *session) acceptControls(m platform.Message, name string, cs []control, refusal string) (platform.Result, error) {
	ok, err := s.jr.acceptControl(m, cs, s.mb)
	if err != nil {
		return platform.Result{}, err
	}
	if !ok {
		// The goroutine is stuck: it reads its controls at every step.
		s.log.Warn("Session control lane full; command refused", "command", name)
		s.e.notify(s.chat.chat(), s.to, "The session is busy right now; please try again in a moment.")
		return refused("conversation busy"), nil
	}
	if refusal != "" {
		return refused(refusal), nil
	}
	return platform.Result{Status: platform.Queued}, nil
}

// acceptItem journals it and queues it; a turn that has to wait is told
// its place by the session goroutine.
func (s *session) acceptItem(it workItem) (platform.Result, error) {
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
	queued := fmt.Sprintf("Queued (position %d): it runs after the current turn.", a.pos)
	if a.late {
		s.log.Info("A message came after a later one had started; it runs next", "message_id", it.msg.ID, "position", a.pos)
		if !a.waits {
			queued = "It runs now."
		}
		s.notice(fmt.Sprintf(lateText, quote(it.msg.Text, 80), queued))
	}
	if !a.waits {
		return platform.Result{Status: platform.Queued}, nil
	}
	if it.kind == itemTurn && !a.late {
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
// a redelivery of the message is still a duplicate of the command.
func (s *session) replyAsTurn(c control) {
	m := c.msg
	if m.Text == "" { // not from a thread message (a test's bare control)
		s.chat.sendTo(c.to, notWaitingText)
		return
	}
	if m.ID != "" {
		m.ID += "#turn"
	}
	s.log.Info("A reply came after its question or plan was settled; it runs as a turn", "message_id", c.msg.ID)
	if _, err := s.acceptItem(workItem{kind: itemTurn, msg: m, files: filesOf(m)}); err != nil {
		s.log.Warn("Queueing a late reply as a turn failed", "message_id", c.msg.ID, "error", err)
		s.chat.sendTo(c.to, notWaitingText)
	}
}

// refuseOnce answers a user who may not use the agent, once per thread, so
// that a busy channel is not flooded with refusals.
func (e *Engine) refuseOnce(a platform.Adapter, to platform.Target, m platform.Message) {
	key := keyOf(to)
	first := e.refused.add(key)
	e.log.Info("Refused a message from a user who is not allowed", "platform", to.Platform, "channel", to.Channel,
		"thread", to.Thread, "session_key", key, "user_id", m.UserID, "user_name", m.UserName, "told", first)
	if first && !e.notify(a, to, refusalText) {
		// Not told after all: the thread's next message tries again.
		e.refused.forget(key)
	}
}

// HandleAction routes a button press on a permission prompt to the session
// that asked. Only the binding's approvers may answer (mayApprove), and
// only from the prompt's own conversation. Like HandleMessage it posts
// nothing itself.
func (e *Engine) HandleAction(ctx context.Context, act platform.Action) error {
	e.metrics.PlatformEvent(act.Target.Platform, "action")
	a, ok := e.adapter(act.Target.Platform)
	if !ok {
		return fmt.Errorf("handling an action: no adapter named %q", act.Target.Platform)
	}
	reply := act.Target
	reply.MessageID = ""
	e.mu.Lock()
	key, pending := e.requests[act.RequestID]
	s := e.sessions[key]
	e.mu.Unlock()
	if !pending || s == nil {
		e.notify(a, reply, "That permission request is no longer pending.")
		return nil
	}
	// The id alone is not enough: a press must come from the prompt's
	// own conversation, so that a request id seen (or guessed) in one
	// channel cannot be answered from another where the user may approve.
	if where := keyOf(reply); where != key {
		e.log.Warn("Refused a permission answer from another conversation", "session_key", key,
			"from", where, "user_id", act.UserID, "user_name", act.UserName, "request_id", act.RequestID)
		e.notify(a, reply, "That permission request belongs to another conversation; answer it there.")
		return nil
	}
	who := orDefault(act.UserName, act.UserID)
	if !s.mayApprove(act.UserID, act.UserName, act.RequestID) {
		s.notice(notApproverText(act.UserName, act.UserID))
		return nil
	}
	if !s.mb.pushControl(control{kind: ctrlAnswer, requestID: act.RequestID, choice: act.Choice, userName: who, to: s.to,
		question: act.Question, options: act.Options}) {
		s.log.Warn("Session control lane full; permission answer dropped", "request_id", act.RequestID)
		e.notify(a, s.to, "The session is busy right now; please try again in a moment.")
	}
	return nil
}

// mayApprove says whether a user may answer the session's permission
// requests: one of the approvers of the binding in force now, not of the
// one the session started under (liveBinding). A refusal is logged.
func (s *session) mayApprove(userID, userName, requestID string) bool {
	if s.liveBinding().Approver(userID) {
		return true
	}
	s.log.Info("Refused a permission answer from a user who may not approve", "user_id", userID,
		"user_name", userName, "request_id", requestID)
	return false
}

func notApproverText(userName, userID string) string {
	return fmt.Sprintf("%s is not allowed to answer permission requests here.", orDefault(userName, userID))
}

// seenClaim takes the claim on m's id (inbox.Seen.Claim), the one
// duplicate check; a nil claim and no error for a message without an id.
func (e *Engine) seenClaim(ctx context.Context, m platform.Message) (*inbox.Claim, error) {
	seen := e.seenIDs()
	if m.ID == "" || seen == nil {
		return nil, nil
	}
	return seen.Claim(ctx, inbox.SeenKey(m.Target.Platform, m.ID))
}
