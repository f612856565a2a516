package agentproc_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
)

// The capture tier (see capture_helper_test.go) for plan mode: with
// --permission-mode plan the model writes its plan to the plan file the CLI
// names, then calls ExitPlanMode (a deferred tool, fetched with ToolSearch);
// the CLI asks the host with can_use_tool carrying the plan text.

const planText = "# Plan\n\n1. Add the flag.\n2. Test it."

// planMode returns the permissionMode of the last system/status line that
// carries one, or "".
func planMode(lines []map[string]any) string {
	mode := ""
	for _, l := range lines {
		if l["type"] == "system" && l["subtype"] == "status" {
			if m := str(l, "permissionMode"); m != "" {
				mode = m
			}
		}
	}
	return mode
}

func TestRealCLICapturePlanMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// answer to ExitPlanMode
		answer func(req map[string]any) map[string]any
		// the model's tool_result for ExitPlanMode
		want    string
		isError bool
		// permissionMode announced after the answer ("" for none)
		mode string
		// whether the Write that follows asks the host, and with what
		// decision_reason_type
		writeAsks  bool
		writeWhy   string
		writeAllow bool
		written    bool
	}{
		{name: "approve", answer: nil, want: "User has approved your plan. You can now start coding.",
			mode: "default", writeAsks: true, writeAllow: true, written: true},
		// updatedPermissions with a setMode entry switches the mode in the
		// same answer; no set_permission_mode request is needed.
		{name: "approve_accept_edits", answer: func(req map[string]any) map[string]any {
			return map[string]any{"behavior": "allow", "updatedInput": dig(req, "request", "input"),
				"updatedPermissions": []any{map[string]any{"type": "setMode", "mode": "acceptEdits", "destination": "session"}}}
		}, want: "User has approved your plan.", mode: "acceptEdits", writeAsks: false, written: true},
		// A deny keeps planning: the model gets the feedback, and a later
		// Write still asks the host, marked as blocked by the mode. The
		// host must refuse it: an allow would write the file.
		{name: "keep_planning", answer: func(map[string]any) map[string]any {
			return map[string]any{"behavior": "deny", "message": "Also cover the error path."}
		}, want: "Also cover the error path.", isError: true, mode: "",
			writeAsks: true, writeWhy: "mode", writeAllow: false, written: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := fakeapi.Start(t)
			c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "plan"}})
			prompt := "[[PLAN:" + planText + "]] [[WRITE:after.txt:done]]"
			var exitReq, writeReq map[string]any
			var afterAnswer int
			res := c.turn(prompt, nil, func(req map[string]any) map[string]any {
				switch str(req, "request", "tool_name") {
				case "ExitPlanMode":
					exitReq = req
					afterAnswer = len(c.lines())
					if tt.answer == nil {
						return map[string]any{"behavior": "allow", "updatedInput": dig(req, "request", "input")}
					}
					return tt.answer(req)
				case "Write":
					writeReq = req
					if tt.writeAllow {
						return map[string]any{"behavior": "allow", "updatedInput": dig(req, "request", "input")}
					}
					return map[string]any{"behavior": "deny", "message": "Not while planning."}
				}
				t.Errorf("unexpected can_use_tool %v", req["request"])
				return map[string]any{"behavior": "deny", "message": "unexpected"}
			})
			if exitReq == nil {
				t.Fatal("no can_use_tool for ExitPlanMode")
			}
			r := exitReq["request"].(map[string]any)
			planFile := str(r, "input", "planFilePath")
			if str(r, "input", "plan") != planText || planFile == "" || r["requires_user_interaction"] != true {
				t.Errorf("ExitPlanMode request input %v: want the plan text and its planFilePath", r["input"])
			}
			if b, err := os.ReadFile(planFile); err != nil || string(b) != planText {
				t.Errorf("plan file %s: %q, %v; want the plan the model wrote", planFile, b, err)
			}
			if !strings.HasPrefix(planFile, filepath.Join(c.home, ".claude", "plans")+"/") {
				t.Errorf("plan file %s, want it under the config dir's plans/", planFile)
			}
			// The ToolSearch step came first: ExitPlanMode is deferred.
			uses := toolUses(c.lines())
			var names []string
			for _, u := range uses {
				names = append(names, u["name"].(string))
			}
			if got := strings.Join(names, ","); got != "Write,ToolSearch,ExitPlanMode,Write" {
				t.Errorf("tool calls %s, want Write,ToolSearch,ExitPlanMode,Write (the plan file write needs no prompt)", got)
			}
			var exitResult string
			var exitErr bool
			for _, req := range api.Requests() {
				for _, tr := range req.ToolResults {
					if tr.ToolUseID == dig(r, "tool_use_id") {
						exitResult, exitErr = tr.Content, tr.IsError
					}
				}
			}
			if !strings.Contains(exitResult, tt.want) || exitErr != tt.isError {
				t.Errorf("the model got %q (error %v), want %q (error %v)", exitResult, exitErr, tt.want, tt.isError)
			}
			if got := planMode(c.lines()[afterAnswer:]); got != tt.mode {
				t.Errorf("permissionMode after the answer %q, want %q", got, tt.mode)
			}
			if (writeReq != nil) != tt.writeAsks || str(writeReq, "request", "decision_reason_type") != tt.writeWhy {
				t.Errorf("Write request %v, want asked=%v with decision_reason_type %q", writeReq, tt.writeAsks, tt.writeWhy)
			}
			if _, err := os.Stat(filepath.Join(c.dir, "after.txt")); (err == nil) != tt.written {
				t.Errorf("after.txt written=%v, want %v", err == nil, tt.written)
			}
			if res["is_error"] != false {
				t.Errorf("result is_error %v", res["is_error"])
			}
			c.finish()
			c.save("plan_"+tt.name, "Fake API marker: `[[PLAN:<plan>]] [[WRITE:after.txt:done]]` under --permission-mode plan:\n"+
				"the fake writes the plan to the plan file the CLI names, fetches ExitPlanMode with ToolSearch,\n"+
				"calls it, then writes after.txt. The host answers ExitPlanMode (and the Write) on stdin.")
		})
	}
}

