package fakeslack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Press clicks the button with actionID on the bot's message m, as user:
// it finds the button in the message's current blocks (as Slack renders
// them) and delivers the block_actions envelope Slack would send, with the
// button's value. It returns the envelope id.
func (s *Server) Press(tb testing.TB, m Message, actionID, user string) string {
	tb.Helper()
	return s.PressIn(tb, m, "", actionID, user)
}

// PressIn is Press for the button with actionID in the block blockID ("":
// the first block that has one), for messages whose blocks reuse action
// ids (a question prompt has a block per question).
func (s *Server) PressIn(tb testing.TB, m Message, blockID, actionID, user string) string {
	tb.Helper()
	cur := s.liveMessage(tb, m)
	var value string
	found := false
	for _, b := range cur.Buttons() {
		if b.ActionID == actionID && (blockID == "" || b.BlockID == blockID) {
			blockID, value, found = b.BlockID, b.Value, true
			break
		}
	}
	if !found {
		tb.Fatalf("fakeslack: message %s/%s has no button %q in block %q; blocks: %s", m.Channel, m.TS, actionID, blockID, cur.Blocks)
	}
	return s.deliverAction(tb, cur, user, map[string]any{
		"action_id": actionID, "block_id": blockID, "value": value, "type": "button",
		"action_ts": "1700000200.000001", "text": map[string]any{"type": "plain_text", "text": actionID},
	})
}

// Choose picks options of the multi-select menu actionID in block blockID
// of the bot's message m, by their values, as user: Slack sends
// block_actions with every option now selected (selected_options, in the
// menu's order). It returns the envelope id.
func (s *Server) Choose(tb testing.TB, m Message, blockID, actionID, user string, values ...string) string {
	tb.Helper()
	cur := s.liveMessage(tb, m)
	menu, ok := cur.findMenu(blockID, actionID)
	if !ok {
		tb.Fatalf("fakeslack: message %s/%s has no menu %q in block %q; blocks: %s", m.Channel, m.TS, actionID, blockID, cur.Blocks)
	}
	var selected []any
	for _, o := range menu.Options {
		for _, v := range values {
			if o.Value == v {
				selected = append(selected, map[string]any{"text": map[string]any{"type": "plain_text", "text": o.Text.Text}, "value": o.Value})
			}
		}
	}
	if len(selected) != len(values) {
		tb.Fatalf("fakeslack: menu %q has no option for some of %q", actionID, values)
	}
	return s.deliverAction(tb, cur, user, map[string]any{
		"action_id": actionID, "block_id": blockID, "type": multiStaticSelect,
		"selected_options": selected, "action_ts": "1700000200.000002",
	})
}

// liveMessage is m as it is now, failing tb when it is gone.
func (s *Server) liveMessage(tb testing.TB, m Message) Message {
	tb.Helper()
	cur, ok := s.Message(m.Channel, m.TS)
	if !ok || cur.Deleted {
		tb.Fatalf("fakeslack: no message %s/%s to press a button on", m.Channel, m.TS)
	}
	return cur
}

// deliverAction sends the block_actions envelope of one action on cur.
func (s *Server) deliverAction(tb testing.TB, cur Message, user string, action map[string]any) string {
	tb.Helper()
	envID := fmt.Sprintf("env-%06d", s.nEnvelope.Next())
	container := map[string]any{"type": "message", "message_ts": cur.TS, "channel_id": cur.Channel, "is_ephemeral": false}
	msg := map[string]any{"type": "message", "user": BotUserID, "bot_id": BotID, "ts": cur.TS, "text": cur.Text}
	if cur.ThreadTS != "" {
		container["thread_ts"] = cur.ThreadTS
		msg["thread_ts"] = cur.ThreadTS
	}
	s.DeliverEnvelope(tb, map[string]any{
		"envelope_id":              envID,
		"type":                     "interactive",
		"accepts_response_payload": false,
		"payload": map[string]any{
			"type":         "block_actions",
			"team":         map[string]any{"id": TeamID, "domain": "test"},
			"user":         map[string]any{"id": user, "username": strings.ToLower(user), "name": strings.ToLower(user), "team_id": TeamID},
			"api_app_id":   AppID,
			"token":        "verification",
			"container":    container,
			"trigger_id":   "1.2.3",
			"channel":      map[string]any{"id": cur.Channel, "name": "chan-" + strings.ToLower(cur.Channel)},
			"message":      msg,
			"response_url": s.srv.URL + "/actions/response",
			"actions":      []any{action},
		},
	})
	return envID
}

