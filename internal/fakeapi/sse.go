package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// slowTick paces the chunks of a [[SLOW]] reply. It is the server's own
// pacing, never something a test waits on.
const slowTick = 200 * time.Millisecond

// reply is one assistant message the fake sends, as JSON or as SSE: an
// optional thinking block, a text block, and an optional tool_use block.
type reply struct {
	msgID, toolID string
	model         string
	usage         Usage
	thinking      string
	text          string
	tool          *toolCall // non-nil: a tool_use follows the text
	slow          bool
	pace          *streamSpec // non-nil: text is sent in paced chunks
	// chunkSent, when set, is told of each paced chunk once it is
	// flushed (pace.go).
	chunkSent func(i int)
}

// thinkingSignature stands in for the signature the real API puts on a
// thinking block; the CLI passes it back in the history unchecked.
const thinkingSignature = "fake-signature"

func (m reply) stopReason() string {
	if m.tool != nil {
		return "tool_use"
	}
	return "end_turn"
}

// message is the non-streaming reply body.
func (m reply) message() map[string]any {
	var content []any
	if m.thinking != "" {
		content = append(content, map[string]any{"type": "thinking", "thinking": m.thinking, "signature": thinkingSignature})
	}
	text := m.text
	if m.pace != nil {
		text = streamText(m.pace.chunks)
	}
	content = append(content, map[string]any{"type": "text", "text": text})
	if m.tool != nil {
		content = append(content, map[string]any{
			"type": "tool_use", "id": m.toolID, "name": m.tool.Name, "input": m.tool.Input,
		})
	}
	u := m.usage
	u.OutputTokens = outputTokens(text)
	return map[string]any{
		"id": m.msgID, "type": "message", "role": "assistant", "model": m.model,
		"content": content, "stop_reason": m.stopReason(), "stop_sequence": nil, "usage": u,
	}
}

func streamText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(StreamChunk(i, n))
	}
	return b.String()
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
// is closed (the test let it finish) or the server is closing; a paced
// reply ([[STREAM]]) sends its chunks spread over its duration.
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
	index := 0
	var sent string
	if m.thinking != "" {
		sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
		for _, part := range halves(m.thinking) {
			sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "thinking_delta", "thinking": part}})
		}
		sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "signature_delta", "signature": thinkingSignature}})
		sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		sent += m.thinking
		index++
	}
	sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
		"content_block": map[string]any{"type": "text", "text": ""}})
	switch {
	case m.pace != nil:
		if !m.paced(ctx, sw, index, closing) {
			return
		}
		sent += streamText(m.pace.chunks)
	default:
		sw.event("content_block_delta", textDelta(index, m.text))
		sent += m.text
	}

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
				sw.event("content_block_delta", textDelta(index, "."))
				sent += "."
			}
		}
		sw.event("content_block_delta", textDelta(index, " done"))
		sent += " done"
	}
	sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	index++

	if m.tool != nil {
		sw.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": m.toolID, "name": m.tool.Name, "input": map[string]any{}}})
		// Two deltas, as the real API sends the input in pieces: a reader
		// must join them before decoding.
		for _, part := range halves(string(m.tool.Input)) {
			sw.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		sw.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	sw.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outputTokens(sent)}})
	sw.event("message_stop", map[string]any{"type": "message_stop"})
}

// paced sends a [[STREAM]] answer's chunks, the first at once and the rest
// evenly over the duration. It returns false when the stream was cut off.
func (m reply) paced(ctx context.Context, sw *sseWriter, index int, closing <-chan struct{}) bool {
	n := m.pace.chunks
	var gap time.Duration
	if n > 1 {
		gap = m.pace.over / time.Duration(n-1)
	}
	begin := time.Now()
	for i := 1; i <= n; i++ {
		if i > 1 {
			t := time.NewTimer(time.Until(begin.Add(time.Duration(i-1) * gap)))
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case <-closing:
				t.Stop()
				return false
			case <-t.C:
			}
		}
		sw.event("content_block_delta", textDelta(index, StreamChunk(i, n)))
		if sw.err != nil {
			return false
		}
		if m.chunkSent != nil {
			m.chunkSent(i)
		}
	}
	return true
}

// halves splits s in two at a rune boundary (one piece when s is short).
func halves(s string) []string {
	mid := len(s) / 2
	for mid > 0 && mid < len(s) && !utf8.RuneStart(s[mid]) {
		mid--
	}
	if mid == 0 {
		return []string{s}
	}
	return []string{s[:mid], s[mid:]}
}
