package main

import (
	"encoding/json"
	"os"

	"github.com/google/uuid"
)

// The control protocol of the fake: requests from the host (interrupt,
// set_model, ...), and the requests the fake sends the host (can_use_tool,
// and an unknown subtype for [[ASKHOST]]) with their answers.

type askOutcome int

const (
	askAnswered askOutcome = iota
	askInterrupted
	askEOF
)

// ask sends a control request to the host and waits for its answer, an
// interrupt (which cancels the request) or stdin EOF.
func (f *fake) ask(t *turnState, request map[string]any) (permAnswer, askOutcome) {
	id := uuid.NewString()
	f.mu.Lock()
	if t.stopped {
		f.mu.Unlock()
		return permAnswer{}, askInterrupted
	}
	t.askID = id
	f.out.line(map[string]any{"type": "control_request", "request_id": id, "request": request})
	f.mu.Unlock()
	select {
	case a := <-t.answer:
		return a, askAnswered
	case <-t.interrupt:
		f.sync()
		return permAnswer{}, askInterrupted
	case <-f.stdinEOF:
		f.mu.Lock()
		t.askID = ""
		f.mu.Unlock()
		return permAnswer{}, askEOF
	}
}

// handleAnswer routes a control_response to the request waiting for it. A
// late answer (to a cancelled or unknown request) is ignored, as the CLI
// does.
func (f *fake) handleAnswer(id string, a permAnswer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.cur; t != nil && id != "" && t.askID == id {
		t.askID = ""
		t.answer <- a
	}
}

// foldIntoTurn adds a user line to the running turn while a tool runs.
func (f *fake) foldIntoTurn(m userMsg) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.cur; t != nil && t.folding {
		t.injected = append(t.injected, m)
		f.appendTranscript(enqueueLine(m))
		f.emitCommand(m.uuid, "queued")
		return true
	}
	return false
}

// handleControl answers a control request from the host.
func (f *fake) handleControl(id string, raw json.RawMessage) {
	var rq struct {
		Subtype string `json:"subtype"`
		Model   string `json:"model"`
		Mode    string `json:"mode"`
		TaskID  string `json:"task_id"`
		Message string `json:"user_message_id"`
		DryRun  bool   `json:"dry_run"`
	}
	_ = json.Unmarshal(raw, &rq)
	f.mu.Lock()
	defer f.mu.Unlock()
	ok := func(resp any) {
		f.out.line(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "success", "request_id": id, "response": resp}})
	}
	fail := func(msg, code string) {
		r := map[string]any{"subtype": "error", "request_id": id, "error": msg}
		if code != "" {
			r["error_code"] = code
		}
		f.out.line(map[string]any{"type": "control_response", "response": r})
	}
	switch rq.Subtype {
	case "interrupt":
		if t := f.cur; t != nil && !t.stopped {
			if t.askID != "" {
				f.out.line(map[string]any{"type": "control_cancel_request", "request_id": t.askID})
				t.askID = ""
			}
			t.stopped = true
			close(t.interrupt)
		}
		ok(map[string]any{"still_queued": []any{}})
	case "set_model":
		f.model = rq.Model
		if f.model == "" || f.model == "default" {
			f.model = defaultModel
		}
		f.out.line(map[string]any{"type": "user", "message": map[string]any{"role": "user",
			"content": "<local-command-stdout>Set model to `" + f.model + "`</local-command-stdout>"},
			"session_id": f.sessionID, "parent_tool_use_id": nil, "uuid": uuid.NewString(), "timestamp": now(), "isReplay": true})
		ok(map[string]any{"model": rq.Model})
	case "set_permission_mode":
		switch rq.Mode {
		case "default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan", "manual":
		default:
			fail("Invalid permission mode: "+rq.Mode, "")
			return
		}
		f.permissionMode = rq.Mode
		// The real CLI answers first, then reports the mode it is in
		// (captures/ctl.jsonl).
		ok(map[string]any{"mode": rq.Mode})
		f.out.line(map[string]any{"type": "system", "subtype": "status", "status": nil,
			"permissionMode": rq.Mode, "uuid": uuid.NewString(), "session_id": f.sessionID})
	case "initialize":
		switch os.Getenv("FAKECLAUDE_INITIALIZE") {
		case "refuse":
			fail("Already initialized", "")
			return
		case "ignore":
			return
		}
		ok(map[string]any{"commands": []any{}, "agents": []any{}, "output_style": "default",
			"models": []any{map[string]any{"value": "default", "resolvedModel": defaultModel}},
			"pid":    os.Getpid(), "claude_code_version": version,
			"current_permission_mode": f.permissionMode, "session_state": "idle"})
	case "stop_task":
		stop, found := f.bgStops[rq.TaskID]
		if !found {
			fail("No task found with ID: "+rq.TaskID, "")
			return
		}
		delete(f.bgStops, rq.TaskID)
		close(stop)
		ok(map[string]any{})
		f.emitStopped(rq.TaskID)
	case "rewind_files":
		resp, msg := f.rewind(rq.Message, rq.DryRun)
		if msg != "" {
			fail(msg, "")
			return
		}
		ok(resp)
	case "get_workspace_diff":
		// The fake keeps no git view: it answers as the real CLI does
		// outside a repository.
		ok(map[string]any{"diff": nil, "noDiffReason": "no-repository"})
	case "get_context_usage":
		window := contextWindow(f.model)
		var api any
		var total int64
		if f.lastUsage != nil {
			api = f.lastUsage
			total = f.lastUsage.InputTokens + f.lastUsage.CacheReadInputTokens + f.lastUsage.CacheCreationInputTokens
		}
		ok(map[string]any{"categories": []any{}, "totalTokens": total, "maxTokens": window,
			"rawMaxTokens": window, "percentage": float64(total) * 100 / float64(window),
			"apiUsage": api, "model": f.model})
	default:
		fail("Unsupported control request subtype: "+rq.Subtype, "unsupported_request")
	}
}

// checkStopped reports an interrupt that came while the turn was busy.
func (f *fake) checkStopped(t *turnState) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return t.stopped
}

// sync waits until the interrupt's handler has written its answer, so the
// control_response precedes the aborted turn's events, as with the CLI.
func (f *fake) sync() {
	f.mu.Lock()
	defer f.mu.Unlock()
}
