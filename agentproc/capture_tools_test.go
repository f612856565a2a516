package agentproc_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier (see capture_helper_test.go) for images, TodoWrite, a
// long Bash call, and a message sent while a tool runs.

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{R: 200, G: uint8(x), B: uint8(y), A: 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngSize decodes the dimensions of a base64 PNG.
func pngSize(t testing.TB, b64 string) (int, int) {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("image data is not base64: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("image data is not a PNG: %v", err)
	}
	return cfg.Width, cfg.Height
}

// imageNote is the text block the CLI adds after an image it was sent.
var imageNote = regexp.MustCompile(`^\[Image: source: (/\S+/images/1\.png)(?:, original (\d+)x(\d+), displayed at (\d+)x(\d+)\..*)?\]$`)

func TestRealCLICaptureImages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		w, h         int
		mediaType    string // what the host claims
		wantW, wantH int
	}{
		{"small", 8, 8, "image/png", 8, 8},
		// The CLI resizes to at most 2000 pixels a side, and sniffs the
		// format: a wrong media_type is corrected, not refused.
		{"wide_mislabelled", 3000, 100, "image/jpeg", 2000, 67},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			c := startCapture(t, api, captureOpts{})
			data := pngBytes(t, tt.w, tt.h)
			// In stdin: an image block with the question.
			c.turn([]any{
				map[string]any{"type": "text", "text": "what is in this picture?"},
				map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": tt.mediaType,
					"data": base64.StdEncoding.EncodeToString(data)}},
			}, nil, nil)
			req := api.Requests()[0]
			user := req.Messages[len(req.Messages)-1]
			for i := len(req.Messages) - 1; i >= 0; i-- {
				if req.Messages[i].Role == "user" {
					user = req.Messages[i]
					break
				}
			}
			imgs := user.Images()
			if len(imgs) != 1 || imgs[0].SourceType != "base64" || imgs[0].MediaType != "image/png" {
				t.Fatalf("images in the API request %+v, want one base64 image/png", imgs)
			}
			if w, h := pngSize(t, imgs[0].Data); w != tt.wantW || h != tt.wantH {
				t.Errorf("the API got %dx%d, want %dx%d", w, h, tt.wantW, tt.wantH)
			}
			if req.Prompt != "what is in this picture?" {
				t.Errorf("prompt %q: the fake must skip the CLI's image note", req.Prompt)
			}
			var note string
			for _, b := range strings.Split(user.Text(), "\n") {
				if imageNote.MatchString(b) {
					note = b
				}
			}
			if note == "" {
				t.Errorf("no [Image: source: …] note in %q", user.Text())
			}
			// The CLI keeps a copy of the image on disk and names it.
			if m := imageNote.FindStringSubmatch(note); m != nil {
				if _, err := os.Stat(m[1]); err != nil {
					t.Errorf("the image the CLI names: %v", err)
				}
			}

			// As a file: the Read tool sends it back as an image block.
			if err := os.WriteFile(filepath.Join(c.dir, "pic.png"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			c.turn("[[READ:pic.png]]", nil, nil)
			tr := lastToolResult(t, api)
			reqs := api.Requests()
			last := reqs[len(reqs)-1]
			rimgs := last.Messages[len(last.Messages)-1].Images()
			if len(tr.Types) != 1 || tr.Types[0] != "image" || len(rimgs) != 1 || rimgs[0].MediaType != "image/png" {
				t.Fatalf("Read's tool_result %+v, images %+v; want one image/png block", tr, rimgs)
			}
			if w, h := pngSize(t, rimgs[0].Data); w != tt.wantW || h != tt.wantH {
				t.Errorf("Read sent %dx%d, want %dx%d", w, h, tt.wantW, tt.wantH)
			}
			if perms := permsFor(c.lines(), "Read"); len(perms) != 0 {
				t.Errorf("Read of a workspace file asked the host: %v", perms)
			}
			c.finish()
			c.save("image_"+tt.name, "An image block in a stream-json user message (the host claims "+tt.mediaType+"), then\n"+
				"fake API marker `[[READ:pic.png]]` for the same picture saved in the workspace. The image\n"+
				"data in stdin.jsonl and stdout.jsonl is the real PNG.")
		})
	}
}

