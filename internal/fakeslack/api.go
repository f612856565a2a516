package fakeslack

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// Slack's limits, from its documentation: message text (longer is
// msg_too_long), blocks per message, characters in a section's text, a
// header's text, a button's text, value and action_id, and a block_id.
const (
	maxTextChars    = 40000
	maxBlocks       = 50
	maxSectionChars = 3000
	maxHeaderChars  = 150
	maxButtonText   = 75
	maxButtonValue  = 2000
	maxActionID     = 255
	maxBlockID      = 255
	maxContextElems = 10
)

// answer is one Web API reply: a JSON body, or an HTTP status without one.
type answer struct {
	status int // 0 = 200 with body
	body   map[string]any
	header map[string]string
}

func okAnswer(fields map[string]any) answer {
	body := map[string]any{"ok": true}
	for k, v := range fields {
		body[k] = v
	}
	return answer{body: body}
}

func errAnswer(code string) answer {
	return answer{body: map[string]any{"ok": false, "error": code}}
}

func (a answer) errorCode() string {
	if a.body == nil {
		return "HTTP " + strconv.Itoa(a.status)
	}
	if ok, _ := a.body["ok"].(bool); ok {
		return ""
	}
	e, _ := a.body["error"].(string)
	return e
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	form := map[string]string{}
	if err := r.ParseForm(); err == nil {
		for k, v := range r.Form {
			form[k] = v[0]
		}
	}
	auth := r.Header.Get("Authorization")
	if auth == "" && form["token"] != "" {
		auth = "Bearer " + form["token"]
	}

	if !s.holds.Pass(r.Context(), method, form) {
		return
	}

	s.mu.Lock()
	a, after := s.answerLocked(method, auth, form)
	call := Call{Method: method, Auth: auth, Form: form, Error: a.errorCode(), At: time.Now()}
	switch method {
	case "chat.postMessage", "chat.update":
		call.Pings = pings(form)
	case "files.completeUploadExternal":
		// The comment goes out as the share message's text.
		call.Pings = pings(map[string]string{"text": form["initial_comment"]})
	}
	if w := s.windows[method]; w != nil {
		countInWindow(w, call)
	}
	s.calls.Add(call)
	s.mu.Unlock()
	a.write(w)
	if after != nil {
		after()
	}
}

