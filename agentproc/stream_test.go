package agentproc

import (
	"encoding/json"
	"strings"
	"testing"
)

// The live events, read from the real CLI's captures (testdata/captures,
// recorded by the capture tier): what a streamed reply, a tool's progress
// and a plan's approval are built from.

func TestDecodePartialThinkingTool(t *testing.T) {
	evs := eventsOf(decodeFixture(t, "captures/partial_thinking_tool/stdout.jsonl"))
	starts := all[CallStart](evs)
	if len(starts) != 2 || starts[0].MessageID != "msg_fake000001" || starts[1].MessageID != "msg_fake000002" || starts[0].Parent != "" {
		t.Errorf("call starts = %+v, want the two API calls of the turn", starts)
	}
	var deltas []string
	for _, d := range all[TextDelta](evs) {
		deltas = append(deltas, d.MessageID+":"+d.Text)
	}
	// Thinking is never text: only the text blocks' deltas come as
	// TextDelta, the thinking block's as ThinkingDelta without its words.
	if got := strings.Join(deltas, "|"); got != "msg_fake000001:I'll run a command.|msg_fake000002:tool said: hi" {
		t.Errorf("text deltas = %q", got)
	}
	if th := all[ThinkingDelta](evs); len(th) != 2 || th[0].MessageID != "msg_fake000001" {
		t.Errorf("thinking deltas = %+v, want the two of the first call", th)
	}
	// The order a streaming reader relies on: the call starts, its text
	// deltas come before the assistant line with the whole text.
	var order []string
	for _, ev := range evs {
		switch ev := ev.(type) {
		case CallStart:
			order = append(order, "start")
		case TextDelta:
			order = append(order, "delta")
		case AssistantText:
			order = append(order, "text")
		case ToolUse:
			order = append(order, "tool:"+ev.Name)
		case ToolResult:
			order = append(order, "result")
		}
	}
	if got := strings.Join(order, ","); got != "start,delta,text,tool:Bash,result,start,delta,text" {
		t.Errorf("event order = %s", got)
	}
}

func TestDecodePartialStreamChunks(t *testing.T) {
	evs := eventsOf(decodeFixture(t, "captures/partial_stream_chunks/stdout.jsonl"))
	var text strings.Builder
	for _, d := range all[TextDelta](evs) {
		text.WriteString(d.Text)
	}
	whole := all[AssistantText](evs)
	res := one[*Result](t, evs)
	if len(whole) != 1 || text.String() != whole[0].Text || text.String() != res.Text {
		t.Errorf("deltas joined %q, assistant text %+v, result %q: want all three the same", text.String(), whole, res.Text)
	}
	if n := len(all[TextDelta](evs)); n != 5 {
		t.Errorf("%d text deltas, want the 5 chunks of [[STREAM:5:500ms]]", n)
	}
}

func TestDecodeToolProgress(t *testing.T) {
	evs := eventsOf(decodeFixture(t, "captures/bash_progress/stdout.jsonl"))
	tu := one[ToolUse](t, evs)
	hb := one[ToolProgress](t, evs)
	// The heartbeat's own tool_use_id is "<call>-heartbeat-0": the event
	// names the running call.
	if hb.ToolUseID != tu.ID || hb.ToolName != "Bash" || hb.Elapsed != 30 || !hb.Heartbeat {
		t.Errorf("heartbeat = %+v, want Bash's call %s at 30 s", hb, tu.ID)
	}
}

func TestDecodePlanAndQuestionRequests(t *testing.T) {
	tests := []struct {
		capture  string
		tool     string
		reason   string
		needUser bool
		modes    string // the ModeChange events, in order
	}{
		{"ask_one_question", "AskUserQuestion", "", true, ""},
		{"plan_approve", "ExitPlanMode", "", true, "default"},
		{"plan_approve_accept_edits", "ExitPlanMode", "", true, "acceptEdits"},
		{"plan_mode_tools", "Write", "mode", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.capture, func(t *testing.T) {
			evs := eventsOf(decodeFixture(t, "captures/"+tt.capture+"/stdout.jsonl"))
			prs := all[PermissionRequest](evs)
			if len(prs) == 0 || prs[0].ToolName != tt.tool || prs[0].DecisionReasonType != tt.reason || prs[0].RequiresUserInteraction != tt.needUser {
				t.Fatalf("first permission request = %+v, want %s with reason %q, user interaction %v", prs, tt.tool, tt.reason, tt.needUser)
			}
			var modes []string
			for _, m := range all[ModeChange](evs) {
				modes = append(modes, m.Mode)
			}
			if got := strings.Join(modes, ","); got != tt.modes {
				t.Errorf("mode changes %q, want %q", got, tt.modes)
			}
		})
	}
}

