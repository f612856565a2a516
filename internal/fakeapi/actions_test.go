package fakeapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call is a tool_use the fake streamed: its name and decoded input.
type call struct {
	Name  string
	Input map[string]any
}

// toolCalls collects the tool_use blocks of a stream, joining their
// input_json_delta pieces.
func toolCalls(t *testing.T, evs []sseEvent) []call {
	t.Helper()
	var out []call
	var partial strings.Builder
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			if cb := e.Data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				out = append(out, call{Name: cb["name"].(string)})
				partial.Reset()
			}
		case "content_block_delta":
			if d := e.Data["delta"].(map[string]any); d["type"] == "input_json_delta" {
				partial.WriteString(d["partial_json"].(string))
			}
		case "content_block_stop":
			if len(out) > 0 && out[len(out)-1].Input == nil && partial.Len() > 0 {
				if err := json.Unmarshal([]byte(partial.String()), &out[len(out)-1].Input); err != nil {
					t.Fatalf("tool input %q: %v", partial.String(), err)
				}
			}
		}
	}
	return out
}

func toolsList(names ...string) []any {
	var out []any
	for _, n := range names {
		out = append(out, map[string]any{"name": n, "description": n, "input_schema": map[string]any{"type": "object"}})
	}
	return out
}

// postTools is post with a tools list.
func postTools(t *testing.T, s *Server, tools []string, messages ...map[string]any) []sseEvent {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": "m", "stream": true, "tools": toolsList(tools...), "messages": messages})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpPost(t, s, body)
	if err != nil {
		t.Fatal(err)
	}
	return readEvents(t, resp.Body, nil)
}

func assistantUse(id, name string, input any) map[string]any {
	return map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "I'll use " + name + "."},
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}
}

func resultMsg(id string, content any, extra ...map[string]any) map[string]any {
	blocks := []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}}
	for _, e := range extra {
		blocks = append(blocks, e)
	}
	return map[string]any{"role": "user", "content": blocks}
}

// envMsg is the CLI's environment message, naming the working directory
// and (in plan mode) the plan file.
func envMsg(planFile string) map[string]any {
	text := "# Environment\n - Primary working directory: /work/proj\n - Platform: linux\n"
	if planFile != "" {
		text += "No plan file exists yet. You should create your plan at " + planFile + " using the Write tool.\n"
	}
	return map[string]any{"role": "system", "content": text}
}

