package agentproc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestPermissions(t *testing.T) {
	tests := []struct {
		name         string
		decision     PermissionDecision
		wantResult   string // result text, "" for an error result
		wantTerminal string
		wantToolErr  bool
		wantDenials  int
	}{
		{name: "allow", decision: PermissionDecision{Behavior: Allow},
			wantResult: "tool said: (fake) ran: touch a.txt", wantTerminal: "completed"},
		{name: "allow with changed input", decision: PermissionDecision{Behavior: Allow, Input: json.RawMessage(`{"command":"touch b.txt"}`)},
			wantResult: "tool said: (fake) ran: touch b.txt", wantTerminal: "completed"},
		{name: "deny", decision: PermissionDecision{Behavior: Deny, Message: "not now"},
			wantResult: "tool said: not now", wantTerminal: "completed", wantToolErr: true, wantDenials: 1},
		{name: "deny and stop", decision: PermissionDecision{Behavior: DenyAndStop, Message: "stop"},
			wantTerminal: "aborted_tools", wantToolErr: true, wantDenials: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t)
			p := e.start(StartOptions{})
			ctx := testCtx(t)
			var req *PermissionRequest
			var tr *ToolResult
			res, err := runTurn(ctx, p, "[[TOOL:touch a.txt]]", func(ev Event) {
				switch ev := ev.(type) {
				case PermissionRequest:
					req = &ev
					if err := p.RespondPermission(ctx, ev.RequestID, tt.decision); err != nil {
						t.Errorf("RespondPermission: %v", err)
					}
				case ToolResult:
					tr = &ev
				}
			})
			if err != nil {
				t.Fatalf("Turn: %v", err)
			}
			if req == nil {
				t.Fatal("no PermissionRequest")
			}
			if req.ToolName != "Bash" || req.ToolUseID == "" || !strings.HasSuffix(req.BlockedPath, "/a.txt") ||
				len(req.Suggestions) != 3 || !strings.Contains(string(req.Input), "touch a.txt") {
				t.Errorf("request = %+v", req)
			}
			if tr == nil || tr.IsError != tt.wantToolErr || tr.ToolUseID != req.ToolUseID {
				t.Errorf("tool result = %+v", tr)
			}
			if res.Text != tt.wantResult || res.TerminalReason != tt.wantTerminal || res.IsError != (tt.wantResult == "") {
				t.Errorf("result text %q terminal %q is_error %v", res.Text, res.TerminalReason, res.IsError)
			}
			if len(res.PermissionDenials) != tt.wantDenials {
				t.Errorf("denials = %q", res.PermissionDenials)
			}
			err = p.RespondPermission(ctx, req.RequestID, tt.decision)
			if !errors.Is(err, ErrNoPendingPermission) {
				t.Errorf("second answer = %v, want ErrNoPendingPermission", err)
			}
		})
	}
}

func TestPermissionAlwaysAllow(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	asked := 0
	on := func(ev Event) {
		if r, ok := ev.(PermissionRequest); ok {
			asked++
			if err := p.RespondPermission(ctx, r.RequestID, PermissionDecision{Behavior: AlwaysAllow}); err != nil {
				t.Errorf("RespondPermission: %v", err)
			}
		}
	}
	for i := range 2 {
		res, err := runTurn(ctx, p, "[[TOOL:touch c.txt]]", on)
		if err != nil || res.Text != "tool said: (fake) ran: touch c.txt" {
			t.Fatalf("turn %d: %+v, %v", i, res, err)
		}
	}
	if asked != 1 {
		t.Errorf("asked %d times, want 1: the rule was not passed back", asked)
	}
}

