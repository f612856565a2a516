package agentproc_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/google/uuid"
)

// The real-CLI tier: these tests drive the pinned claude CLI (found by
// internal/testenv; installed by `make tools`) through agentproc against the
// fake Messages API in internal/fakeapi. They check agentproc's reading of
// the CLI, not the CLI: a failure whose message says "driver/CLI mismatch"
// means agentproc and the real CLI disagree on PROTOCOL.md.

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
// runTurn runs one turn of text on p, passing its events to on.
func runTurn(ctx context.Context, p *agentproc.Process, text string, on func(agentproc.Event)) (*agentproc.Result, error) {
	t, err := p.StartTurn(ctx, agentproc.UserMessage{Text: text})
	if err != nil {
		return nil, err
	}
	return t.Wait(on)
}

func turn(t testing.TB, p *agentproc.Process, text string) (*agentproc.Result, []agentproc.Event, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	var evs []agentproc.Event
	res, err := runTurn(ctx, p, text, func(e agentproc.Event) { evs = append(evs, e) })
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

func TestRealCLIOneTurn(t *testing.T) {
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
	if init == nil || init.SessionID != id || init.Cwd != r.dir || init.Version != testenv.WantVersion() {
		t.Errorf("init event %+v, want session %s, cwd %s, version %s", init, id, r.dir, testenv.WantVersion())
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

func TestRealCLISeveralTurns(t *testing.T) {
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

func TestRealCLIContextFigures(t *testing.T) {
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

func TestRealCLISetModel(t *testing.T) {
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

func TestRealCLIOverloaded(t *testing.T) {
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

func TestRealCLIClose(t *testing.T) {
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
			res, err := runTurn(ctx, p, "[[SLOW]] finish me", nil)
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
