package agentproc_test

// The real-CLI tier: these tests drive the pinned claude CLI (found by
// internal/testenv; installed by `make tools`) through agentproc against the
// fake Messages API in internal/fakeapi. They check agentproc's reading of
// the CLI, not the CLI: a failure whose message says "driver/CLI mismatch"
// means agentproc and the real CLI disagree on PROTOCOL.md.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/google/uuid"
)

// turnTimeout bounds one turn: a fake reply takes milliseconds, a CLI start
// about half a second, a compaction attempt a few seconds.
const turnTimeout = 90 * time.Second

// defaultWindow is the context window of the CLI's default model
// (claude-opus-5-5) as reported in modelUsage (PROTOCOL.md §9).
const defaultWindow = 1_000_000

// rig is one throwaway setup: a fake API, an empty HOME and a workspace.
type rig struct {
	api       *fakeapi.Server
	cfg       agentproc.Config
	dir       string // the workspace, symlinks resolved
	configDir string // where the CLI keeps projects/ and sessions/
}

func newRig(t testing.TB) *rig {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	home := t.TempDir()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(dir, "my_proj.v2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	configDir := filepath.Join(home, ".claude")
	return &rig{
		api:       api,
		dir:       dir,
		configDir: configDir,
		cfg: agentproc.Config{
			Command: bin,
			Env: map[string]string{
				"HOME": home,
				// Pinned so that a developer's own CLAUDE_CONFIG_DIR
				// never leaks into (or receives) these sessions.
				"CLAUDE_CONFIG_DIR":                        configDir,
				"ANTHROPIC_BASE_URL":                       api.URL(),
				"ANTHROPIC_API_KEY":                        "test",
				"DISABLE_TELEMETRY":                        "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_AUTOUPDATER":                      "1",
			},
			CloseGrace: 10 * time.Second,
		},
	}
}

// start starts a process in the rig's workspace and closes it when the test
// ends.
func (r *rig) start(t testing.TB, opts agentproc.StartOptions) *agentproc.Process {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = r.dir
	}
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	p, err := agentproc.Start(ctx, r.cfg, opts, nil)
	if err != nil {
		t.Fatalf("starting the CLI: %v", err)
	}
	t.Cleanup(func() { closeProc(t, p) })
	return p
}

func closeProc(t testing.TB, p *agentproc.Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Errorf("closing the CLI: %v", err)
	}
}

// turn runs one turn and returns its result and every event before it.
func turn(t testing.TB, p *agentproc.Process, text string) (*agentproc.Result, []agentproc.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	var evs []agentproc.Event
	res, err := p.Turn(ctx, text, func(e agentproc.Event) { evs = append(evs, e) })
	return res, evs, err
}

// mustTurn runs a turn that must succeed with the given reply text.
func mustTurn(t testing.TB, p *agentproc.Process, text, want string) (*agentproc.Result, []agentproc.Event) {
	t.Helper()
	res, evs, err := turn(t, p, text)
	if err != nil {
		t.Fatalf("turn %q: %v\nstderr: %s", text, err, p.StderrTail())
	}
	if res == nil {
		t.Fatalf("turn %q: no result and no error (driver/CLI mismatch)", text)
	}
	if res.IsError || res.Text != want {
		t.Fatalf("turn %q: result is_error=%v subtype=%s text %q, want %q", text, res.IsError, res.Subtype, res.Text, want)
	}
	return res, evs
}

