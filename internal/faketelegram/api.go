package faketelegram

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// Telegram's limits, from the Bot API documentation: a message's text after
// entity parsing, a button's callback_data in bytes, and how long a
// callback query may wait for its answer.
const (
	maxTextLen       = 4096
	maxCallbackBytes = 64
	callbackTimeout  = 15 * time.Second
)

// reactions are the emoji a bot may set (the Bot API's ReactionTypeEmoji).
var reactions = strings.Fields("👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳 ❤‍🔥 🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻 👨‍💻 👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾 🤷‍♂ 🤷 🤷‍♀ 😡")

// cannotInitiate is Telegram's answer to a message to a person who has
// not started the bot (written to it in private).
const cannotInitiate = `{"ok":false,"error_code":403,"description":"Forbidden: bot can't initiate conversation with a user"}`

func badRequest(desc string) Answer {
	b, _ := json.Marshal(map[string]any{"ok": false, "error_code": 400, "description": "Bad Request: " + desc})
	return Answer{Status: 400, Body: string(b)}
}

func okResult(v any) Answer {
	b, _ := json.Marshal(map[string]any{"ok": true, "result": v})
	return Answer{Status: 200, Body: string(b)}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"+Token+"/"); ok {
		s.mu.Lock()
		content, found := s.content[rest]
		s.mu.Unlock()
		if !found {
			Answer{Status: 404, Body: `{"ok":false,"error_code":404,"description":"Not Found"}`}.Write(w)
			return
		}
		_, _ = w.Write([]byte(content))
		return
	}
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		Answer{Status: 401, Body: `{"ok":false,"error_code":401,"description":"Unauthorized"}`}.Write(w)
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
		badRequest("invalid request: " + err.Error()).Write(w)
		return
	}
	form := r.Form
	call := Call{Method: method, Form: form, Files: readFiles(r)}
	s.mu.Lock()
	a, overridden := s.overrides.Next(method)
	// A long poll is the active one from the moment it is logged, in the
	// same locked step: a test that waits on the log and then starts a
	// second poller must find the first one registered, to end it (409).
	var mine chan struct{}
	if method == "getUpdates" && !overridden {
		if s.polling != nil {
			close(s.polling)
		}
		mine = make(chan struct{})
		s.polling = mine
	}
	unread := s.calls.Add(call)
	s.mu.Unlock()
	if unread > maxUnread {
		s.tb.Errorf("faketelegram: more than %d calls unread by Next at %s (a retry loop?)", maxUnread, method)
	}
	if overridden {
		a.Write(w)
		return
	}
	if method == "getUpdates" {
		s.longPoll(w, r, form, mine)
		return
	}
	s.mu.Lock()
	if method == "sendDocument" || method == "sendPhoto" {
		a = s.sendFileLocked(method, form, call.Files)
	} else {
		a = s.answerLocked(method, form)
	}
	s.mu.Unlock()
	a.Write(w)
}

