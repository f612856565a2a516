package slack

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/cc-connect/cc-connect/platform"
)

// pump reads the Socket Mode client's events: it keeps the connection
// status, filters what is not for the engine, and hands the rest to the
// handler itself, one at a time, in the order the connection delivered
// them (the handler does only what durability needs: it journals a
// message with one fsync and returns, and the conversation's own
// goroutine does the rest). A message's envelope is acked once the
// handler accepted it, so a crash before that leaves the event
// unacknowledged and Slack delivers it again; every other envelope, and a
// message whose handling passes ackWait, is acked at once or then, since
// Slack wants its ack within 3 s and dedupes nothing for us. Once ctx
// ends the pump hands nothing more over: what it has not read is not
// acked, and Slack delivers it again.
func (s *socket) pump(ctx context.Context, smc *socketmode.Client, in inbound, runErr <-chan error, sig socketSignals) error {
	lastTrouble := ""
	for {
		var evt socketmode.Event
		select {
		case <-ctx.Done():
			return nil
		case err := <-runErr:
			return err
		case evt = <-smc.Events:
		}
		if ctx.Err() != nil {
			return nil // the event is not acked: Slack delivers it again
		}
		switch evt.Type {
		case socketmode.EventTypeConnecting:
			if ev, ok := evt.Data.(*slack.ConnectingEvent); ok && (ev.ConnectionCount > 0 || ev.Attempt > 1 || lastTrouble != "") {
				s.setStatus(platform.TransientDisconnect, orDefault(lastTrouble, "connection closed"))
				s.log.Info("Slack reconnecting", "attempt", ev.Attempt, "reason", orDefault(lastTrouble, "connection closed"))
			} else {
				s.setStatus(platform.Connecting, "")
			}
		case socketmode.EventTypeConnectionError:
			if ev, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
				lastTrouble = errText(ev.ErrorObj)
				s.setStatus(platform.TransientDisconnect, lastTrouble)
				s.log.Warn("Slack connection failed", "error", ev.ErrorObj, "attempt", ev.Attempt)
				signal(sig.failed)
			}
		case socketmode.EventTypeIncomingError:
			if ev, ok := evt.Data.(*slack.IncomingEventError); ok && ctx.Err() == nil {
				lastTrouble = "connection lost: " + errText(ev.ErrorObj)
				s.setStatus(platform.TransientDisconnect, lastTrouble)
				s.log.Warn("Slack connection lost", "error", ev.ErrorObj)
			}
		case socketmode.EventTypeInvalidAuth:
			s.log.Error("Slack refused the app token")
		case socketmode.EventTypeConnected:
			signal(sig.connected)
			lastTrouble = ""
			s.setStatus(platform.Connected, "")
			s.log.Info("Slack connected")
		case socketmode.EventTypeHello:
			s.log.Debug("Slack said hello")
		case socketmode.EventTypeErrorWriteFailed:
			if ev, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok {
				s.log.Warn("Slack socket write failed", "error", ev.Cause)
			}
		case socketmode.EventTypeErrorBadMessage:
			// The client could not parse the envelope. Ack it anyway so
			// Slack does not redeliver it, and still try to read it: our
			// own decoding is more forgiving than the client's.
			bad, ok := evt.Data.(*socketmode.ErrorBadMessage)
			if !ok {
				continue
			}
			var req socketmode.Request
			if err := json.Unmarshal(bad.Message, &req); err != nil {
				s.log.Warn("Slack sent an unreadable frame", "error", bad.Cause)
				continue
			}
			if req.Type == socketmode.RequestTypeEventsAPI {
				s.onRawEventsAPI(in, &req, s.acker(ctx, smc, req.EnvelopeID))
			} else {
				s.ack(ctx, smc, req.EnvelopeID)
				s.log.Warn("Slack sent an unreadable envelope", "type", req.Type, "error", bad.Cause)
			}
		case socketmode.EventTypeEventsAPI:
			if evt.Request == nil {
				continue
			}
			s.onEventsAPI(in, evt.Request, evt.Data, s.acker(ctx, smc, evt.Request.EnvelopeID))
		case socketmode.EventTypeInteractive:
			if evt.Request == nil {
				continue
			}
			ack := s.acker(ctx, smc, evt.Request.EnvelopeID)
			if !s.cfg.AckHandledOnly {
				ack()
			}
			if cb, ok := evt.Data.(slack.InteractionCallback); !ok || !s.onInteraction(in, cb, ack) {
				ack()
			}
		default:
			// Slash commands and whatever Slack adds later: acked so Slack
			// does not retry them, otherwise unused.
			if evt.Request != nil {
				s.ack(ctx, smc, evt.Request.EnvelopeID)
			}
		}
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// defaultAckWait leaves room within Slack's 3 s ack deadline.
const defaultAckWait = 2500 * time.Millisecond

// acker returns a function that acks the envelope once, however often it
// is called.
func (s *socket) acker(ctx context.Context, smc *socketmode.Client, envelopeID string) func() {
	return sync.OnceFunc(func() { s.ack(ctx, smc, envelopeID) })
}

func (s *socket) ack(ctx context.Context, smc *socketmode.Client, envelopeID string) {
	if envelopeID == "" {
		return
	}
	if err := smc.AckCtx(ctx, envelopeID, nil); err != nil && ctx.Err() == nil {
		s.log.Warn("Acking Slack envelope failed", "error", err)
	}
}

// eventsAPIPayload is the part of an events_api envelope's payload we
// read, for the rare envelope slack-go could not parse.
type eventsAPIPayload struct {
	EventID string          `json:"event_id"`
	Event   json.RawMessage `json:"event"`
}

// Slack-go decodes an events_api payload once, into the type its registry
// names for the inner event's type. Naming inEvent for the two message
// kinds makes that decode the only one: the adapter reads the fields it
// judges by straight from slack-go's result (slackevents.MessageEvent
// lacks parent_user_id, hidden and the files). The registry is
// process-wide and must not change while events are parsed: it is set
// here, before any adapter runs, and only this package reads these types.
func init() {
	slackevents.EventsAPIInnerEventMapping[slackevents.Message] = inEvent{}
	slackevents.EventsAPIInnerEventMapping[slackevents.AppMention] = inEvent{}
}

// inEvent is a message or app_mention event as Slack sends it. Both kinds
// are decoded into this one struct so the two copies of a mention are
// judged by the same rules.
type inEvent struct {
	Type         string   `json:"type"`
	Subtype      string   `json:"subtype"`
	Channel      string   `json:"channel"`
	ChannelType  string   `json:"channel_type"`
	User         string   `json:"user"`
	BotID        string   `json:"bot_id"`
	Text         string   `json:"text"`
	TS           string   `json:"ts"`
	ThreadTS     string   `json:"thread_ts"`
	ParentUserID string   `json:"parent_user_id"`
	Hidden       bool     `json:"hidden"`
	Files        []inFile `json:"files"`
}

type inFile struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Title              string `json:"title"`
	Mimetype           string `json:"mimetype"`
	Size               int64  `json:"size"`
	Mode               string `json:"mode"`
	URLPrivate         string `json:"url_private"`
	URLPrivateDownload string `json:"url_private_download"`
}