func TestToolMarkers(t *testing.T) {
	t.Parallel()
	base := []string{"Bash", "Read", "Write", "AskUserQuestion", "ToolSearch"}
	tests := []struct {
		name   string
		prompt string
		env    map[string]any
		want   call
	}{
		{"call", `[[CALL:Edit {"file_path":"/a","old_string":"x","new_string":"y"}]]`, nil,
			call{"ToolSearch", map[string]any{"query": "select:Edit", "max_results": 5.0}}},
		{"call listed tool", `[[CALL:Read {"file_path":"/etc/hosts"}]]`, nil,
			call{"Read", map[string]any{"file_path": "/etc/hosts"}}},
		{"ask default", "[[ASK]]", nil, call{"AskUserQuestion", map[string]any{"questions": mustDecode(defaultQuestions)}}},
		{"ask given", `[[ASK:[{"question":"A or B?","header":"Pick","options":[{"label":"A","description":"a"},{"label":"B","description":"b"}],"multiSelect":true}]]]`, nil,
			call{"AskUserQuestion", map[string]any{"questions": []any{map[string]any{"question": "A or B?", "header": "Pick",
				"options": []any{map[string]any{"label": "A", "description": "a"}, map[string]any{"label": "B", "description": "b"}}, "multiSelect": true}}}}},
		{"write relative", "[[WRITE:notes/a.txt:hello: world]]", envMsg(""),
			call{"Write", map[string]any{"file_path": "/work/proj/notes/a.txt", "content": "hello: world"}}},
		{"write absolute", "[[WRITE:/tmp/b.txt:x]]", envMsg(""), call{"Write", map[string]any{"file_path": "/tmp/b.txt", "content": "x"}}},
		{"read", "[[READ:pic.png]]", envMsg(""), call{"Read", map[string]any{"file_path": "/work/proj/pic.png"}}},
		{"todo deferred", "[[TODO]]", nil, call{"ToolSearch", map[string]any{"query": "select:TodoWrite", "max_results": 5.0}}},
		{"plan outside plan mode", "[[PLAN:do it]]", nil, call{"ToolSearch", map[string]any{"query": "select:ExitPlanMode", "max_results": 5.0}}},
		{"plan writes the plan file first", "[[PLAN:do it]]", envMsg("/home/u/.claude/plans/p.md"),
			call{"Write", map[string]any{"file_path": "/home/u/.claude/plans/p.md", "content": "do it"}}},
		{"mcp", `[[MCP:cc-connect/send_file {"path":"a.txt"}]]`, nil,
			call{"ToolSearch", map[string]any{"query": "select:mcp__cc-connect__send_file", "max_results": 5.0}}},
		{"tool still works", "run [[TOOL:touch x]] now", nil, call{"Bash", map[string]any{"command": "touch x", "description": "Run a command"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := Start(t)
			msgs := []map[string]any{user(tt.prompt)}
			if tt.env != nil {
				msgs = append(msgs, tt.env)
			}
			calls := toolCalls(t, postTools(t, s, base, msgs...))
			if len(calls) != 1 || !jsonEqual(calls[0], tt.want) {
				t.Errorf("tool calls %+v, want %+v", calls, tt.want)
			}
			if r := s.Requests()[0]; r.Outcome != OutcomeToolUse || r.TurnPrompt != tt.prompt {
				t.Errorf("recorded outcome %s, turn prompt %q", r.Outcome, r.TurnPrompt)
			}
		})
	}
}

func mustDecode(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic(err)
	}
	return v
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestMarkerSequence walks one turn through its requests: the fake fetches
// a deferred tool with ToolSearch, calls it once the CLI lists it, runs the
// prompt's next marker, then answers with the last tool's output.
func TestMarkerSequence(t *testing.T) {
	t.Parallel()
	s := Start(t)
	prompt := `[[MCP:cc-connect/send_file {"path":"a.txt"}]] [[TOOL:echo done]]`
	mcpName := "mcp__cc-connect__send_file"
	base := []string{"Bash", "ToolSearch", "DeferredToolPlaceholder"}
	history := []map[string]any{user(prompt), envMsg("")}

	steps := []struct {
		tools []string
		add   []map[string]any // what the CLI appends before this request
		want  string           // tool called, or "text:<reply>"
	}{
		{base, nil, "ToolSearch"},
		{append(base, mcpName), []map[string]any{
			assistantUse("t1", "ToolSearch", map[string]any{"query": "select:" + mcpName}),
			// The CLI's own "Tool loaded." note must not read as a prompt.
			resultMsg("t1", []any{map[string]any{"type": "tool_reference", "tool_name": mcpName}},
				map[string]any{"type": "text", "text": "Tool loaded."}),
		}, mcpName},
		{append(base, mcpName), []map[string]any{
			assistantUse("t2", mcpName, map[string]any{"path": "a.txt"}),
			resultMsg("t2", []any{map[string]any{"type": "text", "text": "sent a.txt"}}),
		}, "Bash"},
		{append(base, mcpName), []map[string]any{
			assistantUse("t3", "Bash", map[string]any{"command": "echo done"}),
			resultMsg("t3", "done"),
		}, "text:tool said: done"},
	}
	for i, st := range steps {
		history = append(history, st.add...)
		evs := postTools(t, s, st.tools, history...)
		calls := toolCalls(t, evs)
		got := ""
		if len(calls) == 1 {
			got = calls[0].Name
			if got == mcpName && calls[0].Input["path"] != "a.txt" {
				t.Errorf("step %d: MCP input %v", i, calls[0].Input)
			}
		} else if len(calls) == 0 {
			got = "text:" + text(evs)
		}
		if got != st.want {
			t.Fatalf("step %d: got %q, want %q", i, got, st.want)
		}
	}
	if reqs := s.Requests(); len(reqs) != 4 || len(reqs[3].TurnToolUses) != 3 || reqs[3].TurnPrompt != prompt {
		t.Errorf("last request: %d tool uses, turn prompt %q", len(reqs[3].TurnToolUses), reqs[3].TurnPrompt)
	}
}

// TestSearchOnce: when the CLI does not list a tool after ToolSearch, the
// fake calls it anyway rather than searching forever.
func TestSearchOnce(t *testing.T) {
	t.Parallel()
	s := Start(t)
	history := []map[string]any{user("[[TODO]]"),
		assistantUse("t1", "ToolSearch", map[string]any{"query": "select:TodoWrite"}),
		resultMsg("t1", "no match")}
	calls := toolCalls(t, postTools(t, s, []string{"ToolSearch"}, history...))
	if len(calls) != 1 || calls[0].Name != "TodoWrite" || len(calls[0].Input["todos"].([]any)) != 3 {
		t.Errorf("calls %+v, want TodoWrite with the default three todos", calls)
	}
}

func TestBadMarker(t *testing.T) {
	t.Parallel()
	for _, prompt := range []string{"[[ASK:[not json]]", "[[WRITE:nocontent]]", "[[STREAM:x:1s]]", `[[MCP:nosep {"a":1}]]`} {
		s := Start(t)
		evs := postTools(t, s, nil, user(prompt))
		if got := text(evs); !strings.HasPrefix(got, "fake API: cannot read marker") || len(toolCalls(t, evs)) != 0 {
			t.Errorf("%s: reply %q, want the fake to name the bad marker", prompt, got)
		}
	}
}

func TestThinking(t *testing.T) {
	t.Parallel()
	s := Start(t)
	evs := postTools(t, s, nil, user("[[THINK:hmm, let me see]] hello"))
	const seq = "message_start,ping,content_block_start,content_block_delta,content_block_delta,content_block_delta,content_block_stop," +
		"content_block_start,content_block_delta,content_block_stop,message_delta,message_stop"
	if got := names(evs); got != seq {
		t.Fatalf("events\n got %s\nwant %s", got, seq)
	}
	if cb := evs[2].Data["content_block"].(map[string]any); cb["type"] != "thinking" || evs[2].Data["index"] != 0.0 {
		t.Errorf("first block %v, want thinking at index 0", evs[2].Data)
	}
	var thought string
	for _, e := range evs[3:5] {
		thought += e.Data["delta"].(map[string]any)["thinking"].(string)
	}
	if thought != "hmm, let me see" || evs[5].Data["delta"].(map[string]any)["type"] != "signature_delta" {
		t.Errorf("thinking %q, then %v", thought, evs[5].Data)
	}
	if evs[7].Data["index"] != 1.0 || text(evs) != "echo: [[THINK:hmm, let me see]] hello" {
		t.Errorf("text block index %v, text %q", evs[7].Data["index"], text(evs))
	}
	// A follow-up in the same turn does not think again.
	s2 := Start(t)
	evs = postTools(t, s2, nil, user("[[THINK]] [[TOOL]]"), assistantUse("t1", "Bash", map[string]any{}), resultMsg("t1", "hi"))
	if names(evs) != "message_start,ping,content_block_start,content_block_delta,content_block_stop,message_delta,message_stop" {
		t.Errorf("follow-up events %s", names(evs))
	}
}

func TestStreamMarker(t *testing.T) {
	t.Parallel()
	s := Start(t)
	start := time.Now()
	evs := postTools(t, s, nil, user("[[STREAM:4:300ms]]"))
	elapsed := time.Since(start)
	var deltas []string
	for _, e := range evs {
		if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			deltas = append(deltas, d["text"].(string))
		}
	}
	want := []string{StreamChunk(1, 4), StreamChunk(2, 4), StreamChunk(3, 4), StreamChunk(4, 4)}
	if strings.Join(deltas, "|") != strings.Join(want, "|") {
		t.Errorf("deltas %q, want %q", deltas, want)
	}
	// The pacing is the server's own: the last chunk is not due before
	// the duration has passed, so this bound cannot flake.
	if elapsed < 300*time.Millisecond {
		t.Errorf("4 chunks over 300ms took %v", elapsed)
	}
	// Non-streaming requests get the whole text at once.
	resp := post(t, t.Context(), s, false, user("[[STREAM:3:10s]]"))
	var msg struct{ Content []struct{ Type, Text string } }
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != StreamChunk(1, 3)+StreamChunk(2, 3)+StreamChunk(3, 3) {
		t.Errorf("non-streaming %+v", msg)
	}
}