func sha(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestRealOneTurn(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	res, evs := mustTurn(t, p, "hello one", "echo: hello one")

	id := p.SessionID()
	if uuid.Validate(id) != nil || res.SessionID != id {
		t.Errorf("session id %q, result's %q: want one uuid (driver/CLI mismatch on system/init)", id, res.SessionID)
	}
	var init *agentproc.Init
	var texts []string
	for _, e := range evs {
		switch e := e.(type) {
		case agentproc.Init:
			init = &e
		case agentproc.AssistantText:
			texts = append(texts, e.Text)
		}
	}
	if init == nil || init.SessionID != id || init.Cwd != r.dir || init.Version != testenv.ClaudeVersion {
		t.Errorf("init event %+v, want session %s, cwd %s, version %s", init, id, r.dir, testenv.ClaudeVersion)
	}
	if !slices.Equal(texts, []string{"echo: hello one"}) {
		t.Errorf("assistant texts %q", texts)
	}
	if res.NumTurns != 1 || res.Subtype != "success" || res.TerminalReason != "completed" {
		t.Errorf("result num_turns=%d subtype=%s terminal_reason=%s", res.NumTurns, res.Subtype, res.TerminalReason)
	}

	reqs := r.api.Requests()
	if len(reqs) != 1 || reqs[0].LastUserText != "hello one" {
		t.Fatalf("API saw %d requests (first %+v), want one with the prompt", len(reqs), reqs)
	}
	if got := reqs[0].Header.Get("X-Claude-Code-Session-Id"); got != id {
		t.Errorf("API request session header %q, want %s", got, id)
	}
	if _, err := os.Stat(agentproc.TranscriptPath(r.configDir, r.dir, id)); err != nil {
		t.Errorf("transcript not where agentproc.TranscriptPath says: %v", err)
	}
}

func TestRealSeveralTurns(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	var ids []string
	for _, text := range []string{"turn one", "turn two", "turn three"} {
		res, _ := mustTurn(t, p, text, "echo: "+text)
		ids = append(ids, res.SessionID)
	}
	if ids[0] == "" || ids[1] != ids[0] || ids[2] != ids[0] {
		t.Errorf("session ids across turns %q, want one id", ids)
	}
	reqs := r.api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("API saw %d requests, want 3", len(reqs))
	}
	last := reqs[2]
	for _, s := range []string{"turn one", "echo: turn one", "turn two", "echo: turn two"} {
		if !last.Contains(s) {
			t.Errorf("third request lacks %q from the earlier turns", s)
		}
	}
	select {
	case <-p.Done():
		t.Fatalf("process exited between turns: %v", p.Err())
	default:
	}
}

func TestRealContextFigures(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})

	// A tool turn makes two API calls with different usage: the context is
	// the last call's, not the turn's sum (PROTOCOL.md §9). "echo" is
	// read-only, so the CLI runs it without asking.
	res, _ := mustTurn(t, p, "[[TOOL:echo ctx]]", "tool said: ctx")
	reqs := r.api.Requests()
	if len(reqs) != 2 {
		t.Fatalf("tool turn made %d API calls, want 2", len(reqs))
	}
	if want := reqs[1].Usage.ContextTokens(); res.ContextTokens != want {
		t.Errorf("ContextTokens %d, want the last call's %d (driver/CLI mismatch: not the last assistant usage)", res.ContextTokens, want)
	}
	if sum := reqs[0].Usage.ContextTokens() + reqs[1].Usage.ContextTokens(); res.Usage.ContextTokens() != sum {
		t.Errorf("result usage %d, want the turn's sum %d", res.Usage.ContextTokens(), sum)
	}
	if w := res.ContextWindow(); w != defaultWindow {
		t.Errorf("ContextWindow %d for model %q, want %d", w, res.Model, defaultWindow)
	}

	res, _ = mustTurn(t, p, "[[BIG]] large", "echo: [[BIG]] large")
	reqs = r.api.Requests()
	want := reqs[len(reqs)-1].Usage.ContextTokens()
	if res.ContextTokens != want || want < fakeapi.BigInputTokens {
		t.Errorf("big turn ContextTokens %d, want %d", res.ContextTokens, want)
	}
}

func TestRealSetModel(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	mustTurn(t, p, "before", "echo: before")
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	const model = "claude-sonnet-4-5"
	if err := p.SetModel(ctx, model); err != nil {
		t.Fatalf("SetModel: %v", err)
	}
	res, _ := mustTurn(t, p, "after", "echo: after")
	reqs := r.api.Requests()
	if got := reqs[len(reqs)-1].Model; got != model {
		t.Errorf("API request model %q after SetModel, want %s", got, model)
	}
	if res.Model != model || res.ContextWindow() != 200_000 {
		t.Errorf("result model %q window %d, want %s and 200000", res.Model, res.ContextWindow(), model)
	}
}

func TestRealResume(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.start(t, agentproc.StartOptions{})
	mustTurn(t, first, "remember alpha", "echo: remember alpha")
	id := first.SessionID()
	closeProc(t, first)

	second := r.start(t, agentproc.StartOptions{ResumeID: id})
	res, _ := mustTurn(t, second, "and beta", "echo: and beta")
	if res.SessionID != id || second.SessionID() != id {
		t.Errorf("resumed session id %q (process %q), want %s", res.SessionID, second.SessionID(), id)
	}
	reqs := r.api.Requests()
	last := reqs[len(reqs)-1]
	if !last.Contains("remember alpha") || !last.Contains("echo: remember alpha") {
		t.Error("the resumed process's request lacks the first process's turn")
	}
}