// onEventsAPI handles one events_api envelope as slack-go decoded it; ack
// acks it. Whatever is not a new message for the engine is acked at once.
func (s *socket) onEventsAPI(in inbound, req *socketmode.Request, data any, ack func()) {
	api, ok := data.(slackevents.EventsAPIEvent)
	cb, _ := api.Data.(*slackevents.EventsAPICallbackEvent)
	ev, _ := api.InnerEvent.Data.(*inEvent)
	if !ok || cb == nil || ev == nil {
		// Another event type (subscribed to, but not one the engine
		// reads), or none.
		s.log.Debug("Ignoring Slack event", "type", api.InnerEvent.Type)
		ack()
		return
	}
	if !s.handMessage(in, req, cb.EventID, ev, ack) {
		ack()
	}
}

// onRawEventsAPI handles an events_api envelope that slack-go could not
// parse, decoding it here (more forgivingly).
func (s *socket) onRawEventsAPI(in inbound, req *socketmode.Request, ack func()) {
	var p eventsAPIPayload
	var ev inEvent
	if err := json.Unmarshal(req.Payload, &p); err != nil || len(p.Event) == 0 {
		s.log.Warn("Slack event without a readable payload", "error", err)
		ack()
		return
	}
	if err := json.Unmarshal(p.Event, &ev); err != nil {
		s.log.Warn("Slack event not readable", "event_id", p.EventID, "error", err)
		ack()
		return
	}
	if !s.handMessage(in, req, p.EventID, &ev, ack) {
		ack()
	}
}

