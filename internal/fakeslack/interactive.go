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
	cur, ok := s.Message(m.Channel, m.TS)
	if !ok {
		tb.Fatalf("fakeslack: no message %s/%s to press a button on", m.Channel, m.TS)
	}
	blockID, value, ok := findButton(cur.Blocks, actionID)
	if !ok {
		tb.Fatalf("fakeslack: message %s/%s has no button %q; blocks: %s", m.Channel, m.TS, actionID, cur.Blocks)
	}
	s.mu.Lock()
	s.nEnvelope++
	envID := fmt.Sprintf("env-%06d", s.nEnvelope)
	s.mu.Unlock()
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
			"actions": []any{map[string]any{
				"action_id": actionID, "block_id": blockID, "value": value, "type": "button",
				"action_ts": "1700000200.000001", "text": map[string]any{"type": "plain_text", "text": actionID},
			}},
		},
	})
	return envID
}

// findButton finds the button with actionID in Block Kit JSON.
func findButton(blocks, actionID string) (blockID, value string, ok bool) {
	for _, b := range (Message{Blocks: blocks}).Buttons() {
		if b.ActionID == actionID {
			return b.BlockID, b.Value, true
		}
	}
	return "", "", false
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
	s.downloads = append(s.downloads, r.Header.Get("Authorization"))
	body, ok := s.files[r.URL.Path]
	gate := s.gateLocked(Download, map[string]string{"path": r.URL.Path})
	if gate != nil {
		s.held[Download]++
	}
	s.notify()
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
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