// TestRealCLICapturePlanModeTools shows what other tools do in plan mode: a Write
// outside the plan file asks the host (and runs if allowed), read-only Bash
// runs, other Bash is refused by the CLI itself without asking.
func TestRealCLICapturePlanModeTools(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "plan"}})
	res := c.turn("[[WRITE:inplan.txt:x]] [[TOOL:echo readonly]] [[TOOL:touch bashfile]]", nil, func(req map[string]any) map[string]any {
		return map[string]any{"behavior": "deny", "message": "Plan mode: no edits."}
	})
	lines := c.lines()
	if w := permsFor(lines, "Write"); len(w) != 1 || str(w[0], "request", "decision_reason_type") != "mode" {
		t.Errorf("Write requests %v, want one with decision_reason_type mode", w)
	}
	if b := permsFor(lines, "Bash"); len(b) != 0 {
		t.Errorf("Bash asked the host %d times in plan mode, want 0", len(b))
	}
	var results []fakeapi.ToolResult
	for _, req := range api.Requests() {
		results = append(results, req.ToolResults...)
	}
	if len(results) != 3 || !results[0].IsError || results[1].IsError || results[1].Content != "readonly" || !results[2].IsError {
		t.Errorf("tool results %+v: want the denied Write, echo's output, and a refused touch", results)
	}
	if _, err := os.Stat(filepath.Join(c.dir, "bashfile")); err == nil {
		t.Error("a non-read-only Bash command ran in plan mode")
	}
	if res["is_error"] != false {
		t.Errorf("result is_error %v", res["is_error"])
	}
	c.finish()
	c.save("plan_mode_tools", "Fake API marker: `[[WRITE:inplan.txt:x]] [[TOOL:echo readonly]] [[TOOL:touch bashfile]]` under\n"+
		"--permission-mode plan. The Write asks the host (decision_reason_type \"mode\"; the host denies it),\n"+
		"echo runs, touch is refused by the CLI without a can_use_tool (against a fake API the CLI's\n"+
		"auto-mode safety check cannot run, so its refusal text names that).")
}

// TestRealCLICapturePlanModeFork: the permission mode belongs to the process, not
// the session: a fork (or resume) starts in the mode its flags give.
func TestRealCLICapturePlanModeFork(t *testing.T) {
	t.Parallel()
	api := fakeapi.Start(t)
	c := startCapture(t, api, captureOpts{args: []string{"--permission-mode", "plan"}})
	c.turn("first", nil, nil)
	id := str(c.lines()[0], "session_id")
	c.finish()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, "default"},
		{[]string{"--permission-mode", "plan"}, "plan"},
	} {
		f := startCapture(t, api, captureOpts{home: c.home, dir: c.dir, args: append([]string{"--resume", id, "--fork-session"}, tt.args...)})
		f.turn("[[WRITE:forked.txt:x]]", nil, func(map[string]any) map[string]any {
			return map[string]any{"behavior": "deny", "message": "no"}
		})
		lines := f.lines()
		init := f.lines()[0]
		if str(init, "subtype") != "init" || str(init, "session_id") == id || str(init, "permissionMode") != tt.want {
			t.Errorf("fork with %v: init %v %v, want a new session in %q", tt.args, init["session_id"], init["permissionMode"], tt.want)
		}
		why := ""
		if w := permsFor(lines, "Write"); len(w) == 1 {
			why = str(w[0], "request", "decision_reason_type")
		}
		if (tt.want == "plan") != (why == "mode") {
			t.Errorf("fork with %v: Write decision_reason_type %q", tt.args, why)
		}
		f.finish()
	}
}