// handMessage hands the event's message to the handler, and reports
// whether it was one; it acks the envelope once the handler returned, or
// after ackWait, whichever comes first (with AckHandledOnly only the
// former). The message carries its sender's id alone: the engine reads
// the name when it needs it (UserName), on the conversation's goroutine.
func (s *socket) handMessage(in inbound, req *socketmode.Request, eventID string, ev *inEvent, ack func()) bool {
	m, why := s.norm.toMessage(*ev)
	if why != "" {
		s.log.Debug("Ignoring Slack event", "type", ev.Type, "subtype", ev.Subtype, "channel", ev.Channel, "reason", why)
		return false
	}
	// A mention arrives twice (message and app_mention, either first),
	// both with the same channel and ts, so the same m.ID; a redelivery
	// (retry_attempt > 0) too. Every copy goes to the engine, whose one
	// duplicate check answers Duplicate for the second only once the
	// first is journaled (on this connection the second comes after the
	// first returned; a copy on another connection, or another host's,
	// waits in the engine's claim): the second's ack never comes first.
	s.log.Debug("Slack message received", "channel", m.Target.Channel, "thread", m.Target.Thread, "event_id", eventID,
		"type", ev.Type, "retry_attempt", req.RetryAttempt, "user_id", m.UserID, "dm", m.IsDM, "mentioned", m.Mentioned, "files", len(m.Attachments))
	var deadline *time.Timer
	if !s.cfg.AckHandledOnly {
		deadline = time.AfterFunc(s.ackWait, ack)
	}
	res, err := in.h.HandleMessage(in.ctx, m)
	ackedEarly := deadline != nil && !deadline.Stop()
	switch {
	case err != nil && ackedEarly:
		// Acked at the deadline, then not handled (the grace after a stop
		// ran out, say): Slack will not deliver it again.
		s.log.Error("Slack message acknowledged but not handed over", "channel", m.Target.Channel, "thread", m.Target.Thread,
			"event_id", eventID, "error", err)
		return true
	case err != nil:
		// Not handled: left unacknowledged, Slack delivers it again.
		if in.ctx.Err() == nil {
			s.log.Warn("Handling Slack message failed", "channel", m.Target.Channel, "thread", m.Target.Thread, "error", err)
		}
		return true
	}
	s.log.Debug("Slack message handled", "channel", m.Target.Channel, "thread", m.Target.Thread,
		"result", res.Status.String(), "position", res.Position, "reason", res.Reason)
	ack()
	return true
}

// onInteraction turns permission button presses into actions, hands them
// to the handler, and reports whether there were any; ack acks the
// envelope once the handler took every one (with AckHandledOnly it is not
// acked before: a cluster host's handler publishes the press, and a press
// it could not publish is not acked, so Slack tells the user it failed
// rather than dropping it silently).
func (s *socket) onInteraction(in inbound, cb slack.InteractionCallback, ack func()) bool {
	actions := s.buttons.actions(cb)
	if len(actions) == 0 {
		return false
	}
	for _, action := range actions {
		if err := in.h.HandleAction(in.ctx, action); err != nil {
			if in.ctx.Err() == nil {
				s.log.Warn("Handling Slack button failed", "channel", action.Target.Channel, "thread", action.Target.Thread, "error", err)
			}
			return true
		}
	}
	ack()
	return true
}