func TestRequestDetails(t *testing.T) {
	t.Parallel()
	s := Start(t)
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw=="}}
	postTools(t, s, []string{"Read"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "what is this?"}, img,
			map[string]any{"type": "text", "text": "[Image: source: /tmp/x/images/1.png, original 3000x100, displayed at 2000x67. Multiply coordinates by 1.50 to map to original image.]"},
		}},
		envMsg("/h/.claude/plans/p.md"),
		assistantUse("t1", "Read", map[string]any{"file_path": "/work/proj/a.png"}),
		resultMsg("t1", []any{img}))
	r := s.Requests()[0]
	if r.Cwd != "/work/proj" || r.PlanFile != "/h/.claude/plans/p.md" || r.TurnPrompt != "what is this?" {
		t.Errorf("cwd %q plan file %q turn prompt %q", r.Cwd, r.PlanFile, r.TurnPrompt)
	}
	if got := r.Messages[0].BlockTypes(); strings.Join(got, ",") != "text,image,text" {
		t.Errorf("block types %v", got)
	}
	if imgs := r.Messages[0].Images(); len(imgs) != 1 || imgs[0] != (Image{SourceType: "base64", MediaType: "image/png", Data: "iVBORw=="}) {
		t.Errorf("images %+v", imgs)
	}
	if imgs := r.Messages[3].Images(); len(imgs) != 1 || len(r.ToolResults) != 1 || r.ToolResults[0].Types[0] != "image" {
		t.Errorf("tool_result images %+v, results %+v", imgs, r.ToolResults)
	}
	if len(r.TurnToolUses) != 1 || r.TurnToolUses[0].Name != "Read" || !strings.Contains(string(r.TurnToolUses[0].Input), "a.png") {
		t.Errorf("turn tool uses %+v", r.TurnToolUses)
	}
	if strings.Join(r.Tools, ",") != "Read" {
		t.Errorf("tools %v", r.Tools)
	}
}

func httpPost(t *testing.T, s *Server, body []byte) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/v1/messages?beta=true", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, nil
}
