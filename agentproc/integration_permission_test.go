package agentproc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
)

// The real-CLI tier (see integration_test.go) for permissions and
// interrupts.

func TestRealCLIPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		decision  agentproc.PermissionDecision
		exists    bool
		terminal  string
		denials   []string
		apiResult string // the tool_result the model gets, "" to skip
	}{
		{"allow", agentproc.PermissionDecision{Behavior: agentproc.Allow}, true, "completed", nil, ""},
		{"deny", agentproc.PermissionDecision{Behavior: agentproc.Deny, Message: "no via chat"}, false, "completed",
			[]string{"Bash"}, "no via chat"},
		{"deny and stop", agentproc.PermissionDecision{Behavior: agentproc.DenyAndStop, Message: "stop now"}, false,
			"aborted_tools", []string{"Bash"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			p := r.start(t, agentproc.StartOptions{})
			ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
			defer cancel()
			var asked []agentproc.PermissionRequest
			var answerErr error
			res, err := runTurn(ctx, p, "[[TOOL:touch x]]", func(e agentproc.Event) {
				if pr, ok := e.(agentproc.PermissionRequest); ok {
					asked = append(asked, pr)
					answerErr = p.RespondPermission(ctx, pr.RequestID, tt.decision)
				}
			})
			if err != nil || res == nil {
				t.Fatalf("turn: result %+v, err %v\nstderr: %s", res, err, p.StderrTail())
			}
			if answerErr != nil {
				t.Errorf("RespondPermission: %v", answerErr)
			}
			if len(asked) != 1 || asked[0].ToolName != "Bash" || !strings.Contains(string(asked[0].Input), "touch x") ||
				asked[0].BlockedPath != filepath.Join(r.dir, "x") {
				t.Fatalf("permission requests %+v, want one for Bash touch x on %s (driver/CLI mismatch on can_use_tool)", asked, r.dir)
			}
			_, statErr := os.Stat(filepath.Join(r.dir, "x"))
			if exists := statErr == nil; exists != tt.exists {
				t.Errorf("file x exists=%v, want %v", exists, tt.exists)
			}
			if res.TerminalReason != tt.terminal || !slices.Equal(res.PermissionDenials, tt.denials) {
				t.Errorf("result terminal_reason %q denials %q, want %q %q", res.TerminalReason, res.PermissionDenials, tt.terminal, tt.denials)
			}
			if tt.apiResult != "" {
				reqs := r.api.Requests()
				tr := reqs[len(reqs)-1].ToolResults
				if len(tr) != 1 || !tr[0].IsError || tr[0].Content != tt.apiResult {
					t.Errorf("tool result the model got %+v, want an error saying %q", tr, tt.apiResult)
				}
			}
			// The process stays usable after every kind of answer.
			mustTurn(t, p, "next", "echo: next")
		})
	}
}

func TestRealCLIInterrupt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()

	var wg sync.WaitGroup
	var res *agentproc.Result
	var turnErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		res, turnErr = runTurn(ctx, p, "[[SLOW]] take your time", nil)
	}()
	// The slow reply streams until the CLI drops it, so once the request
	// is in, the turn is mid-stream.
	if _, err := r.api.WaitRequest(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Interrupt(ctx); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	wg.Wait()
	if turnErr != nil || res == nil {
		t.Fatalf("interrupted turn: result %+v, err %v", res, turnErr)
	}
	if res.Subtype != "error_during_execution" || res.TerminalReason != "aborted_streaming" {
		t.Errorf("interrupted turn subtype %q terminal_reason %q, want error_during_execution aborted_streaming", res.Subtype, res.TerminalReason)
	}
	select {
	case <-p.Done():
		t.Fatalf("process exited after an interrupt: %v", p.Err())
	default:
	}
	mustTurn(t, p, "after the interrupt", "echo: after the interrupt")
}

func TestRealCLIPermissionCancelledByInterrupt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()

	var evs []agentproc.Event
	var interruptErr error
	res, err := runTurn(ctx, p, "[[TOOL:touch never]]", func(e agentproc.Event) {
		evs = append(evs, e)
		if _, ok := e.(agentproc.PermissionRequest); ok {
			// Leave the prompt unanswered, as a chat user who walks away.
			interruptErr = p.Interrupt(ctx)
		}
	})
	if err != nil || res == nil || interruptErr != nil {
		t.Fatalf("turn: result %+v, err %v, interrupt err %v", res, err, interruptErr)
	}
	var reqID, cancelled string
	for _, e := range evs {
		switch e := e.(type) {
		case agentproc.PermissionRequest:
			reqID = e.RequestID
		case agentproc.PermissionCancel:
			cancelled = e.RequestID
		}
	}
	if reqID == "" || cancelled != reqID {
		t.Errorf("permission request %q, cancel %q: want a PermissionCancel for the pending request (driver/CLI mismatch on control_cancel_request)", reqID, cancelled)
	}
	if res.TerminalReason != "aborted_tools" {
		t.Errorf("terminal_reason %q, want aborted_tools", res.TerminalReason)
	}
	err = p.RespondPermission(ctx, reqID, agentproc.PermissionDecision{Behavior: agentproc.Allow})
	if !errors.Is(err, agentproc.ErrNoPendingPermission) {
		t.Errorf("late answer to a cancelled request: %v, want ErrNoPendingPermission", err)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "never")); err == nil {
		t.Error("the tool ran although its permission was never granted")
	}
	mustTurn(t, p, "still here", "echo: still here")
}

