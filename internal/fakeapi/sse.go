package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// slowTick paces the chunks of a [[SLOW]] reply. It is the server's own
// pacing, never something a test waits on.
const slowTick = 200 * time.Millisecond

// reply is one assistant message the fake sends, as JSON or as SSE.
type reply struct {
	msgID, toolID string
	model         string
	usage         Usage
	text          string
	tool          string            // non-empty: a tool_use of this tool follows the text
	input         map[string]string // the tool_use's input
	slow          bool
}

func (m reply) stopReason() string {
	if m.tool != "" {
		return "tool_use"
	}
	return "end_turn"
}

// message is the non-streaming reply body.
func (m reply) message() map[string]any {
	content := []any{map[string]any{"type": "text", "text": m.text}}
	if m.tool != "" {
		content = append(content, map[string]any{
			"type": "tool_use", "id": m.toolID, "name": m.tool, "input": m.input,
		})
	}
	u := m.usage
	u.OutputTokens = outputTokens(m.text)
	return map[string]any{
		"id": m.msgID, "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": m.stopReason(), "stop_sequence": nil, "usage": u,
	}
}

// outputTokens is a deterministic stand-in for the reply's token count.
func outputTokens(text string) int64 { return int64(len(text)/4 + 1) }

// sseWriter writes Server-Sent Events and flushes each one so the client
// sees it at once.
type sseWriter struct {
	w   http.ResponseWriter
	f   http.Flusher
	err error
}

func (s *sseWriter) event(name string, data any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		s.err = fmt.Errorf("encoding %s event: %w", name, err)
		return
	}
	if _, err := fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b); err != nil {
		s.err = err
		return
	}
	s.f.Flush()
}

func textDelta(index int, text string) map[string]any {
	return map[string]any{"type": "content_block_delta", "index": index,
		"delta": map[string]any{"type": "text_delta", "text": text}}
}

// stream writes the reply as the SSE sequence of PROTOCOL.md §13. A slow
// reply keeps sending chunks until ctx ends (the client went away), release
// is closed (the test let it finish) or the server is closing.
func (m reply) stream(ctx context.Context, w http.ResponseWriter, release, closing <-chan struct{}) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "api_error", "response writer cannot flush", "")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sw := &sseWriter{w: w, f: f}

	start := m.usage
	start.OutputTokens = 1
	sw.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": m.msgID, "type": "message", "role": "assistant", "model": m.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	sw.event("ping", map[string]any{"type": "ping"})
	sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	sw.event("content_block_delta", textDelta(0, m.text))
	sent := m.text

	if m.slow {
		tick := time.NewTicker(slowTick)
		defer tick.Stop()
	wait:
		for sw.err == nil {
			select {
			case <-ctx.Done():
				return
			case <-closing:
				return
			case <-release:
				break wait
			case <-tick.C:
				sw.event("content_block_delta", textDelta(0, "."))
				sent += "."
			}
		}
		sw.event("content_block_delta", textDelta(0, " done"))
		sent += " done"
	}
	sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})

	if m.tool != "" {
		in, _ := json.Marshal(m.input)
		sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": 1,
			"content_block": map[string]any{"type": "tool_use", "id": m.toolID, "name": m.tool, "input": map[string]any{}}})
		sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(in)}})
		sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
	}
	sw.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens(sent)}})
	sw.event("message_stop", map[string]any{"type": "message_stop"})
}