func TestRealCLICaptureTodoWrite(t *testing.T) {
	t.Parallel()
	// With the default model the CLI offers no todo tool at all;
	// CLAUDE_CODE_ENABLE_TODO_TOOLS=1 turns on the Task* tools, and with
	// CLAUDE_CODE_ENABLE_TASKS=0 as well, TodoWrite (deferred).
	for _, tt := range []struct {
		env  map[string]string
		want []string
		not  []string
	}{
		{nil, nil, []string{"TodoWrite", "TaskCreate"}},
		{map[string]string{"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}, []string{"TaskCreate", "TaskUpdate", "TaskList", "TaskGet"}, []string{"TodoWrite"}},
		{map[string]string{"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1", "CLAUDE_CODE_ENABLE_TASKS": "0"}, []string{"TodoWrite"}, []string{"TaskCreate"}},
	} {
		api := fakeapi.Start(t)
		c := startCapture(t, api, captureOpts{env: tt.env})
		if tt.want == nil || tt.want[0] != "TodoWrite" {
			c.turn("hi", nil, nil)
		} else {
			c.turn("[[TODO]]", nil, func(req map[string]any) map[string]any {
				t.Errorf("TodoWrite asked the host: %v", req["request"])
				return map[string]any{"behavior": "deny", "message": "unexpected"}
			})
		}
		lines := c.lines()
		tools, _ := lines[0]["tools"].([]any)
		have := map[string]bool{}
		for _, n := range tools {
			have[n.(string)] = true
		}
		for _, n := range tt.want {
			if !have[n] {
				t.Errorf("env %v: init tools lack %s", tt.env, n)
			}
		}
		for _, n := range tt.not {
			if have[n] {
				t.Errorf("env %v: init tools have %s", tt.env, n)
			}
		}
		if tt.want == nil || tt.want[0] != "TodoWrite" {
			c.finish()
			continue
		}
		var todo map[string]any
		for _, u := range toolUses(lines) {
			if u["name"] == "TodoWrite" {
				todo = u
			}
		}
		todos, _ := dig(todo, "input", "todos").([]any)
		if len(todos) != 3 {
			t.Fatalf("TodoWrite tool_use %v, want three todos", todo)
		}
		for _, item := range todos {
			m := item.(map[string]any)
			if str(m, "content") == "" || str(m, "activeForm") == "" || !strings.Contains("pending in_progress completed", str(m, "status")) {
				t.Errorf("todo %v: want content, status and activeForm", m)
			}
		}
		var result map[string]any
		for _, r := range toolResults(lines) {
			if r["tool_use_id"] == todo["id"] {
				result = r
			}
		}
		if result == nil || !strings.HasPrefix(str(result, "content"), "Todos have been modified successfully.") {
			t.Errorf("TodoWrite tool_result %v", result)
		}
		newTodos, _ := dig(result, "_line", "tool_use_result", "newTodos").([]any)
		if len(newTodos) != 3 {
			t.Errorf("tool_use_result.newTodos %v, want the new list", newTodos)
		}
		c.finish()
		c.save("todowrite", "Fake API marker: `[[TODO]]` with CLAUDE_CODE_ENABLE_TODO_TOOLS=1 and CLAUDE_CODE_ENABLE_TASKS=0\n"+
			"(without them the default model has no TodoWrite). TodoWrite is deferred: ToolSearch first.")
	}
}

// gatedBash starts a CLI whose Bash runs without prompts and a turn whose
// command blocks until the returned gate file exists.
func gatedBash(t *testing.T, api *fakeapi.Server) (*capture, string) {
	t.Helper()
	// As root the CLI allows bypassPermissions only in a sandbox.
	c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "bypassPermissions"},
		env: map[string]string{"IS_SANDBOX": "1"}})
	gate := filepath.Join(c.dir, "gate")
	// On a failure path, open the gate so the process can end.
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	c.user("[[TOOL:echo started; while [ ! -f gate ]; do sleep 0.05; done; echo opened]]")
	return c, gate
}