func TestPermissionInvalidBehavior(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	res, err := runTurn(ctx, p, "[[TOOL:touch d.txt]]", func(ev Event) {
		if r, ok := ev.(PermissionRequest); ok {
			if err := p.RespondPermission(ctx, r.RequestID, PermissionDecision{}); err == nil {
				t.Error("zero Behavior accepted")
			}
			// Still pending: a valid answer goes through.
			if err := p.RespondPermission(ctx, r.RequestID, PermissionDecision{Behavior: Deny}); err != nil {
				t.Errorf("deny after invalid answer: %v", err)
			}
		}
	})
	if err != nil || res.Text != "tool said: "+defaultDenyMessage {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
}

func TestPermissionCancelledByInterrupt(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	var reqID string
	var cancel *PermissionCancel
	interrupted := make(chan error, 1)
	res, err := runTurn(ctx, p, "[[TOOL:touch e.txt]]", func(ev Event) {
		switch ev := ev.(type) {
		case PermissionRequest:
			reqID = ev.RequestID
			go func() { interrupted <- p.Interrupt(ctx) }()
		case PermissionCancel:
			cancel = &ev
		}
	})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if err := <-interrupted; err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	if cancel == nil || cancel.RequestID != reqID {
		t.Errorf("cancel = %+v, want request %q", cancel, reqID)
	}
	if !res.IsError || res.TerminalReason != "aborted_tools" {
		t.Errorf("result = %+v", res)
	}
	if err := p.RespondPermission(ctx, reqID, PermissionDecision{Behavior: Allow}); !errors.Is(err, ErrNoPendingPermission) {
		t.Errorf("answer after cancel = %v, want ErrNoPendingPermission", err)
	}
}

func TestInterrupt(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	interrupted := make(chan error, 1)
	var c collect
	res, err := runTurn(ctx, p, "[[SLOW]] go", func(ev Event) {
		c.on(ev)
		if _, ok := ev.(Init); ok {
			go func() { interrupted <- p.Interrupt(ctx) }()
		}
	})
	if err != nil {
		t.Fatalf("Turn: %v", err)
	}
	if err := <-interrupted; err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	if !res.IsError || res.Subtype != "error_during_execution" || res.TerminalReason != "aborted_streaming" || res.Text != "" {
		t.Errorf("result = %+v", res)
	}
	// The process stays alive for the next turn.
	res, _ = mustTurn(t, p, "after")
	if res.Text != "echo: after" {
		t.Errorf("next turn = %q", res.Text)
	}
	// Interrupting an idle process is harmless.
	if err := p.Interrupt(ctx); err != nil {
		t.Errorf("idle Interrupt: %v", err)
	}
}

func TestSetModel(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	if err := p.SetModel(ctx, "claude-sonnet-4-5"); err != nil {
		t.Fatal(err)
	}
	res, c := mustTurn(t, p, "hi")
	if init := c.evs[0].(Init); init.Model != "claude-sonnet-4-5" {
		t.Errorf("init model = %q", init.Model)
	}
	if res.Model != "claude-sonnet-4-5" || res.ContextWindow() != 200000 {
		t.Errorf("model %q window %d", res.Model, res.ContextWindow())
	}
}

func TestSetPermissionMode(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	if err := p.SetPermissionMode(ctx, "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	res, c := mustTurn(t, p, "[[TOOL:touch f.txt]]")
	for _, ev := range c.evs {
		if _, ok := ev.(PermissionRequest); ok {
			t.Error("asked for permission in acceptEdits mode")
		}
	}
	if res.Text != "tool said: (fake) ran: touch f.txt" {
		t.Errorf("result = %q", res.Text)
	}
	var ce *ControlError
	if err := p.SetPermissionMode(ctx, "bogus"); !errors.As(err, &ce) || ce.Subtype != "set_permission_mode" {
		t.Errorf("bad mode error = %v, want *ControlError", err)
	}
}

func TestUnsupportedControlRequestAnswered(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	res, _ := mustTurn(t, p, "[[ASKHOST]]")
	if res.Text != "host refused: Unsupported control request subtype: elicitation" {
		t.Errorf("result = %q", res.Text)
	}
}

// TestMessageDuringToolFolds pins the CLI behaviour the engine must plan
// for: a message sent while a tool waits joins the running turn, and only
// one result covers both (PROTOCOL.md §3).
func TestMessageDuringToolFolds(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	res, err := runTurn(ctx, p, "[[TOOL:touch g.txt]]", func(ev Event) {
		if r, ok := ev.(PermissionRequest); ok {
			if _, err := p.Send(ctx, "by the way"); err != nil {
				t.Errorf("Send: %v", err)
			}
			if err := p.RespondPermission(ctx, r.RequestID, PermissionDecision{Behavior: Allow}); err != nil {
				t.Errorf("RespondPermission: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "(also read while working: by the way)") {
		t.Errorf("result = %q", res.Text)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for ev := range p.Events() {
		if r, ok := ev.(*Result); ok {
			t.Errorf("a second result: %+v", r)
		}
	}
}
