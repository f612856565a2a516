package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Usage limits, as the real CLI reports them
// (agentproc/testdata/captures/rate_limit): a refused request is a
// synthetic assistant message with "error":"rate_limit", a result with
// is_error and api_error_status 429, and exit 1. A subscription login's
// rate_limit_event comes first when the window's reset is known.

var (
	reLimit     = regexp.MustCompile(`\[\[LIMIT:([^\]]*)\]\]`)
	reLimitWarn = regexp.MustCompile(`\[\[LIMITWARN:(\d+)\]\]`)
)

const limitText = "API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later."

// limited reports whether the turn is refused: [[LIMIT:path]] while path
// exists. A Unix time in the file is the window's reset, reported in a
// rate_limit_event.
func limited(text string) (reset int64, ok bool) {
	m := reLimit.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	b, err := os.ReadFile(m[1])
	if err != nil {
		return 0, false
	}
	reset, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return reset, true
}

func (f *fake) rateLimitEvent(status string, reset int64) {
	info := map[string]any{"status": status, "rateLimitType": "five_hour"}
	if reset > 0 {
		info["resetsAt"] = reset
	}
	f.out.line(map[string]any{"type": "rate_limit_event", "rate_limit_info": info,
		"uuid": uuid.NewString(), "session_id": f.sessionID})
}

func (f *fake) turnLimited(reset int64) resultLine {
	if reset > 0 {
		f.rateLimitEvent("rejected", reset)
	}
	id := uuid.NewString()
	f.out.line(map[string]any{
		"type": "assistant",
		"message": map[string]any{
			"id": id, "model": "<synthetic>", "role": "assistant", "type": "message",
			"stop_reason": "stop_sequence", "stop_sequence": "", "usage": usage{},
			"content": []any{textBlock(limitText)},
		},
		"parent_tool_use_id": nil, "session_id": f.sessionID, "uuid": uuid.NewString(),
		"timestamp": now(), "error": "rate_limit",
	})
	f.appendTranscript(f.assistantTranscriptLine(id, "<synthetic>", textBlock(limitText), usage{}, "end_turn", true))
	text := limitText
	status := 429
	stop := "stop_sequence"
	return resultLine{Subtype: "success", IsError: true, Result: &text, TerminalReason: "api_error",
		APIErrorStatus: &status, StopReason: &stop, NumTurns: 1}
}
