package fakeapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseEvent is one decoded Server-Sent Event.
type sseEvent struct {
	Name string
	Data map[string]any
}

// post sends a Messages API request whose last user message is text.
func post(t *testing.T, ctx context.Context, s *Server, stream bool, messages ...map[string]any) *http.Response {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"model": "claude-test-1", "max_tokens": 100, "stream": stream,
		"system":   []any{map[string]any{"type": "text", "text": "SYSTEM-A"}},
		"messages": messages,
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages?beta=true", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func user(text string) map[string]any {
	return map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}}
}

// readEvents decodes an SSE body until EOF or until stop returns true.
func readEvents(t *testing.T, r io.Reader, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev := sseEvent{Name: name}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.Data); err != nil {
				t.Fatalf("event %s: bad data %q: %v", name, line, err)
			}
			if ev.Data["type"] != name {
				t.Errorf("event %s carries data type %v", name, ev.Data["type"])
			}
			out = append(out, ev)
			if stop != nil && stop(ev) {
				return out
			}
		}
	}
	return out
}

func names(evs []sseEvent) string {
	var n []string
	for _, e := range evs {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}

// text concatenates the text deltas of a stream.
func text(evs []sseEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			b.WriteString(d["text"].(string))
		}
	}
	return b.String()
}

func TestStreamReplies(t *testing.T) {
	t.Parallel()
	const textSeq = "message_start,ping,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	// The tool input comes in two input_json_delta pieces.
	const toolSeq = "message_start,ping,content_block_start,content_block_delta,content_block_stop," +
		"content_block_start,content_block_delta,content_block_delta,content_block_stop,message_delta,message_stop"
	toolUse := map[string]any{"role": "assistant", "content": []any{map[string]any{
		"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": map[string]any{"command": "echo hi"}}}}
	toolResult := map[string]any{"role": "user", "content": []any{map[string]any{
		"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi there"}}}
	tests := []struct {
		name     string
		messages []map[string]any
		events   string
		text     string
		stop     string
		input    float64
		outcome  string
	}{
		{"echo", []map[string]any{user("hello")}, textSeq, "echo: hello", "end_turn", 7, OutcomeText},
		{"reminder stripped", []map[string]any{user("<system-reminder>\nx\n</system-reminder>\n\nhi")}, textSeq, "echo: hi", "end_turn", 7, OutcomeText},
		{"system role after user", []map[string]any{user("hey"), {"role": "system", "content": "env info"}}, textSeq, "echo: hey", "end_turn", 7, OutcomeText},
		{"big", []map[string]any{user("[[BIG]] x")}, textSeq, "echo: [[BIG]] x", "end_turn", BigInputTokens, OutcomeText},
		{"tool", []map[string]any{user("[[TOOL:touch x]]")}, toolSeq, "I'll run a command.", "tool_use", 7, OutcomeToolUse},
		{"merged inputs echo the last", []map[string]any{{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "[Request interrupted by user]\n"},
			map[string]any{"type": "text", "text": "<system-reminder>r</system-reminder>"},
			map[string]any{"type": "text", "text": "after"}}}}, textSeq, "echo: after", "end_turn", 7, OutcomeText},
		{"prompt after a rejected tool", []map[string]any{user("[[TOOL:x]]"), toolUse, {"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rejected", "is_error": true},
			map[string]any{"type": "text", "text": "next"}}}}, textSeq, "echo: next", "end_turn", 7, OutcomeText},
		{"merged slow prompt acts once", []map[string]any{{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "[[SLOW]] x"},
			map[string]any{"type": "text", "text": "[Request interrupted by user]\n"},
			map[string]any{"type": "text", "text": "again"}}}}, textSeq, "echo: again", "end_turn", 7, OutcomeText},
		{"merged size marker sticks", []map[string]any{{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "[[BIG]] x"},
			map[string]any{"type": "text", "text": "again"}}}}, textSeq, "echo: again", "end_turn", BigInputTokens, OutcomeText},
		{"tool follow-up", []map[string]any{user("[[TOOL:echo hi]]"), toolUse, toolResult}, textSeq, "tool said: hi there", "end_turn", 7, OutcomeText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			resp := post(t, t.Context(), s, true, tt.messages...)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			evs := readEvents(t, resp.Body, nil)
			if got := names(evs); got != tt.events {
				t.Errorf("events\n got %s\nwant %s", got, tt.events)
			}
			if got := text(evs); got != tt.text {
				t.Errorf("text %q, want %q", got, tt.text)
			}
			start := evs[0].Data["message"].(map[string]any)
			if u := start["usage"].(map[string]any); u["input_tokens"] != tt.input || u["cache_read_input_tokens"] != 2500.0 {
				t.Errorf("message_start usage %v, want input_tokens %v, cache_read 2500", u, tt.input)
			}
			if start["model"] != "claude-test-1" {
				t.Errorf("model %v, want the requested one", start["model"])
			}
			delta := evs[len(evs)-2].Data["delta"].(map[string]any)
			if delta["stop_reason"] != tt.stop {
				t.Errorf("stop_reason %v, want %s", delta["stop_reason"], tt.stop)
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].Outcome != tt.outcome || reqs[0].Model != "claude-test-1" ||
				len(reqs[0].System) != 1 || reqs[0].System[0] != "SYSTEM-A" || reqs[0].Header.Get("X-Api-Key") != "test" {
				t.Errorf("recorded %+v", reqs)
			}
		})
	}
}

func TestToolUseInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt, tool string
		input        map[string]string
	}{
		{"please [[TOOL:touch a b]] now", "Bash", map[string]string{"command": "touch a b", "description": "Run a command"}},
		{"[[WRITE:/ws/f.txt:written]]", "Write", map[string]string{"file_path": "/ws/f.txt", "content": "written"}},
	}
	s := Start(t)
	for _, tt := range tests {
		evs := readEvents(t, post(t, t.Context(), s, true, user(tt.prompt)).Body, nil)
		var partial string
		for _, e := range evs {
			if cb, ok := e.Data["content_block"].(map[string]any); ok && cb["type"] == "tool_use" && cb["name"] != tt.tool {
				t.Errorf("%s: tool %v, want %s", tt.prompt, cb["name"], tt.tool)
			}
			if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == "input_json_delta" {
				partial += d["partial_json"].(string)
			}
		}
		var in map[string]string
		if err := json.Unmarshal([]byte(partial), &in); err != nil || !maps.Equal(in, tt.input) {
			t.Errorf("%s: tool input %q (%v), want %v", tt.prompt, partial, err, tt.input)
		}
	}
}

// The request records the names of the tools it offers.
func TestRequestTools(t *testing.T) {
	t.Parallel()
	s := Start(t)
	body := `{"model":"m","max_tokens":1,"stream":false,"tools":[{"name":"Read","input_schema":{}},{"name":"Grep"}],` +
		`"messages":[{"role":"user","content":"hi"}]}`
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := s.Requests()[0].Tools; !slices.Equal(got, []string{"Read", "Grep"}) {
		t.Errorf("Tools = %q", got)
	}
}