// write sends a as Slack does: JSON with its charset, or a bare status.
func (a answer) write(w http.ResponseWriter) {
	out := fakekit.Answer{Status: a.status, Header: a.header}
	if a.body != nil {
		b, _ := json.Marshal(a.body)
		out.Body = string(b) + "\n"
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	out.Write(w)
}

// answerLocked decides the answer to one call; after, when set, runs once
// the answer is written (the echo of a post comes after its answer, as on
// Slack). Callers hold s.mu.
func (s *Server) answerLocked(method, auth string, form map[string]string) (answer, func()) {
	if a, ok := s.overrides.Next(method); ok {
		return a, nil
	}
	if a, ok := s.limited.Next(method); ok {
		return a, nil
	}
	if a, limited := s.limitLocked(method, time.Now()); limited {
		return a, nil
	}
	if a, ok := s.down.Next(method); ok {
		return a, nil
	}
	want := BotToken
	if method == "apps.connections.open" {
		want = AppToken
	}
	switch {
	case auth == "":
		return errAnswer("not_authed"), nil
	case auth != "Bearer "+want:
		return errAnswer("invalid_auth"), nil
	}
	if code := s.fail[method]; code != "" {
		return errAnswer(code), nil
	}
	if needed := s.noScope[method]; needed != "" {
		return answer{body: map[string]any{"ok": false, "error": "missing_scope", "needed": needed,
			"provided": "chat:write,reactions:write,users:read,files:read"}}, nil
	}
	switch method {
	case "auth.test":
		return okAnswer(map[string]any{"url": "https://test.slack.com/", "team": "Test", "user": "ccbot",
			"team_id": TeamID, "user_id": BotUserID, "bot_id": BotID}), nil
	case "apps.connections.open":
		return okAnswer(map[string]any{"url": "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/socket"}), nil
	case "chat.postMessage":
		return s.postLocked(form)
	case "chat.update":
		return s.updateLocked(form), nil
	case "chat.delete":
		return s.deleteLocked(form), nil
	case "reactions.add", "reactions.remove":
		return s.reactLocked(method == "reactions.add", form), nil
	case "conversations.open":
		// A direct message with one user: its channel is "D" and the
		// user's id, the same each time, as Slack returns the same one.
		users := form["users"]
		if users == "" || strings.Contains(users, ",") {
			return errAnswer("users_list_not_supplied"), nil
		}
		return okAnswer(map[string]any{"channel": map[string]any{"id": DMChannel(users), "is_im": true}}), nil
	case "conversations.replies":
		return s.repliesLocked(form), nil
	case "conversations.history":
		return s.historyLocked(form), nil
	case "files.getUploadURLExternal":
		return s.uploadURLLocked(form), nil
	case "files.completeUploadExternal":
		return s.completeUploadLocked(form)
	case "users.info":
		id := form["user"]
		if id == "" {
			return errAnswer("user_not_found"), nil
		}
		return okAnswer(map[string]any{"user": map[string]any{
			"id": id, "team_id": TeamID, "name": strings.ToLower(id), "real_name": "Real " + id,
			"profile": map[string]any{"display_name": "Display " + id, "real_name": "Real " + id},
		}}), nil
	default:
		return errAnswer("unknown_method"), nil
	}
}

// checkContent applies Slack's rules for the text and blocks of a post or
// an update; it returns the refusal, or nil.
func checkContent(form map[string]string) *answer {
	text, blocks := form["text"], form["blocks"]
	if strings.TrimSpace(text) == "" && blocks == "" {
		a := errAnswer("no_text")
		return &a
	}
	if utf8.RuneCountInString(text) > maxTextChars {
		a := errAnswer("msg_too_long")
		return &a
	}
	if blocks != "" {
		if problems := blockProblems(blocks); len(problems) > 0 {
			msgs := make([]any, len(problems))
			for i, p := range problems {
				msgs[i] = "[ERROR] " + p
			}
			a := answer{body: map[string]any{"ok": false, "error": "invalid_blocks",
				"errors": msgs, "response_metadata": map[string]any{"messages": msgs}}}
			return &a
		}
	}
	return nil
}

func (s *Server) postLocked(form map[string]string) (answer, func()) {
	ch := form["channel"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found"), nil
	}
	if a := checkContent(form); a != nil {
		return *a, nil
	}
	md, bad := parseMetadata(form["metadata"])
	if bad != nil {
		return *bad, nil
	}
	m := &Message{Channel: ch, TS: s.nextTSLocked(), ThreadTS: form["thread_ts"], User: BotUserID, BotID: BotID,
		Text: form["text"], Blocks: form["blocks"], Metadata: md}
	s.addMessageLocked(m)
	var after func()
	if s.echo {
		echo := map[string]any{"type": "message", "channel": ch, "user": BotUserID, "bot_id": BotID,
			"text": m.Text, "ts": m.TS, "event_ts": m.TS, "channel_type": channelType(ch)}
		if m.ThreadTS != "" {
			echo["thread_ts"] = m.ThreadTS
			if root, ok := s.lookupLocked(ch, m.ThreadTS); ok {
				echo["parent_user_id"] = root.User
			}
		}
		after = func() { s.deliverEcho(echo) }
	}
	return okAnswer(map[string]any{"channel": ch, "ts": m.TS, "message": map[string]any{
		"type": "message", "user": BotUserID, "bot_id": BotID, "text": m.Text, "ts": m.TS}}), after
}

func (s *Server) updateLocked(form map[string]string) answer {
	ch, ts := form["channel"], form["ts"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	m, ok := s.lookupLocked(ch, ts)
	if !ok || m.Deleted {
		return errAnswer("message_not_found")
	}
	if m.BotID != BotID {
		return errAnswer("cant_update_message")
	}
	if a := checkContent(form); a != nil {
		return *a
	}
	// Fields left out keep their value, as on Slack.
	if _, set := form["text"]; set {
		m.Text = form["text"]
	}
	if _, set := form["blocks"]; set {
		m.Blocks = form["blocks"]
	}
	if raw, set := form["metadata"]; set {
		md, bad := parseMetadata(raw)
		if bad != nil {
			return *bad
		}
		m.Metadata = md
	}
	m.Edits = append(m.Edits, Edit{Text: form["text"], Blocks: form["blocks"]})
	s.changedLocked(m)
	return okAnswer(map[string]any{"channel": ch, "ts": ts, "text": m.Text})
}

func (s *Server) reactLocked(add bool, form map[string]string) answer {
	ch, ts, name := form["channel"], form["timestamp"], form["name"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	if name == "" || strings.ContainsAny(name, ": ") {
		return errAnswer("invalid_name")
	}
	m, ok := s.lookupLocked(ch, ts)
	if !ok {
		return errAnswer("message_not_found")
	}
	i := -1
	for j, r := range m.Reactions {
		if r == name {
			i = j
		}
	}
	switch {
	case add && i >= 0:
		return errAnswer("already_reacted")
	case !add && i < 0:
		return errAnswer("no_reaction")
	case add:
		m.Reactions = append(m.Reactions, name)
	default:
		m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
	}
	s.changedLocked(m)
	return okAnswer(nil)
}

func channelType(ch string) string {
	switch {
	case strings.HasPrefix(ch, "D"):
		return "im"
	case strings.HasPrefix(ch, "G"):
		return "group"
	default:
		return "channel"
	}
}

// deleteLocked is chat.delete: the bot may delete its own messages only.
func (s *Server) deleteLocked(form map[string]string) answer {
	ch, ts := form["channel"], form["ts"]
	if !s.knownChannelLocked(ch) {
		return errAnswer("channel_not_found")
	}
	m, ok := s.lookupLocked(ch, ts)
	if !ok || m.Deleted {
		return errAnswer("message_not_found")
	}
	if m.BotID != BotID {
		return errAnswer("cant_delete_message")
	}
	m.Deleted = true
	s.changedLocked(m)
	return okAnswer(map[string]any{"channel": ch, "ts": ts})
}

// DMChannel is the channel of the bot's direct messages with user
// (conversations.open).
func DMChannel(user string) string { return "D" + user }