func TestRealResumeUnknown(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{ResumeID: uuid.NewString()})
	res, _, err := turn(t, p, "anyone there")
	if !errors.Is(err, agentproc.ErrSessionNotFound) {
		t.Fatalf("turn on an unknown session: result %+v, err %v; want ErrSessionNotFound (driver/CLI mismatch)\nstderr: %s",
			res, err, p.StderrTail())
	}
	if n := len(r.api.Requests()); n != 0 {
		t.Errorf("API saw %d requests for an unknown session", n)
	}
}

func TestRealFork(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	orig := r.start(t, agentproc.StartOptions{})
	mustTurn(t, orig, "fork base", "echo: fork base")
	id := orig.SessionID()
	closeProc(t, orig)
	path, _, err := agentproc.FindTranscript(r.configDir, id, r.dir)
	if err != nil {
		t.Fatal(err)
	}
	before := sha(t, path)

	fork := r.start(t, agentproc.StartOptions{ResumeID: id, Fork: true})
	res, _ := mustTurn(t, fork, "on the fork", "echo: on the fork")
	closeProc(t, fork)

	if res.SessionID == id || uuid.Validate(res.SessionID) != nil || fork.SessionID() != res.SessionID {
		t.Errorf("fork session id %q (process %q), want a new uuid, not %s", res.SessionID, fork.SessionID(), id)
	}
	if sha(t, path) != before {
		t.Error("forking changed the original transcript")
	}
	if _, _, err := agentproc.FindTranscript(r.configDir, res.SessionID, r.dir); err != nil {
		t.Errorf("fork transcript: %v", err)
	}
	reqs := r.api.Requests()
	if !reqs[len(reqs)-1].Contains("fork base") {
		t.Error("the fork's request lacks the original history")
	}
}

func TestRealPromptTooLong(t *testing.T) {
	t.Parallel()
	t.Run("fresh", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		res, _, err := turn(t, p, "[[TOOLONG]] huge")
		if !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Fatalf("err %v, want ErrPromptTooLong (driver/CLI mismatch)", err)
		}
		if res == nil || !res.IsError || res.TerminalReason != "prompt_too_long" || res.ContextTokens != 0 {
			t.Errorf("result %+v, want is_error, terminal_reason prompt_too_long and no context figure", res)
		}
		// The session is poisoned (errors.go): the failed prompt stays in
		// the history and the next, harmless one fails with it.
		if _, _, err := turn(t, p, "harmless"); !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Errorf("next turn in the same session: %v, want ErrPromptTooLong again", err)
		}
	})
	t.Run("later turn", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		mustTurn(t, p, "small first", "echo: small first")
		// Every call fails, compaction attempts too: the CLI gives up with
		// "Prompt is too long" (PROTOCOL.md §7).
		r.api.SetMode(fakeapi.ModeTooLong)
		res, _, err := turn(t, p, "second")
		if !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Fatalf("err %v (result %+v), want ErrPromptTooLong (driver/CLI mismatch)", err, res)
		}
		// The process survives; once the API accepts again the next turn
		// goes through (the failed prompt is merged into it).
		r.api.SetMode(fakeapi.ModeNormal)
		res, _, err = turn(t, p, "third")
		if err != nil || res == nil || res.IsError || res.Text != "echo: third" {
			t.Errorf("turn after prompt too long: result %+v, err %v", res, err)
		}
	})
}

