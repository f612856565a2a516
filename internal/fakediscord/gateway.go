package fakediscord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// dispatched is one event sent with its sequence number.
type dispatched struct {
	seq int
	typ string
	d   any
}

var upgrader = websocket.Upgrader{}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &gwConn{ws: ws, gone: make(chan struct{})}
	defer func() {
		s.mu.Lock()
		if s.conn == c {
			s.conn = nil
		}
		s.mu.Unlock()
		close(c.gone)
	}()
	s.mu.Lock()
	old := s.conn
	s.mu.Unlock()
	if old != nil {
		// A client that closed its connection just before has it gone
		// in a moment (its close is on the way); one still open is a
		// second session of the shard, which gets every event too.
		select {
		case <-old.gone:
		case <-time.After(overlapGrace):
			s.mu.Lock()
			s.overlaps++
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	old = s.conn
	s.conn = c
	silent := s.silent > 0
	if silent {
		s.silent--
	}
	ack := s.noAck == 0
	if !ack {
		s.noAck--
	}
	interval := s.hbInterval
	s.mu.Unlock()
	if old != nil {
		old.ws.Close()
	}
	defer ws.Close()
	if silent {
		_, _, _ = ws.ReadMessage() // until the client gives up
		return
	}
	if c.write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": interval}, "s": nil, "t": nil}) != nil {
		return
	}
	for {
		var fr struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := ws.ReadJSON(&fr); err != nil {
			return
		}
		switch fr.Op {
		case 1:
			s.mu.Lock()
			s.heartbeats++
			s.mu.Unlock()
			s.sig.Notify()
			if ack {
				_ = c.write(map[string]any{"op": 11})
			}
		case 2, 6:
			var d map[string]any
			_ = json.Unmarshal(fr.D, &d)
			s.frames.Add(GWFrame{Op: fr.Op, D: d})
			if !s.handshake(c, fr.Op, d) {
				return
			}
		}
	}
}

// handshake answers IDENTIFY with READY and RESUME with the events the
// client missed, then RESUMED. It reports whether the connection stays.
func (s *Server) handshake(c *gwConn, op int, d map[string]any) bool {
	s.mu.Lock()
	code := s.closeCode
	s.mu.Unlock()
	if tok, _ := d["token"].(string); tok != "Bot "+Token {
		code = 4004
	}
	if code != 0 {
		reason := map[int]string{4004: "Authentication failed.", 4014: "Disallowed intent(s)."}[code]
		c.wmu.Lock()
		_ = c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason))
		c.wmu.Unlock()
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if op == 2 {
		s.seq++
		ready := dispatched{seq: s.seq, typ: "READY", d: map[string]any{
			"v": 9, "session_id": SessionID, "resume_gateway_url": "ws" + s.srv.URL[len("http"):] + "/gateway",
			"user":        map[string]any{"id": BotID, "username": BotName, "bot": true},
			"guilds":      []any{},
			"application": map[string]any{"id": "A1", "flags": 0},
		}}
		s.events = append(s.events, ready)
		_ = c.write(map[string]any{"op": 0, "t": ready.typ, "s": ready.seq, "d": ready.d})
	} else {
		from, _ := d["seq"].(float64)
		for _, ev := range s.events {
			if ev.seq > int(from) {
				_ = c.write(map[string]any{"op": 0, "t": ev.typ, "s": ev.seq, "d": ev.d})
			}
		}
		s.seq++
		_ = c.write(map[string]any{"op": 0, "t": "RESUMED", "s": s.seq, "d": map[string]any{}})
	}
	s.connects++
	s.sig.Notify()
	return true
}

// Dispatch sends a gateway event (op 0) to the connected client.
func (s *Server) Dispatch(tb testing.TB, typ string, d any) {
	tb.Helper()
	if err := s.dispatch(typ, d); err != nil {
		tb.Fatalf("fakediscord: dispatch %s: %v", typ, err)
	}
}

func (s *Server) dispatch(typ string, d any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ev := dispatched{seq: s.seq, typ: typ, d: d}
	s.events = append(s.events, ev)
	if s.conn == nil {
		return fmt.Errorf("no gateway connection")
	}
	return s.conn.write(map[string]any{"op": 0, "t": typ, "s": ev.seq, "d": d})
}

// dispatchOrDrop dispatches an event the client may miss (an echo while
// it is disconnected gets replayed by RESUME).
func (s *Server) dispatchOrDrop(typ string, d any) { _ = s.dispatch(typ, d) }

