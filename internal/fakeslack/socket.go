package fakeslack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Conn is one Socket Mode websocket.
type Conn struct {
	s    *Server
	ws   *websocket.Conn
	wmu  sync.Mutex // serializes writes
	done chan struct{}
	once sync.Once
}

var upgrader = websocket.Upgrader{
	// slack-go sends Origin: https://api.slack.com; accept any origin.
	CheckOrigin: func(*http.Request) bool { return true },
}

// pingEvery is how often the fake pings; slack-go redials a socket that
// goes 30 s without one.
const pingEvery = 200 * time.Millisecond

func (s *Server) serveSocket(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &Conn{s: s, ws: ws, done: make(chan struct{})}
	if err := c.Send(map[string]any{"type": "hello", "num_connections": 1,
		"connection_info": map[string]any{"app_id": AppID}, "debug_info": map[string]any{"host": "fakeslack"}}); err != nil {
		return
	}
	s.mu.Lock()
	s.conns = append(s.conns, c)
	parked := s.parked
	s.parked = nil
	s.sig.Notify()
	s.mu.Unlock()
	for _, p := range parked {
		_, _ = s.sendEvent(p.eventID, p.event, p.retry)
	}

	go func() {
		tick := time.NewTicker(pingEvery)
		defer tick.Stop()
		for {
			c.wmu.Lock()
			err := ws.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(time.Second))
			c.wmu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-c.done:
				return
			}
		}
	}()
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			c.Close()
			return
		}
		var ack struct {
			EnvelopeID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) != nil || ack.EnvelopeID == "" {
			continue
		}
		s.mu.Lock()
		hook := s.onAck
		s.mu.Unlock()
		if hook != nil {
			hook(ack.EnvelopeID)
		}
		// Under s.mu, so that sendEvent, which arms a redelivery under it
		// unless the envelope is acked, never arms one for an acked
		// envelope.
		s.mu.Lock()
		if p := s.pending[ack.EnvelopeID]; p != nil {
			p.timer.Stop()
			delete(s.pending, ack.EnvelopeID)
		}
		s.acks.Add(ack.EnvelopeID)
		s.mu.Unlock()
	}
}

// Send writes one frame (any JSON value) to the client.
func (c *Conn) Send(v any) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.ws.WriteJSON(v)
}

// Close drops the connection without a goodbye, as a network failure
// would.
func (c *Conn) Close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.ws.Close()
		c.s.sig.Notify() // waiters on Closed
	})
}

// Closed reports whether the connection is gone.
func (c *Conn) Closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Conns returns how many Socket Mode connections were opened so far.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// WaitConn returns the n-th (1-based) Socket Mode connection.
func (s *Server) WaitConn(tb testing.TB, n int) *Conn {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("socket connection %d", n), func() bool { return s.Conns() >= n })
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns[n-1]
}

// live returns the connection the next envelope goes to: the newest open
// one, or with SetSpread one of the open ones at random, as Slack spreads
// an app's envelopes over its connections; nil when none is open. Callers
// hold s.mu.
func (s *Server) liveLocked() *Conn {
	if s.spread != nil {
		var open []*Conn
		for _, c := range s.conns {
			if !c.Closed() {
				open = append(open, c)
			}
		}
		if len(open) == 0 {
			return nil
		}
		return open[s.spread.IntN(len(open))]
	}
	for i := len(s.conns) - 1; i >= 0; i-- {
		if !s.conns[i].Closed() {
			return s.conns[i]
		}
	}
	return nil
}

// pendingEnvelope is an events_api envelope not acked yet.
type pendingEnvelope struct {
	eventID string
	event   map[string]any
	retry   int
	timer   *time.Timer
}