func TestRealPermission(t *testing.T) {
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
			res, err := p.Turn(ctx, "[[TOOL:touch x]]", func(e agentproc.Event) {
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

func TestRealInterrupt(t *testing.T) {
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
		res, turnErr = p.Turn(ctx, "[[SLOW]] take your time", nil)
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

func TestRealPermissionCancelledByInterrupt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()

	var evs []agentproc.Event
	var interruptErr error
	res, err := p.Turn(ctx, "[[TOOL:touch never]]", func(e agentproc.Event) {
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

func TestRealAlwaysAllow(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	asked := 0
	run := func(name string) {
		ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
		defer cancel()
		res, err := p.Turn(ctx, "[[TOOL:touch "+name+"]]", func(e agentproc.Event) {
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

func TestRealSetPermissionMode(t *testing.T) {
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

func TestRealSessionIDAndAppendedPrompt(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := uuid.NewString()
	r.cfg.AppendSystemPrompt = "FIRST_MARKER"
	first := r.start(t, agentproc.StartOptions{SessionID: id})
	res, _ := mustTurn(t, first, "hi", "echo: hi")
	closeProc(t, first)
	if res.SessionID != id {
		t.Errorf("session id %q, want the one given, %s", res.SessionID, id)
	}
	reqs := r.api.Requests()
	if sys := reqs[0].System; len(sys) == 0 || !strings.HasSuffix(sys[len(sys)-1], "FIRST_MARKER") {
		t.Errorf("appended prompt not at the end of the system blocks: %q", sys)
	}

	// A changed prompt must reach a resumed session (the driver passes
	// --system-prompt-snapshot off; §8).
	r.cfg.AppendSystemPrompt = "SECOND_MARKER"
	second := r.start(t, agentproc.StartOptions{ResumeID: id})
	mustTurn(t, second, "again", "echo: again")
	reqs = r.api.Requests()
	last := reqs[len(reqs)-1]
	if !last.Contains("SECOND_MARKER") || last.Contains("FIRST_MARKER") {
		t.Errorf("resumed session's system blocks %q: want the new appended prompt only", last.System)
	}
}

func TestRealOverloaded(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.cfg.Env["CLAUDE_CODE_MAX_RETRIES"] = "1"
	p := r.start(t, agentproc.StartOptions{})
	res, evs, err := turn(t, p, "[[OVERLOADED]] busy")
	if err != nil || res == nil {
		t.Fatalf("turn: result %+v, err %v", res, err)
	}
	var retries []agentproc.APIRetry
	for _, e := range evs {
		if rt, ok := e.(agentproc.APIRetry); ok {
			retries = append(retries, rt)
		}
	}
	if len(retries) != 1 || retries[0].ErrorStatus != 529 || retries[0].Attempt != 1 {
		t.Errorf("retry events %+v, want one for status 529", retries)
	}
	if !res.IsError || res.TerminalReason != "api_error" || res.APIErrorStatus != 529 {
		t.Errorf("result is_error=%v terminal_reason=%q api_error_status=%d, want an api_error 529", res.IsError, res.TerminalReason, res.APIErrorStatus)
	}
	if n := len(r.api.Requests()); n != 2 {
		t.Errorf("API saw %d requests, want 2 (one retry)", n)
	}
	mustTurn(t, p, "calmer now", "echo: calmer now")
}

func TestRealClose(t *testing.T) {
	t.Parallel()
	t.Run("idle", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		mustTurn(t, p, "bye", "echo: bye")
		closeProc(t, p)
		if err := p.Err(); err != nil {
			t.Errorf("exit after a good turn: %v, want nil", err)
		}
		if _, _, err := turn(t, p, "after close"); !errors.Is(err, agentproc.ErrClosed) {
			t.Errorf("turn after Close: %v, want ErrClosed", err)
		}
	})
	t.Run("mid-turn", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
		defer cancel()
		type outcome struct {
			res *agentproc.Result
			err error
		}
		turnDone := make(chan outcome, 1)
		go func() {
			res, err := p.Turn(ctx, "[[SLOW]] finish me", nil)
			turnDone <- outcome{res, err}
		}()
		if _, err := r.api.WaitRequest(ctx, 1); err != nil {
			t.Fatal(err)
		}
		closed := make(chan error, 1)
		go func() { closed <- p.Close(ctx) }()
		// Stdin EOF lets the running turn finish (§3), whether the CLI
		// sees it before or after the reply completes.
		r.api.ReleaseSlow()
		o := <-turnDone
		if o.err != nil || o.res == nil || o.res.IsError || !strings.HasSuffix(o.res.Text, " done") {
			t.Errorf("turn during Close: result %+v, err %v; want the whole slow reply", o.res, o.err)
		}
		if err := <-closed; err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := p.Err(); err != nil {
			t.Errorf("exit after finishing the turn: %v, want 0 (the CLI should not need SIGTERM)", err)
		}
	})
	t.Run("after an error result", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		p := r.start(t, agentproc.StartOptions{})
		if _, _, err := turn(t, p, "[[TOOLONG]]"); !errors.Is(err, agentproc.ErrPromptTooLong) {
			t.Fatalf("err %v, want ErrPromptTooLong", err)
		}
		closeProc(t, p)
		// The CLI exits 1 when its last result was an error (§3).
		var ee *agentproc.ExitError
		if err := p.Err(); !errors.As(err, &ee) || ee.Code != 1 {
			t.Errorf("exit after an error result: %v, want code 1", err)
		}
	})
}

func TestRealReactiveCompaction(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	p := r.start(t, agentproc.StartOptions{})
	mustTurn(t, p, "one", "echo: one")
	mustTurn(t, p, "two", "echo: two")
	// Only the next call fails: the CLI compacts the history, retries the
	// prompt and the turn succeeds in the same session (PROTOCOL.md §7).
	r.api.SetModeOnce(fakeapi.ModeTooLong)
	res, evs := mustTurn(t, p, "three", "echo: three")

	var got []string
	for _, e := range evs {
		switch e := e.(type) {
		case agentproc.Compaction:
			got = append(got, fmt.Sprintf("compaction active=%v result=%s", e.Active, e.Result))
		case agentproc.CompactBoundary:
			got = append(got, "boundary "+e.Trigger)
			if e.PreTokens <= 0 {
				t.Errorf("compact boundary pre_tokens %d", e.PreTokens)
			}
		}
	}
	want := []string{"compaction active=true result=", "compaction active=false result=success", "boundary auto"}
	if !slices.Equal(got, want) {
		t.Errorf("compaction events %q, want %q (driver/CLI mismatch on system/status or compact_boundary)", got, want)
	}
	reqs := r.api.Requests()
	if res.ContextTokens != reqs[len(reqs)-1].Usage.ContextTokens() {
		t.Errorf("ContextTokens %d after compaction, want the retried call's %d", res.ContextTokens, reqs[len(reqs)-1].Usage.ContextTokens())
	}
	if res.SessionID != p.SessionID() {
		t.Errorf("session changed by compaction: %s vs %s", res.SessionID, p.SessionID())
	}
}

func TestRealTranscriptPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		dir     string
		symlink bool // start the CLI through a symlink to dir
	}{
		{"punctuation", "My Proj@v2+x~y#z", false},
		{"non-ascii", "ünï_cødé emoji😀x", false},
		{"over 200 chars", strings.Repeat("L", 230), false},
		{"through a symlink", "real_target", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			dir := filepath.Join(filepath.Dir(r.dir), tt.dir)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cwd := dir
			if tt.symlink {
				cwd = filepath.Join(filepath.Dir(r.dir), "link_to_real")
				if err := os.Symlink(dir, cwd); err != nil {
					t.Fatal(err)
				}
			}
			p := r.start(t, agentproc.StartOptions{Dir: cwd})
			res, _ := mustTurn(t, p, "where", "echo: where")
			want := agentproc.TranscriptPath(r.configDir, cwd, res.SessionID)
			if _, err := os.Stat(want); err != nil {
				entries, _ := filepath.Glob(filepath.Join(agentproc.ProjectsDir(r.configDir), "*", res.SessionID+".jsonl"))
				t.Errorf("transcript not at %s (%v); the CLI wrote %q", want, err, entries)
			}
		})
	}
}

func TestRealResumeFromOtherDir(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.start(t, agentproc.StartOptions{})
	mustTurn(t, first, "started here", "echo: started here")
	id := first.SessionID()
	closeProc(t, first)

	other := filepath.Join(filepath.Dir(r.dir), "other_dir")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	second := r.start(t, agentproc.StartOptions{Dir: other, ResumeID: id})
	res, _ := mustTurn(t, second, "moved", "echo: moved")
	closeProc(t, second)
	if res.SessionID != id {
		t.Errorf("session id %s after resuming elsewhere, want %s", res.SessionID, id)
	}
	// The CLI keeps writing to the first project's file (§5), so the
	// lookup from the new cwd must fall back to searching.
	path, _, err := agentproc.FindTranscript(r.configDir, id, other)
	if err != nil || path != agentproc.TranscriptPath(r.configDir, r.dir, id) {
		t.Errorf("FindTranscript from the new cwd: %s, %v; want the original project's file", path, err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "moved") {
		t.Errorf("original transcript lacks the resumed turn (%v)", err)
	}
}

// BenchmarkRealTurn measures one text turn on a warm process: the driver's
// write, the CLI's request to the fake API and the decoding of its output.
func BenchmarkRealTurn(b *testing.B) {
	r := newRig(b)
	p := r.start(b, agentproc.StartOptions{})
	mustTurn(b, p, "warm up", "echo: warm up")
	for b.Loop() {
		mustTurn(b, p, "bench", "echo: bench")
	}
}

func TestRealMessageDuringToolFolds(t *testing.T) {
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
		res, err := p.Turn(ctx, "[[TOOL:while [ ! -f gate ]; do sleep 0.05; done; echo opened]]", func(e agentproc.Event) {
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
	// The message went into the running turn, as a role "system" note on
	// the tool's follow-up request, and has no result of its own (§3).
	reqs := r.api.Requests()
	if len(reqs) != 2 || !reqs[1].Contains("The user sent a new message while you were working") || !reqs[1].Contains("midway note") {
		t.Errorf("API requests %d; want the follow-up to carry the mid-turn message", len(reqs))
	}
	// So the next turn must get its own result, not a stale one.
	mustTurn(t, p, "after", "echo: after")
}