// Drop cuts the gateway connection without a close frame, as a network
// failure would.
func (s *Server) Drop() {
	s.mu.Lock()
	c := s.conn
	s.conn = nil
	s.mu.Unlock()
	if c != nil {
		c.ws.NetConn().Close()
	}
}

// overlapGrace is how long a new gateway connection waits for the one
// before it to go, when that one's client closed it, before it counts as
// open at the same time (Overlaps).
const overlapGrace = 500 * time.Millisecond

// Overlaps reports how many gateway connections were opened while another
// was still open: two sessions of one shard, both getting every event (a
// cluster must never have two). The fake then closes the older one.
func (s *Server) Overlaps() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.overlaps
}

// Open reports whether a gateway connection is open (its client has not
// closed it, as far as the fake has seen).
func (s *Server) Open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn != nil
}

// Connects reports how many handshakes (READY or RESUMED) completed.
func (s *Server) Connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects
}

// WaitConnected waits until n handshakes completed.
func (s *Server) WaitConnected(tb testing.TB, n int) {
	tb.Helper()
	s.Wait(tb, fmt.Sprintf("gateway handshake %d", n), func() bool { return s.Connects() >= n })
}

// Heartbeats reports how many heartbeats arrived.
func (s *Server) Heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeats
}

// Frame returns the next IDENTIFY or RESUME the client sent.
func (s *Server) Frame(tb testing.TB) GWFrame {
	tb.Helper()
	return s.frames.Next(tb, "an IDENTIFY or RESUME", nil)
}

// PendingFrame returns an IDENTIFY or RESUME already sent and not read by
// Frame, if any.
func (s *Server) PendingFrame() (GWFrame, bool) { return s.frames.TryNext(nil) }

