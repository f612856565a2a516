package fakediscord

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
)

// Discord's limits, from its documentation: message content (counted in
// UTF-16 code units, as Discord's clients count it), action rows per
// message, buttons per row, a custom_id and a button label; and the time an
// interaction may wait for its first answer.
const (
	maxContent       = 2000
	maxActionRows    = 5
	maxRowButtons    = 5
	maxCustomID      = 100
	maxButtonLabel   = 80
	interactionLimit = 3 * time.Second
	maxNonce         = 25
	// nonceWindow is how long a post's nonce answers a repeated one under
	// enforce_nonce ("the past few minutes", Discord says).
	nonceWindow = 5 * time.Minute
)

// Error bodies Discord sends.
const (
	unauthorized   = `{"message":"401: Unauthorized","code":0}`
	unknownChannel = `{"message":"Unknown Channel","code":10003}`
	unknownMessage = `{"message":"Unknown Message","code":10008}`
	unknownEmoji   = `{"message":"Unknown Emoji","code":10014}`
	emptyMessage   = `{"message":"Cannot send an empty message","code":50006}`
	notAuthor      = `{"message":"Cannot edit a message authored by another user","code":50005}`
	notFound       = `{"message":"404: Not Found","code":0}`
	unknownInter   = `{"message":"Unknown interaction","code":10062}`
	alreadyAnswer  = `{"message":"Interaction has already been acknowledged.","code":40060}`
)

// invalidForm is Discord's 50035 answer naming one field's problem.
func invalidForm(field, code, message string) string {
	b, _ := json.Marshal(map[string]any{
		"message": "Invalid Form Body", "code": 50035,
		"errors": nestErrors(strings.Split(field, "."), code, message),
	})
	return string(b)
}

// nestErrors builds {"a":{"b":{"_errors":[…]}}} for the path a.b.
func nestErrors(path []string, code, message string) map[string]any {
	if len(path) == 0 {
		return map[string]any{"_errors": []any{map[string]any{"code": code, "message": message}}}
	}
	return map[string]any{path[0]: nestErrors(path[1:], code, message)}
}

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/api/v9")
	body, files, bad := readBody(r)
	if bad != nil {
		bad.Write(w)
		return
	}
	// The call is logged in the same locked step that makes its effect
	// visible (a post, an edit): a test that waits for a post and then
	// counts the calls finds the call that made it.
	s.mu.Lock()
	a, after := s.answerLocked(r, path, body, files)
	call := Call{Method: r.Method, Path: path, Body: body, Files: files, Status: a.Status, Pings: messagePings(r.Method, path, body)}
	unread := s.calls.Add(call)
	s.mu.Unlock()
	if unread > maxUnread {
		s.tb.Errorf("fakediscord: more than %d REST calls unread by Next at %s %s (a retry loop?)", maxUnread, r.Method, path)
	}
	a.Write(w)
	if after != nil {
		after()
	}
}

// answerLocked decides the answer to one REST call, with s.mu held;
// after, when set, runs once the answer is written (the echo of a post).
func (s *Server) answerLocked(r *http.Request, path string, body map[string]any, files []Attachment) (Answer, func()) {
	interactionCallback := strings.HasPrefix(path, "/interactions/")
	if !interactionCallback && r.Header.Get("Authorization") != "Bot "+Token {
		return Answer{Status: 401, Body: unauthorized}, nil
	}
	key := r.Method + " " + path
	if a, ok := s.overrides.Next(key); ok {
		return a, nil
	}
	// Paths carry an emoji escaped; match on the decoded segments.
	var parts []string
	for _, p := range strings.Split(strings.Trim(path, "/"), "/") {
		if d, err := url.PathUnescape(p); err == nil {
			p = d
		}
		parts = append(parts, p)
	}
	switch {
	case path == "/gateway/bot" || path == "/gateway":
		wsURL := "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gateway"
		return Answer{Status: 200, Body: fmt.Sprintf(`{"url":%q,"shards":1,"session_start_limit":{"total":1000,"remaining":999,"reset_after":0,"max_concurrency":1}}`, wsURL)}, nil
	case r.Method == "POST" && path == "/users/@me/channels":
		return s.openDMLocked(body), nil
	case path == "/users/@me":
		return Answer{Status: 200, Body: fmt.Sprintf(`{"id":%q,"username":%q,"bot":true}`, BotID, BotName)}, nil
	case r.Method == "GET" && len(parts) == 2 && parts[0] == "channels":
		c, ok := s.channels[parts[1]]
		if !ok {
			return Answer{Status: 404, Body: unknownChannel}, nil
		}
		return Answer{Status: 200, Body: channelJSON(c)}, nil
	case r.Method == "GET" && len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages":
		return s.messagesLocked(parts[1], r.URL.Query()), nil
	case r.Method == "GET" && len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		return s.messageLocked(parts[1], parts[3]), nil
	case r.Method == "POST" && len(parts) == 3 && parts[0] == "channels" && parts[2] == "messages":
		return s.postLocked(parts[1], body, files)
	case r.Method == "PATCH" && len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		if a, limited := s.editLimitLocked(parts[1]); limited {
			return a, nil
		}
		return s.editLocked(parts[1], parts[3], body), nil
	case r.Method == "DELETE" && len(parts) == 4 && parts[0] == "channels" && parts[2] == "messages":
		return s.deleteLocked(parts[1], parts[3]), nil
	case r.Method == "POST" && len(parts) == 5 && parts[0] == "channels" && parts[4] == "threads":
		return s.startThreadLocked(parts[1], parts[3], body), nil
	case r.Method == "POST" && len(parts) == 3 && parts[0] == "channels" && parts[2] == "typing":
		if _, ok := s.channels[parts[1]]; !ok {
			return Answer{Status: 404, Body: unknownChannel}, nil
		}
		return Answer{Status: 204}, nil
	case (r.Method == "PUT" || r.Method == "DELETE") && len(parts) == 7 && parts[0] == "channels" && parts[4] == "reactions" && parts[6] == "@me":
		return s.reactLocked(r.Method == "PUT", parts[1], parts[3], parts[5]), nil
	case r.Method == "POST" && interactionCallback && len(parts) == 4 && parts[3] == "callback":
		return s.interactionCallbackLocked(parts[1], parts[2], body), nil
	default:
		return Answer{Status: 404, Body: notFound}, nil
	}
}

