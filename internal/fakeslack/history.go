package fakeslack

import (
	"encoding/base64"
	"slices"
	"strconv"
	"strings"
)

// Slack's page limits for reading a conversation, from its documentation:
// conversations.replies returns at most 1,000 messages a page (its
// default), conversations.history at most 999 (default 100).
const (
	maxRepliesLimit     = 1000
	maxHistoryLimit     = 999
	defaultHistoryLimit = 100
)

// Put adds a message to its channel as it is, without delivering an event:
// a thread reply, another bot's post, a message with files, written
// before the test started. Its ts must be new in the channel.
func (s *Server) Put(m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := m.clone()
	s.addMessageLocked(&c)
}

// MissingScope makes every call of method fail as Slack does when the
// token lacks the scope needed ("channels:history" for conversations.*
// in a public channel): missing_scope, with needed and provided. An empty
// needed restores the method.
func (s *Server) MissingScope(method, needed string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if needed == "" {
		delete(s.noScope, method)
		return
	}
	s.noScope[method] = needed
}

// tsMicros is a Slack timestamp ("1700000000.000100") in microseconds,
// which orders timestamps by time; a ts that is not one is -1 and sorts
// first.
func tsMicros(ts string) int64 {
	sec, frac, _ := strings.Cut(ts, ".")
	a, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return -1
	}
	b, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return a*1_000_000 + b
}

func tsBefore(a, b string) bool { return tsMicros(a) < tsMicros(b) }

// inRange applies conversations.*'s latest, oldest and inclusive to ts.
func inRange(ts string, form map[string]string) bool {
	inclusive := form["inclusive"] == "true" || form["inclusive"] == "1"
	if l := form["latest"]; l != "" {
		if tsBefore(l, ts) || (!inclusive && l == ts) {
			return false
		}
	}
	if o := form["oldest"]; o != "" {
		if tsBefore(ts, o) || (!inclusive && o == ts) {
			return false
		}
	}
	return true
}

// messageObject is m as conversations.* carry it.
func messageObject(m *Message) map[string]any {
	obj := map[string]any{"type": "message", "ts": m.TS, "text": m.Text}
	if m.User != "" {
		obj["user"] = m.User
	}
	if m.BotID != "" {
		obj["bot_id"] = m.BotID
	}
	if m.ThreadTS != "" {
		obj["thread_ts"] = m.ThreadTS
	}
	if len(m.Files) > 0 {
		files := make([]any, len(m.Files))
		for i, name := range m.Files {
			files[i] = map[string]any{"id": "F" + strconv.Itoa(i), "name": name, "title": name, "mode": "hosted"}
		}
		obj["files"] = files
		obj["subtype"] = "file_share"
	}
	return obj
}

// page cuts msgs (already in the order returned) at the cursor and the
// limit, and says where the next page starts.
func page(msgs []*Message, form map[string]string, def, maxLimit int) ([]*Message, string, *answer) {
	limit := def
	if l := form["limit"]; l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 0 {
			a := errAnswer("invalid_limit")
			return nil, "", &a
		}
		if n > 0 {
			limit = min(n, maxLimit)
		}
	}
	start := 0
	if c := form["cursor"]; c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		ts, ok := strings.CutPrefix(string(raw), "next_ts:")
		i := slices.IndexFunc(msgs, func(m *Message) bool { return m.TS == ts })
		if err != nil || !ok || i < 0 {
			a := errAnswer("invalid_cursor")
			return nil, "", &a
		}
		start = i
	}
	msgs = msgs[start:]
	if len(msgs) <= limit {
		return msgs, "", nil
	}
	return msgs[:limit], base64.StdEncoding.EncodeToString([]byte("next_ts:" + msgs[limit].TS)), nil
}

func (s *Server) pageAnswerLocked(msgs []*Message, next string, form map[string]string) answer {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = s.withThreadLocked(messageObject(m), m, form)
	}
	fields := map[string]any{"messages": out, "has_more": next != ""}
	if next != "" {
		fields["response_metadata"] = map[string]any{"next_cursor": next}
	}
	return okAnswer(fields)
}

// repliesLocked answers conversations.replies: the thread of ts (its
// parent first, then the replies), oldest first, in pages.
func (s *Server) repliesLocked(form map[string]string) answer {
	ch, ts := form["channel"], form["ts"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	if ts == "" {
		return errAnswer("invalid_arguments")
	}
	root, ok := s.lookupLocked(ch, ts)
	if !ok {
		return errAnswer("thread_not_found")
	}
	if root.ThreadTS != "" && root.ThreadTS != root.TS {
		// ts names a reply: Slack answers with its thread.
		if r, ok := s.lookupLocked(ch, root.ThreadTS); ok {
			root = r
		}
	}
	var thread []*Message
	for m := range s.msgs.AllLocked() {
		if m.Channel == ch && (m.TS == root.TS || m.ThreadTS == root.TS) && inRange(m.TS, form) {
			thread = append(thread, m)
		}
	}
	slices.SortStableFunc(thread, func(a, b *Message) int {
		switch {
		case tsBefore(a.TS, b.TS):
			return -1
		case tsBefore(b.TS, a.TS):
			return 1
		}
		return 0
	})
	msgs, next, bad := page(thread, form, maxRepliesLimit, maxRepliesLimit)
	if bad != nil {
		return *bad
	}
	return s.pageAnswerLocked(msgs, next, form)
}

// historyLocked answers conversations.history: the channel's top-level
// messages (thread replies only as their parents show them), newest first,
// in pages.
func (s *Server) historyLocked(form map[string]string) answer {
	ch := form["channel"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	var top []*Message
	for m := range s.msgs.AllLocked() {
		if m.Channel == ch && (m.ThreadTS == "" || m.ThreadTS == m.TS) && inRange(m.TS, form) {
			top = append(top, m)
		}
	}
	slices.SortStableFunc(top, func(a, b *Message) int {
		switch {
		case tsBefore(b.TS, a.TS):
			return -1
		case tsBefore(a.TS, b.TS):
			return 1
		}
		return 0
	})
	msgs, next, bad := page(top, form, defaultHistoryLimit, maxHistoryLimit)
	if bad != nil {
		return *bad
	}
	return s.pageAnswerLocked(msgs, next, form)
}