func TestErrorReplies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		marker  string
		status  int
		errType string
		message string
	}{
		{"[[TOOLONG]]", 400, "invalid_request_error", TooLongMessage},
		{"[[OVERLOADED]]", 529, "overloaded_error", "Overloaded"},
		{"[[ERR500]]", 500, "api_error", "Internal server error"},
		{"[[LIMIT]]", 429, "rate_limit_error", RateLimitMessage},
	}
	for _, tt := range tests {
		t.Run(tt.marker, func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			resp := post(t, t.Context(), s, true, user("x "+tt.marker))
			var body struct {
				Type  string
				Error struct{ Type, Message string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status || body.Type != "error" || body.Error.Type != tt.errType || body.Error.Message != tt.message {
				t.Errorf("got %d %+v, want %d %s %q", resp.StatusCode, body, tt.status, tt.errType, tt.message)
			}
			if tt.status == 429 && (resp.Header.Get("retry-after") != "3600" || resp.Header.Get("anthropic-ratelimit-unified-reset") == "") {
				t.Errorf("429 headers %v, want retry-after and the window's reset", resp.Header)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	t.Parallel()
	s := Start(t)
	resp := post(t, t.Context(), s, false, user("[[TOOL]]"))
	var msg struct {
		StopReason string `json:"stop_reason"`
		Content    []struct{ Type, Text, Name string }
		Usage      Usage
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[1].Name != "Bash" || msg.Usage.InputTokens != 7 {
		t.Errorf("non-streaming reply %+v", msg)
	}
}

func TestOverrides(t *testing.T) {
	t.Parallel()
	s := Start(t, WithReply("fixed"))
	ctx := t.Context()
	if got := text(readEvents(t, post(t, ctx, s, true, user("a")).Body, nil)); got != "fixed" {
		t.Errorf("WithReply: %q", got)
	}
	s.SetReply("")
	s.SetModeOnce(ModeTooLong)
	if resp := post(t, ctx, s, true, user("b")); resp.StatusCode != 400 {
		t.Errorf("once mode: status %d, want 400", resp.StatusCode)
	}
	s.SetUsage(Usage{InputTokens: 11, CacheReadInputTokens: 22, CacheCreationInputTokens: 33})
	evs := readEvents(t, post(t, ctx, s, true, user("c")).Body, nil)
	if got := text(evs); got != "echo: c" {
		t.Errorf("after one forced request: %q", got)
	}
	s.SetMode(ModeOverloaded)
	for range 2 {
		if resp := post(t, ctx, s, true, user("d")); resp.StatusCode != 529 {
			t.Errorf("sticky mode: status %d, want 529", resp.StatusCode)
		}
	}
	reqs := s.Requests()
	want := []string{OutcomeText, OutcomeTooLong, OutcomeText, OutcomeOverloaded, OutcomeOverloaded}
	for i, r := range reqs {
		if i >= len(want) || r.Outcome != want[i] || r.Seq != i+1 {
			t.Errorf("request %d: seq %d outcome %s, want %v", i, r.Seq, r.Outcome, want)
		}
	}
	if u := reqs[2].Usage; u.ContextTokens() != 66 {
		t.Errorf("SetUsage: recorded %+v", u)
	}
}

func TestSlowRelease(t *testing.T) {
	t.Parallel()
	s := Start(t)
	resp := post(t, t.Context(), s, true, user("[[SLOW]]"))
	first := readEvents(t, resp.Body, func(e sseEvent) bool { return e.Name == "content_block_delta" })
	if got := text(first); got != "slow reply " {
		t.Fatalf("first chunk %q", got)
	}
	s.ReleaseSlow()
	rest := readEvents(t, resp.Body, nil)
	if n := names(rest); !strings.HasSuffix(n, "content_block_stop,message_delta,message_stop") {
		t.Errorf("after release: %s", n)
	}
	if got := text(rest); !strings.HasSuffix(got, " done") {
		t.Errorf("after release text %q", got)
	}
}

func TestSlowClientDisconnect(t *testing.T) {
	t.Parallel()
	s := Start(t)
	ctx, cancel := context.WithCancel(t.Context())
	resp := post(t, ctx, s, true, user("[[SLOW]]"))
	readEvents(t, resp.Body, func(e sseEvent) bool { return e.Name == "content_block_delta" })
	cancel()
	// The handler must give up on the stream by itself: httptest's Close
	// waits for every handler, and the slow stream is not released here.
	done := make(chan struct{})
	go func() { s.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("slow handler still running after the client went away")
	}
}

func TestWaitRequest(t *testing.T) {
	t.Parallel()
	s := Start(t)
	got := make(chan Request, 1)
	go func() {
		r, err := s.WaitRequest(t.Context(), 2)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	post(t, t.Context(), s, true, user("one"))
	post(t, t.Context(), s, true, user("two"))
	if r := <-got; r.LastUserText != "two" || r.Seq != 2 {
		t.Errorf("second request %q seq %d", r.LastUserText, r.Seq)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.WaitRequest(ctx, 3); err == nil {
		t.Error("WaitRequest for a request that never comes returned no error")
	}
}

func TestCountTokens(t *testing.T) {
	t.Parallel()
	s := Start(t)
	resp, err := http.Post(s.URL()+"/v1/messages/count_tokens?beta=true", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.InputTokens <= 0 {
		t.Errorf("count_tokens: %+v %v", out, err)
	}
	if o := s.OtherRequests(); len(o) != 1 || o[0].Outcome != OutcomeCount || len(s.Requests()) != 0 {
		t.Errorf("recorded others %+v, messages %d", o, len(s.Requests()))
	}
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	s := Start(t)
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			// Not post(): t.Fatal must not run off the test goroutine.
			body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"c%d"}]}`, i)
			resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, r := range s.Requests() {
		if r.Seq != i+1 {
			t.Errorf("request at %d has Seq %d", i, r.Seq)
		}
		seen[r.Prompt] = true
	}
	if len(seen) != n {
		t.Errorf("recorded %d distinct prompts, want %d", len(seen), n)
	}
}

func TestTooLongWithHistory(t *testing.T) {
	t.Parallel()
	s := Start(t, WithMode(ModeTooLongWithHistory))
	ctx := t.Context()
	if got := text(readEvents(t, post(t, ctx, s, true, user("first")).Body, nil)); got != "echo: first" {
		t.Errorf("a conversation's first request: %q, want a normal reply", got)
	}
	assistant := map[string]any{"role": "assistant", "content": "echo: first"}
	if resp := post(t, ctx, s, true, user("first"), assistant, user("second")); resp.StatusCode != 400 {
		t.Errorf("a request with history: status %d, want 400 too long", resp.StatusCode)
	}
}

// TestMidTurnNote: a message sent while a tool ran reaches the follow-up
// request as a note, in either version's placement, and the follow-up is
// still answered as one (the tool's output, and the message the note
// holds), not as a new prompt. The
// requests are the real CLI's (TestRealCLIRecordFixtures' midtool scenario in
// agentproc).
func TestMidTurnNote(t *testing.T) {
	for _, version := range []string{"2.1.328", "2.1.332"} {
		t.Run(version, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "midtool_"+version+".request.json"))
			if err != nil {
				t.Fatal(err)
			}
			var captured struct {
				Messages []map[string]any `json:"messages"`
			}
			if err := json.Unmarshal(data, &captured); err != nil {
				t.Fatal(err)
			}
			s := Start(t)
			resp := post(t, t.Context(), s, true, captured.Messages...)
			evs := readEvents(t, resp.Body, nil)
			resp.Body.Close()
			if got := text(evs); got != "tool said: opened\nand you said: midway note" {
				t.Errorf("reply %q, want the tool's output and the note's message", got)
			}
			req := s.Requests()[0]
			if !req.FollowUp || len(req.MidTurnNotes) != 1 || !strings.HasPrefix(req.MidTurnNotes[0], midTurnPrefix+"\nmidway note\n") {
				t.Errorf("follow-up %v, notes %q; want a follow-up carrying the note", req.FollowUp, req.MidTurnNotes)
			}
		})
	}
}