// normalizer reads Slack's message events as the engine's messages: what
// is a person's message, its conversation, whether it addresses the bot,
// its text and files. It calls nothing.
type normalizer struct {
	name  string
	self  *botSelf
	files *files
}

// toMessage normalizes a message or app_mention event, or says why it is
// not one the engine should see.
func (n normalizer) toMessage(ev inEvent) (platform.Message, string) {
	if why := n.skipReason(ev); why != "" {
		return platform.Message{}, why
	}
	return n.normalize(ev), ""
}

// skipReason says why an event is not a person's message for the engine,
// or "" when it is one.
func (n normalizer) skipReason(ev inEvent) string {
	botUser, botID := n.self.ids()
	switch {
	case ev.Type != "message" && ev.Type != "app_mention":
		return "not a message"
	case !userSubtype(ev.Subtype):
		return "subtype " + ev.Subtype
	case ev.Hidden:
		return "hidden"
	case ev.Channel == "" || ev.TS == "":
		return "no channel or ts"
	case (botUser != "" && ev.User == botUser) || (botID != "" && ev.BotID == botID):
		return "own message"
	case ev.BotID != "":
		return "bot message"
	case ev.User == "":
		return "no user"
	}
	return ""
}

// normalize turns a message (an event, or one read back from a thread)
// into a platform.Message: its conversation, whether it addresses the
// bot, its text as Claude should read it, its files.
func (n normalizer) normalize(ev inEvent) platform.Message {
	botUser, _ := n.self.ids()
	isDM := ev.ChannelType == "im" || (ev.ChannelType == "" && strings.HasPrefix(ev.Channel, "D"))
	thread := ev.TS
	switch {
	case ev.ThreadTS != "" && ev.ThreadTS != ev.TS:
		thread = ev.ThreadTS
	case isDM:
		// A DM is one conversation; a user who starts a thread in it
		// gets a separate conversation for that thread (case above).
		thread = ""
	}
	mentioned := ev.Type == "app_mention" ||
		(botUser != "" && (strings.Contains(ev.Text, "<@"+botUser+">") || strings.Contains(ev.Text, "<@"+botUser+"|"))) ||
		(botUser != "" && ev.ParentUserID == botUser)
	m := platform.Message{
		ID: ev.Channel + ":" + ev.TS,
		Target: platform.Target{
			Platform:  n.name,
			Channel:   ev.Channel,
			Thread:    thread,
			MessageID: ev.TS,
		},
		UserID:    ev.User,
		Text:      plainText(ev.Text, botUser),
		IsDM:      isDM,
		Mentioned: mentioned,
		Received:  tsTime(ev.TS),
		Seq:       tsSeq(ev.TS),
	}
	for _, f := range ev.Files {
		if att, ok := n.files.attachment(f); ok {
			m.Attachments = append(m.Attachments, att)
		}
	}
	return m
}

// userSubtype reports whether a message subtype is something a person
// wrote: plain, with files, or a thread reply also sent to the channel.
// Edits, deletions, joins, bot posts and the rest are not.
func userSubtype(s string) bool {
	switch s {
	case "", "file_share", "thread_broadcast":
		return true
	}
	return false
}

// tsTime turns a Slack ts ("1700000000.000100") into a time.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Now()
	}
	var us int64
	if frac != "" {
		frac = (frac + "000000")[:6]
		us, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, us*1000)
}

// tsSeq is a message ts as platform.Message.Seq: microseconds since the
// epoch, which Slack hands out in order within a channel. Zero for a ts
// that does not parse (no order is claimed for it).
func tsSeq(ts string) uint64 {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseUint(sec, 10, 64)
	if err != nil || len(frac) > 6 || s > math.MaxUint64/1_000_000-1 {
		return 0
	}
	var us uint64
	if frac != "" {
		if us, err = strconv.ParseUint((frac + "000000")[:6], 10, 64); err != nil {
			return 0
		}
	}
	return s*1_000_000 + us
}
