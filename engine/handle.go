package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cc-connect/cc-connect/inbox"
	"github.com/cc-connect/cc-connect/platform"
)

const (
	refusalText  = "Sorry, you are not allowed to use the agent here. Ask an admin of this cc-connect to add you."
	shutdownText = "cc-connect is shutting down; this message was not processed. Please send it again later."
)

// HandleMessage accepts or refuses one chat message. It returns once the
// message is queued for its session (or answered, or ignored); the turn
// runs on the session's goroutine.
func (e *Engine) HandleMessage(ctx context.Context, m platform.Message) error {
	log := e.log.With("platform", m.Target.Platform, "channel", m.Target.Channel, "thread", m.Target.Thread)
	e.metrics.PlatformEvent(m.Target.Platform, "message")
	if m.IsBot {
		log.Debug("Ignoring a bot's message", "user", m.UserID)
		return nil
	}
	claim, err := e.seenClaim(ctx, m)
	if errors.Is(err, inbox.ErrDuplicate) {
		log.Debug("Ignoring a message accepted before", "message_id", m.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("handling a message: %w", err)
	}
	if claim != nil {
		defer claim.Release()
	}
	b, ok := e.resolve(m.Target.Platform, m.Target.Channel)
	if !ok {
		log.Debug("Ignoring a message from an unbound channel")
		return nil
	}
	a, ok := e.adapter(m.Target.Platform)
	if !ok {
		return fmt.Errorf("handling a message: no adapter named %q", m.Target.Platform)
	}
	if strings.TrimSpace(m.Text) == "" && len(m.Attachments) == 0 {
		log.Debug("Ignoring an empty message")
		return nil
	}
	key := keyOf(m.Target)
	if b.needsMention(m) && !m.Mentioned && !e.hasSession(key) {
		log.Debug("Ignoring a message that does not mention the bot", "session_key", key)
		return nil
	}
	reply := m.Target
	reply.MessageID = ""
	if !b.allowed(m.UserID) {
		e.refuseOnce(ctx, a, reply, m)
		return nil
	}
	e.mu.Lock()
	shutting := e.shutting
	e.mu.Unlock()
	if shutting {
		if _, err := a.Send(ctx, reply, shutdownText); err != nil {
			log.Warn("Posting the shutdown notice failed", "error", err)
		}
		return nil
	}
	// A session that retired between lookup and enqueue is created again.
	var (
		files    []inbox.Attachment
		filesFor string // the workspace files were stored in
	)
	for {
		s, err := e.session(ctx, b, m, a)
		if err != nil {
			if _, serr := a.Send(ctx, reply, shutdownText); serr != nil {
				log.Warn("Posting the shutdown notice failed", "error", serr)
			}
			return nil
		}
		if name, args, isCmd := parseCommand(m.Text); isCmd {
			if !journaledCommand(name) {
				s.markSeen(m) // before it acts: a redelivery must not act again
			}
			e.command(ctx, s, m, name, args)
			return nil
		}
		if len(m.Attachments) > 0 && filesFor != s.ws.Path {
			// Stored before the message is journaled, so that a replay
			// has them; this bounds how long it takes (fetchAttachments).
			files, filesFor = s.fetchAttachments(ctx, m), s.ws.Path
		}
		err = s.enqueue(ctx, workItem{kind: itemTurn, msg: m, files: files})
		if !errors.Is(err, errSessionClosed) {
			return err
		}
		if e.isStopping() {
			if _, serr := a.Send(ctx, reply, shutdownText); serr != nil {
				log.Warn("Posting the shutdown notice failed", "error", serr)
			}
			return nil
		}
	}
}

// refuseOnce answers a user who may not use the agent, once per thread, so
// that a busy channel is not flooded with refusals.
func (e *Engine) refuseOnce(ctx context.Context, a platform.Adapter, to platform.Target, m platform.Message) {
	key := keyOf(to)
	e.mu.Lock()
	first := !e.refused[key]
	e.refused[key] = true
	e.mu.Unlock()
	e.log.Info("Refused a message from a user who is not allowed", "platform", to.Platform, "channel", to.Channel,
		"thread", to.Thread, "session_key", key, "user", m.UserID, "user_name", m.UserName, "told", first)
	if !first {
		return
	}
	if _, err := a.Send(ctx, to, refusalText); err != nil {
		e.log.Warn("Posting the refusal failed", "session_key", key, "error", err)
	}
}

// HandleAction routes a button press on a permission prompt to the session
// that asked. Only allowed users may answer.
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
		_, err := a.Send(ctx, reply, "That permission request is no longer pending.")
		return err
	}
	// The allow list in force now, not the one the session started
	// under; a binding removed meanwhile keeps its session answerable.
	b, bound := e.resolve(s.to.Platform, s.to.Channel)
	if !bound {
		b = s.binding
	}
	if !b.allowed(act.UserID) {
		e.log.Info("Refused a permission answer from a user who is not allowed", "session_key", key,
			"user", act.UserID, "request_id", act.RequestID)
		_, err := a.Send(ctx, s.to, fmt.Sprintf("%s is not allowed to answer permission requests here.", orDefault(act.UserName, act.UserID)))
		return err
	}
	s.control(ctx, control{kind: ctrlAnswer, requestID: act.RequestID, choice: act.Choice,
		userName: orDefault(act.UserName, act.UserID), to: s.to})
	return nil
}
