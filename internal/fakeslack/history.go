package fakeslack

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
)

// Reading a channel back, as Slack's conversations.replies and
// conversations.history answer it: the messages the fake keeps (users'
// messages it delivered or was given, the bot's posts), each in the shape
// Slack returns, with its metadata only when the call asks for
// include_all_metadata (Slack leaves it out otherwise).

// Metadata is the metadata a post carried (chat.postMessage's metadata
// field): an event type and a free-form payload.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

// maxHistoryLimit is the most messages one call returns (Slack's maximum
// and default for internal apps).
const maxHistoryLimit = 1000

// parseMetadata reads chat.postMessage's metadata field; Slack refuses one
// that is not an object with an event type and a payload object.
func parseMetadata(raw string) (*Metadata, *answer) {
	if raw == "" {
		return nil, nil
	}
	var md Metadata
	if err := json.Unmarshal([]byte(raw), &md); err != nil || strings.TrimSpace(md.EventType) == "" || md.EventPayload == nil {
		a := errAnswer("invalid_metadata_format")
		return nil, &a
	}
	return &md, nil
}

// repliesLocked answers conversations.replies: the thread of the message
// at ts (its root first, then the replies in order), or the single message
// when it has none. Callers hold s.mu.
func (s *Server) repliesLocked(form map[string]string) answer {
	ch, ts := form["channel"], form["ts"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	m, ok := s.msgs[ch+"/"+ts]
	if !ok {
		return errAnswer("thread_not_found")
	}
	root := m.TS
	if m.ThreadTS != "" {
		root = m.ThreadTS
	}
	var thread []*Message
	for _, k := range s.order {
		if x := s.msgs[k]; x.Channel == ch && (x.TS == root || x.ThreadTS == root) {
			thread = append(thread, x)
		}
	}
	sort.SliceStable(thread, func(i, j int) bool { return tsLess(thread[i].TS, thread[j].TS) })
	thread = s.window(thread, form)
	return s.page(thread, form, func(x *Message) map[string]any { return s.objectLocked(x, root, form) })
}

// historyLocked answers conversations.history: the channel's top-level
// messages, newest first. Callers hold s.mu.
func (s *Server) historyLocked(form map[string]string) answer {
	ch := form["channel"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	var top []*Message
	for _, k := range s.order {
		if x := s.msgs[k]; x.Channel == ch && (x.ThreadTS == "" || x.ThreadTS == x.TS) {
			top = append(top, x)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return tsLess(top[j].TS, top[i].TS) })
	top = s.window(top, form)
	return s.page(top, form, func(x *Message) map[string]any { return s.objectLocked(x, "", form) })
}

// window keeps the messages between oldest and latest (exclusive unless
// inclusive is set), as both methods filter.
func (s *Server) window(msgs []*Message, form map[string]string) []*Message {
	oldest, latest := form["oldest"], form["latest"]
	inclusive := form["inclusive"] == "1" || form["inclusive"] == "true"
	var out []*Message
	for _, m := range msgs {
		if oldest != "" && (tsLess(m.TS, oldest) || (!inclusive && m.TS == oldest)) {
			continue
		}
		if latest != "" && (tsLess(latest, m.TS) || (!inclusive && m.TS == latest)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// page cuts one page of msgs at cursor and limit, with Slack's has_more and
// response_metadata.next_cursor.
func (s *Server) page(msgs []*Message, form map[string]string, object func(*Message) map[string]any) answer {
	limit := maxHistoryLimit
	if v := form["limit"]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errAnswer("invalid_limit")
		}
		if n > 0 {
			limit = min(n, maxHistoryLimit)
		}
	}
	from := 0
	if c := form["cursor"]; c != "" {
		b, err := base64.StdEncoding.DecodeString(c)
		n, aerr := strconv.Atoi(strings.TrimPrefix(string(b), "next:"))
		if err != nil || aerr != nil || n < 0 || n > len(msgs) {
			return errAnswer("invalid_cursor")
		}
		from = n
	}
	to := min(from+limit, len(msgs))
	out := make([]any, 0, to-from)
	for _, m := range msgs[from:to] {
		out = append(out, object(m))
	}
	next := ""
	if to < len(msgs) {
		next = base64.StdEncoding.EncodeToString([]byte("next:" + strconv.Itoa(to)))
	}
	return okAnswer(map[string]any{"messages": out, "has_more": next != "",
		"response_metadata": map[string]any{"next_cursor": next}})
}

// objectLocked is m as Slack returns it from a history method; root is the
// thread being read ("" for a channel's history). Callers hold s.mu.
func (s *Server) objectLocked(m *Message, root string, form map[string]string) map[string]any {
	o := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "user": m.User}
	if m.BotID != "" {
		o["bot_id"] = m.BotID
		if m.BotID == BotID {
			o["app_id"] = AppID
		}
	}
	if m.Blocks != "" {
		var blocks any
		if json.Unmarshal([]byte(m.Blocks), &blocks) == nil {
			o["blocks"] = blocks
		}
	}
	if len(m.Files) > 0 {
		o["files"] = m.Files
	}
	replies := 0
	for _, k := range s.order {
		if x := s.msgs[k]; x.Channel == m.Channel && x.ThreadTS == m.TS && x.TS != m.TS {
			replies++
		}
	}
	switch {
	case m.ThreadTS != "" && m.ThreadTS != m.TS:
		o["thread_ts"] = m.ThreadTS
		if p, ok := s.msgs[m.Channel+"/"+m.ThreadTS]; ok {
			o["parent_user_id"] = p.User
		}
	case replies > 0:
		o["thread_ts"], o["reply_count"] = m.TS, replies
	}
	if m.Metadata != nil && (form["include_all_metadata"] == "1" || form["include_all_metadata"] == "true") {
		o["metadata"] = m.Metadata
	}
	return o
}

// tsLess orders Slack timestamps ("1700000000.000100") by time.
func tsLess(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) < len(bs)
	}
	if as != bs {
		return as < bs
	}
	return (af + "000000")[:6] < (bf + "000000")[:6]
}