func channelJSON(c Channel) string {
	m := map[string]any{"id": c.ID, "type": c.Type}
	if c.GuildID != "" {
		m["guild_id"] = c.GuildID
	}
	if c.ParentID != "" {
		m["parent_id"] = c.ParentID
	}
	if c.Name != "" {
		m["name"] = c.Name
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// checkContent applies Discord's rules to a message body; "" when fine.
func checkContent(body map[string]any, needSomething bool) string {
	content, _ := body["content"].(string)
	comps, _ := body["components"].([]any)
	if n := len(utf16.Encode([]rune(content))); n > maxContent {
		return invalidForm("content", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxContent))
	}
	if needSomething && strings.TrimSpace(content) == "" && len(comps) == 0 {
		return emptyMessage
	}
	if len(comps) > maxActionRows {
		return invalidForm("components", "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxActionRows))
	}
	for i, row := range comps {
		r, _ := row.(map[string]any)
		inRow, _ := r["components"].([]any)
		if r["type"] != float64(componentActions) || len(inRow) == 0 || len(inRow) > maxRowButtons {
			return invalidForm(fmt.Sprintf("components.%d.components", i), "BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxRowButtons))
		}
		if bad := checkRow(i, inRow); bad != "" {
			return bad
		}
	}
	return ""
}

func componentsJSON(body map[string]any) string {
	c, ok := body["components"]
	if !ok {
		return ""
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func (s *Server) postLocked(channel string, body map[string]any, files []Attachment) (Answer, func()) {
	if _, ok := s.channels[channel]; !ok {
		return Answer{Status: 404, Body: unknownChannel}, nil
	}
	if s.noDMs[channel] {
		return Answer{Status: 403, Body: cannotDM}, nil
	}
	if bad := s.checkFilesLocked(files); bad != nil {
		return *bad, nil
	}
	if bad := checkContent(body, len(files) == 0); bad != "" {
		return Answer{Status: 400, Body: bad}, nil
	}
	nonce, bad := nonceOf(body)
	if bad != "" {
		return Answer{Status: 400, Body: bad}, nil
	}
	if enforce, _ := body["enforce_nonce"].(bool); enforce && nonce != "" {
		// The same author's post with this nonce within the window is
		// returned, and nothing is created: no second message, no echo.
		var earlier *Message // the latest, should there be several
		for m := range s.msgs.AllLocked() {
			if m.AuthorID == BotID && m.Nonce == nonce && s.nowLocked().Sub(m.Created) < nonceWindow {
				earlier = m
			}
		}
		if earlier != nil {
			obj := s.messageObjectLocked(earlier)
			obj["nonce"] = nonce
			b, _ := json.Marshal(obj)
			return Answer{Status: 200, Body: string(b)}, nil
		}
	}
	content, _ := body["content"].(string)
	m := &Message{ID: s.nextID(), ChannelID: channel, AuthorID: BotID, Content: content, Components: componentsJSON(body),
		Nonce: nonce, Created: s.nowLocked(), Attachments: s.storeFilesLocked(files)}
	s.addMessageLocked(m)
	obj := s.messageObjectLocked(m)
	if nonce != "" {
		// The create answer and MESSAGE_CREATE carry the nonce; a message
		// fetched later does not.
		obj["nonce"] = nonce
	}
	b, _ := json.Marshal(obj)
	var after func()
	if s.echo {
		after = func() { s.dispatchOrDrop("MESSAGE_CREATE", obj) }
	}
	return Answer{Status: 200, Body: string(b)}, after
}

// nonceOf reads a post's nonce (a string or an integer, at most 25
// characters), or says why Discord refuses it.
func nonceOf(body map[string]any) (string, string) {
	var n string
	switch v := body["nonce"].(type) {
	case nil:
		return "", ""
	case string:
		n = v
	case float64:
		n = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return "", invalidForm("nonce", "NONCE_TYPE_INVALID", "Nonce must be an integer or a string.")
	}
	if len(n) > maxNonce {
		return "", invalidForm("nonce", "BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxNonce))
	}
	return n, ""
}

func (s *Server) addMessageLocked(m *Message) { s.msgs.PutLocked(m.ID, m) }

// messageObjectLocked is m as the REST API and the gateway carry it.
func (s *Server) messageObjectLocked(m *Message) map[string]any {
	author := map[string]any{"id": m.AuthorID, "username": "user" + m.AuthorID}
	if m.AuthorBot {
		author["bot"] = true
	}
	if m.AuthorID == BotID {
		author = map[string]any{"id": BotID, "username": BotName, "bot": true}
	}
	obj := map[string]any{"id": m.ID, "channel_id": m.ChannelID, "content": m.Content, "type": 0,
		"author": author, "timestamp": "2026-11-30T12:00:00.000000+00:00", "tts": false, "mention_everyone": false,
		"mentions": []any{}, "mention_roles": []any{}, "attachments": s.attachmentObjectsLocked(m), "embeds": []any{}, "pinned": false}
	if m.Components != "" {
		var c any
		_ = json.Unmarshal([]byte(m.Components), &c)
		obj["components"] = c
	}
	if c, ok := s.channels[m.ChannelID]; ok && c.GuildID != "" {
		obj["guild_id"] = c.GuildID
	}
	return obj
}

func (s *Server) editLocked(channel, id string, body map[string]any) Answer {
	if _, ok := s.channels[channel]; !ok {
		return Answer{Status: 404, Body: unknownChannel}
	}
	m, ok := s.msgs.LookupLocked(id)
	if !ok || m.ChannelID != channel || m.Deleted {
		return Answer{Status: 404, Body: unknownMessage}
	}
	if m.AuthorID != BotID {
		return Answer{Status: 403, Body: notAuthor}
	}
	if bad := checkContent(body, false); bad != "" {
		return Answer{Status: 400, Body: bad}
	}
	// Fields left out keep their value, as on Discord.
	if c, ok := body["content"].(string); ok {
		m.Content = c
	}
	if _, ok := body["components"]; ok {
		m.Components = componentsJSON(body)
	}
	m.Edits = append(m.Edits, Edit{Content: m.Content, Components: m.Components})
	s.msgs.ChangedLocked(id)
	b, _ := json.Marshal(s.messageObjectLocked(m))
	return Answer{Status: 200, Body: string(b)}
}

func (s *Server) startThreadLocked(channel, id string, body map[string]any) Answer {
	parent, ok := s.channels[channel]
	if !ok {
		return Answer{Status: 404, Body: unknownChannel}
	}
	if m, ok := s.msgs.LookupLocked(id); !ok || m.ChannelID != channel {
		return Answer{Status: 404, Body: unknownMessage}
	}
	if _, exists := s.channels[id]; exists {
		return Answer{Status: 400, Body: `{"message":"A thread has already been created for this message","code":160004}`}
	}
	name, _ := body["name"].(string)
	if n := len([]rune(name)); n == 0 || n > 100 {
		return Answer{Status: 400, Body: invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")}
	}
	th := Channel{ID: id, Type: 11, GuildID: parent.GuildID, ParentID: channel, Name: name}
	s.channels[id] = th
	s.sig.Notify()
	return Answer{Status: 201, Body: channelJSON(th)}
}

func (s *Server) reactLocked(add bool, channel, id, emoji string) Answer {
	if _, ok := s.channels[channel]; !ok {
		return Answer{Status: 404, Body: unknownChannel}
	}
	m, ok := s.msgs.LookupLocked(id)
	if !ok || m.ChannelID != channel {
		return Answer{Status: 404, Body: unknownMessage}
	}
	if !validEmoji(emoji) {
		return Answer{Status: 400, Body: unknownEmoji}
	}
	i := -1
	for j, r := range m.Reactions {
		if r == emoji {
			i = j
		}
	}
	switch {
	case add && i < 0:
		m.Reactions = append(m.Reactions, emoji)
	case !add && i >= 0:
		m.Reactions = append(m.Reactions[:i], m.Reactions[i+1:]...)
	}
	s.msgs.ChangedLocked(id)
	return Answer{Status: 204}
}

// validEmoji accepts a Unicode emoji or a custom one as name:id, as
// Discord does; a plain word (a Slack-style name) is Unknown Emoji.
func validEmoji(e string) bool {
	if name, id, ok := strings.Cut(e, ":"); ok {
		return name != "" && id != "" && strings.Trim(id, "0123456789") == ""
	}
	for _, r := range e {
		if r > unicode.MaxLatin1 {
			return true
		}
	}
	return false
}