// Deliver sends event (a message or app_mention event, see MsgEvent) as an
// events_api envelope over the newest connection, records the message in
// its channel, and returns the envelope id, which the client must ack.
func (s *Server) Deliver(tb testing.TB, event map[string]any) string {
	tb.Helper()
	s.mu.Lock()
	eventID := fmt.Sprintf("Ev%06d", s.nEvent.Next())
	event = s.withParentLocked(event)
	clash := s.recordEventLocked(event)
	s.mu.Unlock()
	if clash != "" {
		// Slack stamps each message with a ts of its own; a test that
		// picks one the fake already gave a post would make that post
		// the message's thread (conversations.replies) and lose it.
		tb.Errorf("fakeslack: delivering a message with ts %s, which is already %s in its channel: pick ts with room for the bot's posts", event["ts"], clash)
	}
	id, err := s.sendEvent(eventID, event, 0)
	s.mu.Lock()
	armed := s.pending[id] != nil
	s.mu.Unlock()
	if err != nil && !armed {
		tb.Fatalf("fakeslack: delivering an event: %v", err)
	}
	// A write to a connection that just closed: as with Slack, the
	// redelivery sends it again.
	return id
}

// DeliverEnvelope sends a ready envelope as it is (for events the fake has
// no builder for, or a redelivery made by hand). It is not redelivered.
func (s *Server) DeliverEnvelope(tb testing.TB, envelope map[string]any) {
	tb.Helper()
	s.mu.Lock()
	c := s.liveLocked()
	id, _ := envelope["envelope_id"].(string)
	s.deliveries.Add(Delivery{EnvelopeID: id})
	s.mu.Unlock()
	if c == nil {
		tb.Fatal("fakeslack: no socket connection")
	}
	if err := c.Send(envelope); err != nil {
		tb.Fatalf("fakeslack: sending an envelope: %v", err)
	}
}

// DeliverMention delivers one post that mentions the bot as Slack does:
// twice, as a message event and as an app_mention event of the same ts
// (with distinct event ids), in that order. It returns both envelope ids.
func (s *Server) DeliverMention(tb testing.TB, event map[string]any) (message, appMention string) {
	tb.Helper()
	mention := map[string]any{}
	for k, v := range event {
		if k != "channel_type" {
			mention[k] = v
		}
	}
	mention["type"] = "app_mention"
	return s.Deliver(tb, event), s.Deliver(tb, mention)
}

// withParentLocked adds parent_user_id to a thread reply that lacks it, as
// Slack sends it: the user (or bot user) who wrote the thread's root, when
// the fake knows the root. Callers hold s.mu.
func (s *Server) withParentLocked(ev map[string]any) map[string]any {
	ch, _ := ev["channel"].(string)
	ts, _ := ev["ts"].(string)
	thread, _ := ev["thread_ts"].(string)
	if _, set := ev["parent_user_id"]; set || thread == "" || thread == ts {
		return ev
	}
	root, ok := s.lookupLocked(ch, thread)
	if !ok {
		return ev
	}
	out := make(map[string]any, len(ev)+1)
	for k, v := range ev {
		out[k] = v
	}
	out["parent_user_id"] = root.User
	return out
}

// recordEventLocked keeps a delivered user message in its channel, and
// describes the other message that has its ts already, if any (a message
// delivered again is not another); callers hold s.mu.
func (s *Server) recordEventLocked(ev map[string]any) (clash string) {
	ch, _ := ev["channel"].(string)
	ts, _ := ev["ts"].(string)
	if ch == "" || ts == "" {
		return ""
	}
	if m, ok := s.lookupLocked(ch, ts); ok {
		switch user, _ := ev["user"].(string); {
		case m.BotID == BotID:
			return fmt.Sprintf("the bot's post %q", m.Text)
		case m.User != user:
			return "a message of " + m.User
		}
		return ""
	}
	user, _ := ev["user"].(string)
	text, _ := ev["text"].(string)
	thread, _ := ev["thread_ts"].(string)
	bot, _ := ev["bot_id"].(string)
	var files []string
	if fs, ok := ev["files"].([]any); ok {
		for _, f := range fs {
			if fo, ok := f.(map[string]any); ok {
				name, _ := fo["name"].(string)
				files = append(files, name)
			}
		}
	}
	s.addMessageLocked(&Message{Channel: ch, TS: ts, ThreadTS: thread, User: user, BotID: bot, Text: text, Files: files})
	return ""
}