// longPoll answers the updates at or after offset (confirming the ones
// before), waiting up to timeout seconds for some to arrive. A newer poll
// (registered as mine by the handler) ends this one with 409, as Telegram
// does.
func (s *Server) longPoll(w http.ResponseWriter, r *http.Request, form url.Values, mine chan struct{}) {
	offset, _ := strconv.Atoi(form.Get("offset"))
	timeout, _ := strconv.Atoi(form.Get("timeout"))
	limit, _ := strconv.Atoi(form.Get("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	defer func() {
		s.mu.Lock()
		if s.polling == mine {
			s.polling = nil
		}
		s.mu.Unlock()
	}()
	for {
		s.mu.Lock()
		if offset > 0 {
			i := 0
			for i < len(s.updateIDs) && s.updateIDs[i] < offset {
				i++
			}
			s.updates, s.updateIDs = s.updates[i:], s.updateIDs[i:]
		}
		n := min(limit, len(s.updates))
		batch := s.updates[:n]
		fed := s.fed.Changed() // under s.mu, as Feed notifies: no update slips between
		s.mu.Unlock()
		if n > 0 {
			b, _ := json.Marshal(map[string]any{"ok": true, "result": batch})
			Answer{Status: 200, Body: string(b)}.Write(w)
			return
		}
		select {
		case <-fed:
		case <-mine:
			Answer{Status: 409, Body: conflictBody}.Write(w)
			return
		case <-deadline.C:
			okResult([]any{}).Write(w)
			return
		case <-r.Context().Done():
			return
		}
	}
}

// answerLocked answers every method but getUpdates; callers hold s.mu.
func (s *Server) answerLocked(method string, form url.Values) Answer {
	if a, limited := s.paceLocked(method, form); limited {
		return a
	}
	switch method {
	case "getMe":
		return okResult(map[string]any{"id": BotID, "is_bot": true, "first_name": "CC", "username": BotUsername,
			"can_join_groups": true, "can_read_all_group_messages": false, "supports_inline_queries": false})
	case "deleteWebhook", "sendChatAction":
		if method == "sendChatAction" {
			if _, ok := s.chatLocked(form); !ok {
				return badRequest("chat not found")
			}
		}
		return okResult(true)
	case "sendMessage":
		return s.sendLocked(form)
	case "editMessageText":
		return s.editLocked(form)
	case "deleteMessage":
		return s.deleteLocked(form)
	case "setMessageReaction":
		return s.reactLocked(form)
	case "answerCallbackQuery":
		q, ok := s.queries[form.Get("callback_query_id")]
		if !ok || q.answered || time.Since(q.created) > callbackTimeout {
			return badRequest("query is too old and response timeout expired or query ID is invalid")
		}
		q.answered = true
		s.sig.Notify()
		return okResult(true)
	case "getFile":
		f, ok := s.files[form.Get("file_id")]
		if !ok {
			return badRequest("invalid file_id")
		}
		return okResult(map[string]any{"file_id": f.ID, "file_unique_id": f.UniqueID, "file_size": f.Size, "file_path": f.Path})
	default:
		return Answer{Status: 404, Body: `{"ok":false,"error_code":404,"description":"Not Found: method not found"}`}
	}
}

func (s *Server) chatLocked(form url.Values) (Chat, bool) {
	id, err := strconv.ParseInt(form.Get("chat_id"), 10, 64)
	if err != nil {
		return Chat{}, false
	}
	c, ok := s.chats[id]
	return c, ok
}

// checkText parses text as Telegram would under parseMode and returns the
// visible text and its mentions (see Parse), or the refusal.
func checkText(text, parseMode string) (string, []string, *Answer) {
	visible, mentions, err := Parse(text, parseMode)
	if err != nil {
		a := badRequest(err.Error())
		return "", nil, &a
	}
	if strings.TrimSpace(visible) == "" {
		a := badRequest("message text is empty")
		return "", nil, &a
	}
	if len(utf16.Encode([]rune(visible))) > maxTextLen {
		a := badRequest("message is too long")
		return "", nil, &a
	}
	return visible, mentions, nil
}

// checkMarkup validates an inline keyboard and returns it normalized.
func checkMarkup(raw string) (string, *Answer) {
	if raw == "" {
		return "", nil
	}
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string  `json:"text"`
			CallbackData *string `json:"callback_data"`
			URL          string  `json:"url"`
		} `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(raw), &kb); err != nil {
		a := badRequest("can't parse reply keyboard markup JSON object")
		return "", &a
	}
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			if b.Text == "" {
				a := badRequest("text buttons are unallowed in the inline keyboard")
				return "", &a
			}
			if b.CallbackData != nil && (len(*b.CallbackData) == 0 || len(*b.CallbackData) > maxCallbackBytes) {
				a := badRequest("BUTTON_DATA_INVALID")
				return "", &a
			}
		}
	}
	return raw, nil
}

func (s *Server) sendLocked(form url.Values) Answer {
	chat, ok := s.chatLocked(form)
	if to, moved := s.migrated[chat.ID]; moved {
		b, _ := json.Marshal(map[string]any{"ok": false, "error_code": 400,
			"description": "Bad Request: group chat was upgraded to a supergroup chat",
			"parameters":  map[string]any{"migrate_to_chat_id": to}})
		return Answer{Status: 400, Body: string(b)}
	}
	if !ok {
		if id, err := strconv.ParseInt(form.Get("chat_id"), 10, 64); err == nil && s.users[id] {
			// A person the bot knows from a group, whose private chat
			// with it they never started.
			return Answer{Status: 403, Body: cannotInitiate}
		}
		return badRequest("chat not found")
	}
	visible, mentions, bad := checkText(form.Get("text"), form.Get("parse_mode"))
	if bad != nil {
		return *bad
	}
	markup, bad := checkMarkup(form.Get("reply_markup"))
	if bad != nil {
		return *bad
	}
	thread, _ := strconv.Atoi(form.Get("message_thread_id"))
	m := &Message{ChatID: chat.ID, MessageID: int(s.msgIDs.Next()), ThreadID: thread, FromBot: true,
		Text: visible, Raw: form.Get("text"), ParseMode: form.Get("parse_mode"), ReplyMarkup: markup, Mentions: mentions}
	s.addMessageLocked(m)
	return okResult(s.messageObject(m, chat))
}

func (s *Server) messageObject(m *Message, chat Chat) map[string]any {
	obj := map[string]any{
		"message_id": m.MessageID, "date": time.Now().Unix(),
		"chat": map[string]any{"id": chat.ID, "type": chat.Type},
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "CC", "username": BotUsername},
		"text": m.Text,
	}
	if m.ThreadID != 0 {
		obj["message_thread_id"] = m.ThreadID
		obj["is_topic_message"] = true
	}
	if m.ReplyMarkup != "" {
		var kb any
		_ = json.Unmarshal([]byte(m.ReplyMarkup), &kb)
		obj["reply_markup"] = kb
	}
	return obj
}

func (s *Server) editLocked(form url.Values) Answer {
	chat, ok := s.chatLocked(form)
	if !ok {
		return badRequest("chat not found")
	}
	id, _ := strconv.Atoi(form.Get("message_id"))
	m, ok := s.lookupLocked(chat.ID, id)
	if !ok || m.Deleted {
		return badRequest("message to edit not found")
	}
	if !m.FromBot {
		return badRequest("message can't be edited")
	}
	visible, mentions, bad := checkText(form.Get("text"), form.Get("parse_mode"))
	if bad != nil {
		return *bad
	}
	markup, bad := checkMarkup(form.Get("reply_markup"))
	if bad != nil {
		return *bad
	}
	if visible == m.Text && sameMarkup(markup, m.ReplyMarkup) {
		return badRequest("message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message")
	}
	m.Text, m.Raw, m.ParseMode, m.ReplyMarkup, m.Mentions = visible, form.Get("text"), form.Get("parse_mode"), markup, mentions
	m.Edits = append(m.Edits, Edit{Text: visible, ParseMode: m.ParseMode, ReplyMarkup: markup, Mentions: mentions})
	s.changedLocked(m)
	return okResult(s.messageObject(m, chat))
}

// sameMarkup treats no keyboard and an empty one alike, as Telegram does.
func sameMarkup(a, b string) bool {
	empty := func(s string) bool { return s == "" || strings.ReplaceAll(s, " ", "") == `{"inline_keyboard":[]}` }
	if empty(a) || empty(b) {
		return empty(a) && empty(b)
	}
	return a == b
}

func (s *Server) reactLocked(form url.Values) Answer {
	chat, ok := s.chatLocked(form)
	if !ok {
		return badRequest("chat not found")
	}
	id, _ := strconv.Atoi(form.Get("message_id"))
	m, ok := s.lookupLocked(chat.ID, id)
	if !ok {
		return badRequest("message to react not found")
	}
	var rs []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if raw := form.Get("reaction"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &rs); err != nil {
			return badRequest("can't parse reaction types JSON object")
		}
	}
	if len(rs) > 1 {
		return badRequest("REACTIONS_TOO_MANY")
	}
	var now []string
	for _, r := range rs {
		if r.Type != "emoji" || !validReaction(r.Emoji) {
			return badRequest("REACTION_INVALID")
		}
		now = append(now, r.Emoji)
	}
	m.Reactions = now
	s.changedLocked(m)
	return okResult(true)
}

func validReaction(e string) bool {
	for _, r := range reactions {
		if r == e {
			return true
		}
	}
	return false
}

// Press taps the inline button whose text is buttonText on the bot's
// message m, as from: it queues the callback_query update Telegram sends,
// carrying the button's callback_data and the message as it stands. The
// client should answer it (answerCallbackQuery). It returns the query id.
func (s *Server) Press(tb testing.TB, m Message, buttonText string, from map[string]any) string {
	tb.Helper()
	s.mu.Lock()
	cur, ok := s.lookupLocked(m.ChatID, m.MessageID)
	if !ok {
		s.mu.Unlock()
		tb.Fatalf("faketelegram: no message %d/%d to press a button on", m.ChatID, m.MessageID)
	}
	data, found := "", false
	for _, b := range cur.clone().Buttons() {
		if b.Text == buttonText {
			data, found = b.CallbackData, true
		}
	}
	if !found {
		s.mu.Unlock()
		tb.Fatalf("faketelegram: message %d/%d has no button %q: %s", m.ChatID, m.MessageID, buttonText, cur.ReplyMarkup)
	}
	upd := s.updIDs.Next()
	qid := fmt.Sprintf("cbq%d", upd)
	s.queries[qid] = &query{created: time.Now()}
	msg := s.messageObject(cur, s.chats[cur.ChatID])
	update := map[string]any{"update_id": upd, "callback_query": map[string]any{
		"id": qid, "from": from, "chat_instance": "ci-" + strconv.FormatInt(cur.ChatID, 10), "data": data, "message": msg,
	}}
	s.mu.Unlock()
	b, _ := json.Marshal(update)
	s.Feed(string(b))
	return qid
}

// Answered reports whether the callback query id was answered.
func (s *Server) Answered(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queries[id]
	return ok && q.answered
}

// Button is one button of a message's inline keyboard.
type Button struct {
	Text, CallbackData string
}

// Buttons lists the buttons of the message's current inline keyboard.
func (m Message) Buttons() []Button {
	var kb struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	_ = json.Unmarshal([]byte(m.ReplyMarkup), &kb)
	var out []Button
	for _, row := range kb.InlineKeyboard {
		for _, b := range row {
			out = append(out, Button{Text: b.Text, CallbackData: b.CallbackData})
		}
	}
	return out
}