// TestRealCLICaptureBashProgress: a running Bash call shows as system/task_started
// (at once), a tool_progress heartbeat every 30 seconds, and
// system/task_notification when it ends; nothing else while it runs.
func TestRealCLICaptureBashProgress(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c, gate := gatedBash(t, api)
	use := c.next("the Bash tool_use", func(m map[string]any) bool { return len(toolUses([]map[string]any{m})) == 1 })
	id := toolUses([]map[string]any{use})[0]["id"]
	started := c.nextType("system", "task_started")
	if started["tool_use_id"] != id || str(started, "task_type") != "local_bash" || started["is_backgrounded"] != false {
		t.Errorf("task_started %v, want the Bash call's tool_use_id, local_bash, not backgrounded", started)
	}
	// The CLI's heartbeat is due after 30 s of running; the tool is
	// still blocked on the gate until it comes.
	beat := c.nextType("tool_progress")
	if beat["parent_tool_use_id"] != id || str(beat, "tool_use_id") != id.(string)+"-heartbeat-0" ||
		beat["tool_name"] != "Bash" || beat["heartbeat"] != true || beat["elapsed_time_seconds"] != 30.0 {
		t.Errorf("tool_progress %v, want heartbeat 0 at 30 s naming the call in parent_tool_use_id", beat)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	note := c.nextType("system", "task_notification")
	if note["tool_use_id"] != id || str(note, "status") != "completed" || note["task_id"] != started["task_id"] {
		t.Errorf("task_notification %v, want completed for the same task", note)
	}
	c.nextType("user")
	res := c.result()
	var kinds []string
	for _, l := range c.lines() {
		if k := streamKind(l); k != "system:init" && k != "assistant:text" && k != "assistant:tool_use" {
			kinds = append(kinds, k)
		}
	}
	if got := strings.Join(kinds, " "); got != "system:task_started tool_progress system:task_notification user result" {
		t.Errorf("lines around the tool: %s", got)
	}
	if str(res, "result") != "tool said: started\nopened" {
		t.Errorf("result %q", str(res, "result"))
	}
	c.finish()
	c.save("bash_progress", "Fake API marker: `[[TOOL:echo started; while [ ! -f gate ]; …; echo opened]]` under\n"+
		"--permission-mode bypassPermissions (IS_SANDBOX=1): a Bash call held open until the first\n"+
		"tool_progress heartbeat (30 s), to show the lines that arrive while a tool runs.")
}

// TestRealCLICaptureMessageDuringTool records how the CLI hands the model a user
// message that arrived while a tool ran: folded into the running turn, in
// a wrapper whose wording changed across CLI versions.
func TestRealCLICaptureMessageDuringTool(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c, gate := gatedBash(t, api)
	c.nextType("system", "task_started")
	c.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "midway note"},
		"uuid": "11111111-2222-4333-8444-555555555555"})
	// The CLI acknowledges the message with command_lifecycle queued
	// before the tool ends.
	q := c.next("command_lifecycle", func(m map[string]any) bool { return m["type"] == "command_lifecycle" })
	if str(q, "command_uuid") != "11111111-2222-4333-8444-555555555555" || str(q, "state") != "queued" {
		t.Errorf("first command_lifecycle %v, want queued for our uuid", q)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	res := c.result()
	reqs := api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d API requests, want 2: the message rides on the tool's follow-up", len(reqs))
	}
	var wrapper, role string
	for _, m := range reqs[1].Messages {
		if strings.Contains(m.Text(), "midway note") {
			wrapper, role = m.Text(), m.Role
		}
	}
	version := cliVersion(c.lines())
	t.Logf("CLI %s wraps a mid-tool message in a role %q message: %q", version, role, wrapper)
	if !strings.Contains(wrapper, "The user sent a new message while you were working:\nmidway note\n") {
		t.Errorf("the follow-up request carries the message as %q", wrapper)
	}
	// 2.1.328 sends it as a role "system" message after the tool_result;
	// 2.1.332 as a text block in the role "user" message that carries
	// the tool_result (docs/claude-code.md).
	if want := map[string]string{"2.1.328": "system", "2.1.332": "user"}[version]; want != "" && role != want {
		t.Errorf("CLI %s: the message rides in a %q message, want %q", version, role, want)
	}
	if res["is_error"] != false {
		t.Errorf("result %v", res)
	}
	// One result covered both inputs: the next turn gets its own.
	if next := c.turn("after", nil, nil); str(next, "result") != "echo: after" {
		t.Errorf("the next turn's result %q, want its own", str(next, "result"))
	}
	c.finish()
	c.save("midtool_"+strings.ReplaceAll(version, ".", "_"), "Fake API marker: a gated Bash call (see bash_progress); a user message with a uuid is\n"+
		"sent while it runs. The request the fake API got next carries it wrapped (see docs/claude-code.md).")
}