// sendEvent wraps event in a fresh envelope and sends it, then arms its
// redelivery: only once it is on the wire, so that a copy never overtakes
// the envelope it repeats. A redelivery finding no connection is parked
// until one opens.
func (s *Server) sendEvent(eventID string, event map[string]any, retry int) (string, error) {
	s.mu.Lock()
	c := s.liveLocked()
	if c == nil && retry > 0 && s.redeliver > 0 {
		s.parked = append(s.parked, &pendingEnvelope{eventID: eventID, event: event, retry: retry})
		s.mu.Unlock()
		return "", nil
	}
	envID := fmt.Sprintf("env-%06d", s.nEnvelope.Next())
	s.deliveries.Add(Delivery{EnvelopeID: envID, EventID: eventID, Retry: retry})
	s.mu.Unlock()
	if c == nil {
		return envID, fmt.Errorf("no socket connection")
	}
	// A write to a connection the client just dropped fails, or lands
	// unread: either way the redelivery below sends it again.
	err := c.Send(EventEnvelope(envID, eventID, retry, event))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.redeliver > 0 && retry < s.retries && !s.Acked(envID) {
		p := &pendingEnvelope{eventID: eventID, event: event, retry: retry}
		p.timer = time.AfterFunc(s.redeliver, func() { s.redeliverEnvelope(envID) })
		s.pending[envID] = p
	}
	return envID, err
}

// RedeliverNow sends every envelope that waits for its ack again at once,
// as if its time had come: a test decides the moment instead of a timer.
// It needs SetRedeliverAfter set (a long time keeps the timers out of the
// way).
func (s *Server) RedeliverNow() {
	s.mu.Lock()
	var due []string
	for id, p := range s.pending {
		if p.timer.Stop() {
			due = append(due, id)
		}
	}
	s.mu.Unlock()
	slices.Sort(due) // in the order they were sent
	for _, id := range due {
		s.redeliverEnvelope(id)
	}
}

// redeliverEnvelope sends an envelope again when its ack is late.
func (s *Server) redeliverEnvelope(envID string) {
	s.mu.Lock()
	p, ok := s.pending[envID]
	delete(s.pending, envID)
	s.mu.Unlock()
	if !ok {
		return
	}
	_, _ = s.sendEvent(p.eventID, p.event, p.retry+1)
}

// deliverEcho sends the bot's own post back as a message event, as Slack
// does; errors are ignored (a closed socket simply misses it).
func (s *Server) deliverEcho(event map[string]any) {
	s.mu.Lock()
	eventID := fmt.Sprintf("Ev%06d", s.nEvent.Next())
	live := s.liveLocked() != nil
	s.mu.Unlock()
	if live {
		_, _ = s.sendEvent(eventID, event, 0)
	}
}

// EventEnvelope wraps an Events API event as Socket Mode delivers it.
func EventEnvelope(envelopeID, eventID string, retry int, event map[string]any) map[string]any {
	reason := ""
	if retry > 0 {
		reason = "timeout"
	}
	return map[string]any{
		"envelope_id":              envelopeID,
		"type":                     "events_api",
		"accepts_response_payload": false,
		"retry_attempt":            retry,
		"retry_reason":             reason,
		"payload": map[string]any{
			"token":          "verification",
			"team_id":        TeamID,
			"api_app_id":     AppID,
			"type":           "event_callback",
			"event_id":       eventID,
			"event_time":     1700000000,
			"event":          event,
			"authorizations": []any{map[string]any{"team_id": TeamID, "user_id": BotUserID, "is_bot": true}},
		},
	}
}

// MsgEvent builds a message event from user in channel at ts; extra
// fields override or add (a nil value removes the field).
func MsgEvent(channel, ts, user, text string, extra map[string]any) map[string]any {
	ev := map[string]any{
		"type":         "message",
		"channel":      channel,
		"channel_type": channelType(channel),
		"user":         user,
		"text":         text,
		"ts":           ts,
		"event_ts":     ts,
		"team":         TeamID,
	}
	for k, v := range extra {
		if v == nil {
			delete(ev, k)
			continue
		}
		ev[k] = v
	}
	return ev
}