func TestDecodeStreamLines(t *testing.T) {
	tests := []struct {
		name string
		line string
		want []Event
	}{
		{"subagent text keeps its parent",
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"sub"}},"parent_tool_use_id":"toolu_1","api_message_id":"m2"}`,
			[]Event{TextDelta{MessageID: "m2", Text: "sub", Parent: "toolu_1"}}},
		{"empty text delta is nothing",
			`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}},"parent_tool_use_id":null}`,
			nil},
		{"tool input delta is nothing",
			`{"type":"stream_event","event":{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a"}},"parent_tool_use_id":null}`,
			nil},
		{"message start without a message takes the line's id",
			`{"type":"stream_event","event":{"type":"message_start"},"parent_tool_use_id":null,"api_message_id":"m3"}`,
			[]Event{CallStart{MessageID: "m3"}}},
		{"stream line without an event",
			`{"type":"stream_event"}`, nil},
		{"heartbeat without a parent names itself",
			`{"type":"tool_progress","tool_use_id":"toolu_9","tool_name":"mcp__x__y","elapsed_time_seconds":60.5,"heartbeat":true}`,
			[]Event{ToolProgress{ToolUseID: "toolu_9", ToolName: "mcp__x__y", Elapsed: 60.5, Heartbeat: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d decoder
			got := d.decodeLine([]byte(tt.line)).events
			if len(got) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestDecodeStructuredResults keeps the tool_use_result of the task tools
// only: a checklist is built from their ids, and nothing else is copied.
func TestDecodeStructuredResults(t *testing.T) {
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"TaskCreate","input":{"subject":"Write the fix"}},{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/a"}}]}}`,
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"Task #1 created"},{"type":"tool_result","tool_use_id":"t2","content":"body"}]},"tool_use_result":{"task":{"id":"1","subject":"Write the fix"}}}`,
		// A second result for the same id is not kept again.
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"again"}]},"tool_use_result":{"task":{"id":"2"}}}`,
	}
	var d decoder
	var results []ToolResult
	for _, l := range lines {
		results = append(results, all[ToolResult](d.decodeLine([]byte(l)).events)...)
	}
	if len(results) != 3 {
		t.Fatalf("results %+v", results)
	}
	var got struct {
		Task struct{ ID, Subject string }
	}
	if err := json.Unmarshal(results[0].Structured, &got); err != nil || got.Task.ID != "1" || got.Task.Subject != "Write the fix" {
		t.Errorf("TaskCreate's structured result %s (%v)", results[0].Structured, err)
	}
	if results[1].Structured != nil || results[2].Structured != nil {
		t.Errorf("kept %s and %s, want only the task tool's first result", results[1].Structured, results[2].Structured)
	}
}

func TestPermissionResponseSetMode(t *testing.T) {
	pp := &pendingPerm{input: json.RawMessage(`{"plan":"p"}`),
		suggestions: []json.RawMessage{json.RawMessage(`{"type":"addRules","rules":[{"toolName":"X"}],"behavior":"allow","destination":"localSettings"}`)}}
	tests := []struct {
		name string
		d    PermissionDecision
		want string
	}{
		{"allow into acceptEdits", PermissionDecision{Behavior: Allow, SetMode: "acceptEdits"},
			`{"behavior":"allow","updatedInput":{"plan":"p"},"updatedPermissions":[{"destination":"session","mode":"acceptEdits","type":"setMode"}]}`},
		{"plain allow", PermissionDecision{Behavior: Allow}, `{"behavior":"allow","updatedInput":{"plan":"p"}}`},
		{"always allow keeps its rules and adds the mode", PermissionDecision{Behavior: AlwaysAllow, SetMode: "default"},
			`{"behavior":"allow","updatedInput":{"plan":"p"},"updatedPermissions":[{"type":"addRules","rules":[{"toolName":"X"}],"behavior":"allow","destination":"localSettings"},{"destination":"session","mode":"default","type":"setMode"}]}`},
		{"answers replace the input", PermissionDecision{Behavior: Allow, Input: json.RawMessage(`{"questions":[],"answers":{"q":"a"}}`)},
			`{"behavior":"allow","updatedInput":{"questions":[],"answers":{"q":"a"}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := permissionResponse(pp, tt.d)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(resp)
			if string(b) != tt.want {
				t.Errorf("response\n got %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestDecodeTaskToolsCapture(t *testing.T) {
	evs := eventsOf(decodeFixture(t, "captures/task_tools/stdout.jsonl"))
	names := map[string]string{}
	for _, u := range all[ToolUse](evs) {
		names[u.ID] = u.Name
	}
	var kept []string
	for _, r := range all[ToolResult](evs) {
		if r.Structured != nil {
			kept = append(kept, names[r.ToolUseID]+" "+string(r.Structured))
		}
	}
	want := []string{
		`TaskCreate {"task":{"id":"1","subject":"Write the fix","description":"Fix the bug"}}`,
		`TaskCreate {"task":{"id":"2","subject":"Run the tests","description":"go test"}}`,
		`TaskUpdate {"success":true,"taskId":"1","updatedFields":["status"],"statusChange":{"from":"pending","to":"in_progress"}}`,
		`TaskList {"tasks":[{"id":"1","subject":"Write the fix","status":"in_progress","blockedBy":[]},{"id":"2","subject":"Run the tests","status":"pending","blockedBy":[]}]}`,
	}
	if strings.Join(kept, "\n") != strings.Join(want, "\n") {
		t.Errorf("structured results\n%s\nwant (the ToolSearch results are not kept)\n%s", strings.Join(kept, "\n"), strings.Join(want, "\n"))
	}
}