// TestRealCLICaptureTaskTools: with CLAUDE_CODE_ENABLE_TODO_TOOLS=1 (and tasks
// left on) the todo list is the Task* tools. Their results carry what a
// checklist needs: TaskCreate's tool_use_result names the new task's id,
// TaskUpdate's the id and the status change, TaskList's the whole list.
func TestRealCLICaptureTaskTools(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{env: map[string]string{"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"}})
	c.turn(`[[CALL:TaskCreate {"subject":"Write the fix","description":"Fix the bug","activeForm":"Writing the fix"}]] `+
		`[[CALL:TaskCreate {"subject":"Run the tests","description":"go test","activeForm":"Running the tests"}]] `+
		`[[CALL:TaskUpdate {"taskId":"1","status":"in_progress"}]] [[CALL:TaskList]]`, nil,
		func(req map[string]any) map[string]any {
			t.Errorf("a task tool asked the host: %v", req["request"])
			return map[string]any{"behavior": "deny", "message": "unexpected"}
		})
	lines := c.lines()
	results := map[string]map[string]any{}
	for _, r := range toolResults(lines) {
		results[str(r, "tool_use_id")] = r
	}
	var created []string
	var updated, listed bool
	for _, u := range toolUses(lines) {
		r := results[str(u, "id")]
		switch u["name"] {
		case "TaskCreate":
			id := str(dig(r, "_line", "tool_use_result").(map[string]any), "task", "id")
			if id == "" || str(dig(r, "_line", "tool_use_result").(map[string]any), "task", "subject") != str(u, "input", "subject") {
				t.Errorf("TaskCreate result %v, want the task's id and subject", dig(r, "_line", "tool_use_result"))
			}
			created = append(created, id)
		case "TaskUpdate":
			res, _ := dig(r, "_line", "tool_use_result").(map[string]any)
			if res["success"] != true || str(res, "taskId") != "1" || str(res, "statusChange", "to") != "in_progress" {
				t.Errorf("TaskUpdate result %v, want success for task 1 to in_progress", res)
			}
			updated = true
		case "TaskList":
			tasks, _ := dig(r, "_line", "tool_use_result", "tasks").([]any)
			if len(tasks) != 2 || str(tasks[0].(map[string]any), "status") != "in_progress" {
				t.Errorf("TaskList result %v, want both tasks, the first in progress", tasks)
			}
			listed = true
		}
	}
	if strings.Join(created, ",") != "1,2" || !updated || !listed {
		t.Errorf("created %v, updated %v, listed %v: want tasks 1 and 2, an update and a list", created, updated, listed)
	}
	c.finish()
	c.save("task_tools", "Fake API markers: `[[CALL:TaskCreate …]]` twice, `[[CALL:TaskUpdate {\"taskId\":\"1\",\"status\":\"in_progress\"}]]`,\n"+
		"`[[CALL:TaskList]]` with CLAUDE_CODE_ENABLE_TODO_TOOLS=1 (tasks on: the Task* tools, no TodoWrite).")
}