func TestRealCLIAlwaysAllow(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	asked := 0
	run := func(name string) {
		ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
		defer cancel()
		res, err := runTurn(ctx, p, "[[TOOL:touch "+name+"]]", func(e agentproc.Event) {
			if pr, ok := e.(agentproc.PermissionRequest); ok {
				asked++
				if err := p.RespondPermission(ctx, pr.RequestID, agentproc.PermissionDecision{Behavior: agentproc.AlwaysAllow}); err != nil {
					t.Errorf("RespondPermission: %v", err)
				}
			}
		})
		if err != nil || res == nil || res.IsError {
			t.Fatalf("turn touching %s: result %+v, err %v", name, res, err)
		}
		if _, err := os.Stat(filepath.Join(r.dir, name)); err != nil {
			t.Errorf("tool did not run: %v", err)
		}
	}
	run("a")
	run("a")
	if asked != 1 {
		t.Errorf("asked %d times for the same command after always-allow, want 1", asked)
	}
	// The CLI stores the rule in the workspace's local settings (§4).
	if b, err := os.ReadFile(filepath.Join(r.dir, ".claude", "settings.local.json")); err != nil || !strings.Contains(string(b), "touch a") {
		t.Errorf("settings.local.json: %q, %v; want the allow rule for touch a", b, err)
	}
}

func TestRealCLISetPermissionMode(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	if err := p.SetPermissionMode(ctx, "acceptEdits"); err != nil {
		t.Fatalf("SetPermissionMode: %v", err)
	}
	res, evs, err := turn(t, p, "[[TOOL:touch edited]]")
	if err != nil || res == nil || res.IsError {
		t.Fatalf("turn: result %+v, err %v", res, err)
	}
	var sawUse, sawResult bool
	for _, e := range evs {
		switch e := e.(type) {
		case agentproc.PermissionRequest:
			t.Errorf("asked for permission in acceptEdits mode: %+v", e)
		case agentproc.ToolUse:
			sawUse = e.Name == "Bash" && strings.Contains(string(e.Input), "touch edited")
		case agentproc.ToolResult:
			sawResult = !e.IsError
		case agentproc.Init:
			if e.PermissionMode != "acceptEdits" {
				t.Errorf("init permissionMode %q after SetPermissionMode", e.PermissionMode)
			}
		}
	}
	if !sawUse || !sawResult {
		t.Errorf("tool events: use %v, result %v; want both", sawUse, sawResult)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "edited")); err != nil {
		t.Errorf("tool did not run: %v", err)
	}
}

func TestRealCLIMessageDuringToolFolds(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// The tool must run without a prompt and block until the test opens
	// the gate; as root the CLI allows bypassPermissions only in a sandbox.
	r.cfg.Env["IS_SANDBOX"] = "1"
	p := r.start(t, agentproc.StartOptions{PermissionMode: "bypassPermissions"})
	gate := filepath.Join(r.dir, "gate")
	// On a failure path, open the gate before the process is closed so
	// Close does not wait out the blocked tool.
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()

	toolRunning := make(chan struct{})
	var once sync.Once
	type outcome struct {
		res *agentproc.Result
		err error
	}
	turnDone := make(chan outcome, 1)
	go func() {
		res, err := runTurn(ctx, p, "[[TOOL:while [ ! -f gate ]; do sleep 0.05; done; echo opened]]", func(e agentproc.Event) {
			if _, ok := e.(agentproc.ToolUse); ok {
				once.Do(func() { close(toolRunning) })
			}
		})
		turnDone <- outcome{res, err}
	}()
	select {
	case <-toolRunning:
	case o := <-turnDone:
		t.Fatalf("turn ended before its tool ran: %+v, %v", o.res, o.err)
	}
	if _, err := p.Send(ctx, "midway note"); err != nil {
		t.Fatal(err)
	}
	// No event says the CLI has taken the message in (agentproc does not
	// surface command_lifecycle), but its transcript records the enqueue
	// soon (the file itself may not exist yet): poll for that, bounded by
	// ctx, before letting the tool end.
	path := agentproc.TranscriptPath(r.configDir, r.dir, p.SessionID())
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), `"content":"midway note"`) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the CLI never enqueued the mid-turn message")
		case <-tick.C:
		}
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	o := <-turnDone
	if o.err != nil || o.res == nil || o.res.Text != "tool said: opened" {
		t.Fatalf("turn: result %+v, err %v", o.res, o.err)
	}
	// The message went into the running turn, as a note on the tool's
	// follow-up request (a role "system" message up to 2.1.328, a text
	// block after the tool_result from 2.1.332 on), and has no result of
	// its own (§3). cc-connect relies on that only in that it never sends
	// mid-turn: the engine holds a message until the turn's result.
	reqs := r.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d API requests, want 2 (the prompt, the tool's follow-up)", len(reqs))
	}
	if !reqs[1].FollowUp || len(reqs[1].ToolResults) != 1 || reqs[1].ToolResults[0].Content != "opened" {
		t.Errorf("second request: follow-up %v, tool results %+v; want the tool's output", reqs[1].FollowUp, reqs[1].ToolResults)
	}
	if n := reqs[1].MidTurnNotes; len(n) != 1 || !strings.Contains(n[0], "\nmidway note\n") {
		t.Errorf("mid-turn notes on the follow-up %q, want the one message sent mid-turn", n)
	}
	// So the next turn must get its own result, not a stale one.
	mustTurn(t, p, "after", "echo: after")
}
