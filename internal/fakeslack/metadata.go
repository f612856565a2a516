package fakeslack

import (
	"encoding/json"
	"strings"
)

// Message metadata, as Slack keeps it: chat.postMessage's metadata field
// (an event type and a free-form payload) is stored with the post and
// returned by conversations.replies and conversations.history only when
// the call asks for include_all_metadata. cc-connect marks each part of a
// reply with it, so that after a restart it can tell which parts landed.

// Metadata is the metadata a post carried.
type Metadata struct {
	EventType    string         `json:"event_type"`
	EventPayload map[string]any `json:"event_payload"`
}

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

// withThreadLocked adds to o (m as conversations.* carry it) what Slack
// adds beside: the bot's app_id, a reply's parent_user_id, a root's
// reply_count, the blocks, and the metadata under include_all_metadata.
// Callers hold s.mu.
func (s *Server) withThreadLocked(o map[string]any, m *Message, form map[string]string) map[string]any {
	if m.BotID == BotID {
		o["app_id"] = AppID
	}
	if m.Blocks != "" {
		var blocks any
		if json.Unmarshal([]byte(m.Blocks), &blocks) == nil {
			o["blocks"] = blocks
		}
	}
	if m.ThreadTS != "" && m.ThreadTS != m.TS {
		if p, ok := s.lookupLocked(m.Channel, m.ThreadTS); ok && p.User != "" {
			o["parent_user_id"] = p.User
		}
	} else {
		replies := 0
		for x := range s.msgs.AllLocked() {
			if x.Channel == m.Channel && x.ThreadTS == m.TS && x.TS != m.TS {
				replies++
			}
		}
		if replies > 0 {
			o["thread_ts"], o["reply_count"] = m.TS, replies
		}
	}
	if m.Metadata != nil && (form["include_all_metadata"] == "1" || form["include_all_metadata"] == "true") {
		o["metadata"] = m.Metadata
	}
	return o
}
