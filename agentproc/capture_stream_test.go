package agentproc_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier (see capture_helper_test.go) for
// --include-partial-messages: each raw SSE event of the API reaches stdout
// as a stream_event line, around the usual whole assistant lines.

// streamKind names a line for the order checks: "se:<event type>[:<delta
// or block type>]", "assistant:<block type>", or the line's type.
func streamKind(l map[string]any) string {
	switch l["type"] {
	case "stream_event":
		ev, _ := l["event"].(map[string]any)
		k := "se:" + str(ev, "type")
		if d := str(ev, "delta", "type"); d != "" {
			k += ":" + d
		}
		if b := str(ev, "content_block", "type"); b != "" {
			k += ":" + b
		}
		return k
	case "assistant":
		content, _ := dig(l, "message", "content").([]any)
		if len(content) == 1 {
			return "assistant:" + str(content[0].(map[string]any), "type")
		}
		return "assistant"
	case "system":
		return "system:" + str(l, "subtype")
	}
	return str(l, "type")
}

func TestRealCLICapturePartialMessages(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--include-partial-messages"}})
	res := c.turn("[[THINK:weighing the options]] [[TOOL:echo hi]]", nil, nil)
	lines := c.lines()
	var kinds []string
	for _, l := range lines {
		kinds = append(kinds, streamKind(l))
	}
	// Every stream_event names its API message and has no parent tool.
	for _, l := range lines {
		if l["type"] == "stream_event" && (str(l, "api_message_id") == "" || l["parent_tool_use_id"] != nil || str(l, "session_id") == "") {
			t.Errorf("stream_event %v: want api_message_id, session_id and a null parent_tool_use_id", l)
		}
	}
	// The first message: thinking, text, tool_use; each block's whole
	// assistant line comes after its deltas and before its
	// content_block_stop; the tool runs after message_stop.
	want := []string{
		"se:message_start",
		"se:content_block_start:thinking", "se:content_block_delta:thinking_delta", "se:content_block_delta:signature_delta",
		"assistant:thinking", "se:content_block_stop",
		"se:content_block_start:text", "se:content_block_delta:text_delta", "assistant:text", "se:content_block_stop",
		"se:content_block_start:tool_use", "se:content_block_delta:input_json_delta", "assistant:tool_use", "se:content_block_stop",
		"se:message_delta", "se:message_stop",
		"user",
		"se:message_start", "se:content_block_start:text", "se:content_block_delta:text_delta", "assistant:text",
		"se:content_block_stop", "se:message_delta", "se:message_stop",
		"result",
	}
	if !subsequence(kinds, want) {
		t.Errorf("line order\n got %s\nwant (in this order, others between) %s", strings.Join(kinds, " "), strings.Join(want, " "))
	}
	// The thinking text is in thinking_delta events and a thinking block,
	// never in text_delta events.
	var thinking, text strings.Builder
	for _, l := range lines {
		if l["type"] != "stream_event" {
			continue
		}
		switch str(l, "event", "delta", "type") {
		case "thinking_delta":
			thinking.WriteString(str(l, "event", "delta", "thinking"))
		case "text_delta":
			text.WriteString(str(l, "event", "delta", "text"))
		}
	}
	if thinking.String() != "weighing the options" || strings.Contains(text.String(), "weighing") {
		t.Errorf("thinking deltas %q, text deltas %q", thinking.String(), text.String())
	}
	if text.String() != "I'll run a command.tool said: hi" || str(res, "result") != "tool said: hi" {
		t.Errorf("text deltas %q, result %q", text.String(), str(res, "result"))
	}
	c.finish()
	c.save("partial_thinking_tool", "Fake API marker: `[[THINK:weighing the options]] [[TOOL:echo hi]]` with\n"+
		"--include-partial-messages: a thinking block, a text block and a Bash tool_use, then the answer.")
}

// subsequence reports whether want appears in got in order.
func subsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestRealCLICaptureStreamChunks: a paced answer reaches stdout chunk by chunk,
// before the whole assistant line; without the flag there are no
// stream_event lines at all.
func TestRealCLICaptureStreamChunks(t *testing.T) {
	t.Parallel()
	for _, partial := range []bool{true, false} {
		api := fakeapi.Start(t)
		var args []string
		if partial {
			args = []string{"--include-partial-messages"}
		}
		c := startCapture(t, api, captureOpts{args: args})
		c.user("[[STREAM:5:500ms]]")
		var deltas int
		var assistant map[string]any
		for assistant == nil {
			l := c.next("the answer", func(m map[string]any) bool { return m["type"] == "stream_event" || m["type"] == "assistant" })
			if l["type"] == "assistant" {
				assistant = l
			} else if str(l, "event", "delta", "type") == "text_delta" {
				deltas++
				if want := fakeapi.StreamChunk(deltas, 5); str(l, "event", "delta", "text") != want {
					t.Errorf("delta %d %q, want %q", deltas, str(l, "event", "delta", "text"), want)
				}
			}
		}
		if want := map[bool]int{true: 5, false: 0}[partial]; deltas != want {
			t.Errorf("partial=%v: %d text deltas before the assistant line, want %d", partial, deltas, want)
		}
		b, _ := json.Marshal(dig(assistant, "message", "content"))
		if !strings.Contains(string(b), fakeapi.StreamChunk(5, 5)) {
			t.Errorf("assistant content %s, want the whole answer", b)
		}
		res := c.result()
		if res["is_error"] != false {
			t.Errorf("result %v", res)
		}
		c.finish()
		if partial {
			c.save("partial_stream_chunks", "Fake API marker: `[[STREAM:5:500ms]]` with --include-partial-messages: an answer in 5\n"+
				"text chunks spread over half a second.")
		}
	}
}