// File is a file a user shared, served by the fake.
type File struct {
	ID, Name, Mime string
	Content        string
	// URL is the file's url_private_download on the fake.
	URL string
}

// Object is the file as a message event carries it.
func (f File) Object() map[string]any {
	return map[string]any{
		"id": f.ID, "name": f.Name, "title": f.Name, "mimetype": f.Mime, "filetype": "text",
		"size": len(f.Content), "mode": "hosted", "is_external": false,
		"url_private":          f.URL,
		"url_private_download": f.URL,
	}
}

// AddFile serves content as a shared file; the download needs the bot
// token, as on Slack (without it Slack answers with its sign-in page).
func (s *Server) AddFile(id, name, mime, content string) File {
	path := fmt.Sprintf("/files-pri/%s-%s/download/%s", TeamID, id, name)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = content
	return File{ID: id, Name: name, Mime: mime, Content: content, URL: s.srv.URL + path}
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	body, ok := s.files[r.URL.Path]
	s.mu.Unlock()
	s.downloads.Add(r.Header.Get("Authorization"))
	if !s.holds.Pass(r.Context(), Download, map[string]string{"path": r.URL.Path}) {
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+BotToken {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"))
		return
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write([]byte(body))
}

// Button is one button of a message's blocks.
type Button struct {
	BlockID, ActionID, Text, Value string
}

// Buttons lists the buttons in the message's current blocks, in order.
func (m Message) Buttons() []Button {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	_ = json.Unmarshal([]byte(m.Blocks), &bs)
	var out []Button
	for _, b := range bs {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == "button" {
				out = append(out, Button{BlockID: b.BlockID, ActionID: e.ActionID, Text: e.Text.Text, Value: e.Value})
			}
		}
	}
	return out
}

// Menu is a multi-select menu of a message's blocks.
type Menu struct {
	BlockID, ActionID string
	Options           []MenuOption
	Initial           []string // the values of initial_options
}

// MenuOption is one option of a Menu.
type MenuOption struct {
	Value string
	Text  struct {
		Text string `json:"text"`
	} `json:"text"`
}

// Menus lists the multi-select menus in the message's current blocks.
func (m Message) Menus() []Menu {
	var bs []struct {
		Type     string `json:"type"`
		BlockID  string `json:"block_id"`
		Elements []struct {
			Type     string       `json:"type"`
			ActionID string       `json:"action_id"`
			Options  []MenuOption `json:"options"`
			Initial  []MenuOption `json:"initial_options"`
		} `json:"elements"`
	}
	_ = json.Unmarshal([]byte(m.Blocks), &bs)
	var out []Menu
	for _, b := range bs {
		for _, e := range b.Elements {
			if b.Type == "actions" && e.Type == multiStaticSelect {
				menu := Menu{BlockID: b.BlockID, ActionID: e.ActionID, Options: e.Options}
				for _, o := range e.Initial {
					menu.Initial = append(menu.Initial, o.Value)
				}
				out = append(out, menu)
			}
		}
	}
	return out
}

func (m Message) findMenu(blockID, actionID string) (Menu, bool) {
	for _, menu := range m.Menus() {
		if menu.ActionID == actionID && (blockID == "" || menu.BlockID == blockID) {
			return menu, true
		}
	}
	return Menu{}, false
}