// MessageEvent builds a MESSAGE_CREATE payload of a user's message; extra
// fields override or add.
func MessageEvent(id, channel, guild, authorID, content string, extra map[string]any) map[string]any {
	m := map[string]any{
		"id": id, "channel_id": channel, "content": content, "type": 0,
		"timestamp": "2026-11-30T12:00:00.000000+00:00",
		"author":    map[string]any{"id": authorID, "username": "user" + authorID},
		"mentions":  []any{}, "mention_roles": []any{}, "attachments": []any{}, "embeds": []any{},
	}
	if guild != "" {
		m["guild_id"] = guild
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// Post delivers a user's message as MESSAGE_CREATE and keeps it in its
// channel, which becomes known (a DM without guild, else a text channel)
// unless it already is.
func (s *Server) Post(tb testing.TB, ev map[string]any) {
	tb.Helper()
	id, _ := ev["id"].(string)
	ch, _ := ev["channel_id"].(string)
	guild, _ := ev["guild_id"].(string)
	content, _ := ev["content"].(string)
	author, _ := ev["author"].(map[string]any)
	authorID, _ := author["id"].(string)
	s.mu.Lock()
	if _, ok := s.channels[ch]; !ok {
		typ := 1
		if guild != "" {
			typ = 0
		}
		s.channels[ch] = Channel{ID: ch, Type: typ, GuildID: guild}
	}
	if _, ok := s.msgs.LookupLocked(id); !ok && id != "" {
		var atts []Attachment
		if as, ok := ev["attachments"].([]any); ok {
			for _, a := range as {
				if ao, ok := a.(map[string]any); ok {
					name, _ := ao["filename"].(string)
					typ, _ := ao["content_type"].(string)
					aid, _ := ao["id"].(string)
					size, _ := ao["size"].(int)
					atts = append(atts, Attachment{ID: aid, Filename: name, ContentType: typ, Size: size})
				}
			}
		}
		s.addMessageLocked(&Message{ID: id, ChannelID: ch, AuthorID: authorID, Content: content, Attachments: atts, Created: s.nowLocked()})
	}
	s.mu.Unlock()
	s.Dispatch(tb, "MESSAGE_CREATE", ev)
}

// interaction is a button press waiting for, or given, its answer.
type interaction struct {
	token    string
	created  time.Time
	answered bool
	answer   map[string]any
}

// Click presses the button with customID on the bot's message m as user,
// the way Discord does: an INTERACTION_CREATE carrying the message as it
// stands. The client must answer within 3 s, once. It returns the
// interaction id.
func (s *Server) Click(tb testing.TB, m Message, customID, userID, userName string) string {
	tb.Helper()
	return s.interact(tb, m, userID, userName, func(cur Message) (map[string]any, bool) {
		for _, b := range cur.Buttons() {
			if b.CustomID == customID {
				return map[string]any{"custom_id": customID, "component_type": componentButton}, true
			}
		}
		return nil, false
	})
}

// Choose picks values of the select menu customID on the bot's message m
// as user: an INTERACTION_CREATE whose data carries the values chosen, as
// Discord sends when the menu closes. Values outside the menu's options, or
// fewer or more than its min_values and max_values, fail tb.
func (s *Server) Choose(tb testing.TB, m Message, customID, userID, userName string, values ...string) string {
	tb.Helper()
	return s.interact(tb, m, userID, userName, func(cur Message) (map[string]any, bool) {
		for _, menu := range cur.Menus() {
			if menu.CustomID != customID {
				continue
			}
			if len(values) < menu.MinValues || len(values) > menu.MaxValues {
				tb.Fatalf("fakediscord: menu %q takes %d to %d values, not %q", customID, menu.MinValues, menu.MaxValues, values)
			}
			for _, v := range values {
				known := false
				for _, o := range menu.Options {
					known = known || o.Value == v
				}
				if !known {
					tb.Fatalf("fakediscord: menu %q has no option %q", customID, v)
				}
			}
			return map[string]any{"custom_id": customID, "component_type": componentSelect, "values": values}, true
		}
		return nil, false
	})
}

// interact delivers the INTERACTION_CREATE of a component of m that find
// locates in the message as it stands.
func (s *Server) interact(tb testing.TB, m Message, userID, userName string, find func(Message) (map[string]any, bool)) string {
	tb.Helper()
	s.mu.Lock()
	cur, ok := s.msgs.LookupLocked(m.ID)
	if !ok || cur.Deleted {
		s.mu.Unlock()
		tb.Fatalf("fakediscord: no message %s to click on", m.ID)
	}
	data, found := find(cur.clone())
	if !found {
		s.mu.Unlock()
		tb.Fatalf("fakediscord: message %s has no such component: %s", m.ID, cur.Components)
	}
	id := "I" + s.nextID()
	in := &interaction{token: "itok-" + id, created: time.Now()}
	s.interactions[id] = in
	msg := s.messageObjectLocked(cur)
	ch := s.channels[cur.ChannelID]
	s.mu.Unlock()
	d := map[string]any{
		"id": id, "application_id": "A1", "type": 3, "token": in.token, "version": 1,
		"channel_id": cur.ChannelID,
		"data":       data,
		"message":    msg,
	}
	user := map[string]any{"id": userID, "username": userName}
	if ch.GuildID != "" {
		d["guild_id"] = ch.GuildID
		d["member"] = map[string]any{"user": user, "roles": []any{}}
	} else {
		d["user"] = user
	}
	s.Dispatch(tb, "INTERACTION_CREATE", d)
	return id
}

// InteractionAnswer returns the callback body the client sent for the
// interaction id, if it answered.
func (s *Server) InteractionAnswer(id string) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.interactions[id]
	if !ok || !in.answered {
		return nil, false
	}
	return in.answer, true
}

func (s *Server) interactionCallbackLocked(id, token string, body map[string]any) Answer {
	in, ok := s.interactions[id]
	switch {
	case !ok || in.token != token || time.Since(in.created) > interactionLimit:
		return Answer{Status: 404, Body: unknownInter}
	case in.answered:
		return Answer{Status: 400, Body: alreadyAnswer}
	}
	if t, _ := body["type"].(float64); t < 1 || t > 9 {
		return Answer{Status: 400, Body: invalidForm("type", "BASE_TYPE_CHOICES", "Value must be one of {1, 4, 5, 6, 7, 8, 9}.")}
	}
	in.answered, in.answer = true, body
	s.sig.Notify()
	return Answer{Status: 204}
}

// Button is one button of a message's components.
type Button struct {
	CustomID, Label string
}

// Buttons lists the buttons in the message's current components, in order.
func (m Message) Buttons() []Button {
	var rows []struct {
		Components []struct {
			Type     int    `json:"type"`
			CustomID string `json:"custom_id"`
			Label    string `json:"label"`
		} `json:"components"`
	}
	_ = json.Unmarshal([]byte(m.Components), &rows)
	var out []Button
	for _, r := range rows {
		for _, b := range r.Components {
			if b.Type == 2 {
				out = append(out, Button{CustomID: b.CustomID, Label: b.Label})
			}
		}
	}
	return out
}
