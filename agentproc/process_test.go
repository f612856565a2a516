package agentproc

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// fakeEnv is one isolated fake-claude world: a config dir (transcripts) and
// a workspace, shared by the processes of one test.
type fakeEnv struct {
	t         *testing.T
	bin       string
	configDir string
	dir       string
	env       map[string]string
	grace     time.Duration
}

func newFakeEnv(t *testing.T) *fakeEnv {
	t.Helper()
	root := t.TempDir()
	e := &fakeEnv{
		t:         t,
		bin:       fakeclaude.Build(t),
		configDir: filepath.Join(root, "config"),
		dir:       filepath.Join(root, "work", "proj.v2"),
		grace:     2 * time.Second,
	}
	if err := os.MkdirAll(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if real, err := filepath.EvalSymlinks(e.dir); err == nil {
		e.dir = real
	}
	e.env = map[string]string{"HOME": root, "CLAUDE_CONFIG_DIR": e.configDir}
	return e
}

func (e *fakeEnv) start(opts StartOptions) *Process {
	e.t.Helper()
	if opts.Dir == "" {
		opts.Dir = e.dir
	}
	cfg := Config{Command: e.bin, Env: e.env, CloseGrace: e.grace}
	p, err := Start(context.Background(), cfg, opts, nil)
	if err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

func (e *fakeEnv) transcript(id string) string {
	return filepath.Join(e.configDir, "projects", ProjectSlug(e.dir), id+".jsonl")
}

// testCtx bounds a test's waits by the run's own deadline: 20 s on an idle
// machine is plenty, but under make stress a 10 MiB line takes longer.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.HangLimit(t, 20*time.Second))
	t.Cleanup(cancel)
	return ctx
}

// collect records the events a Turn passes to on.
type collect struct{ evs []Event }

func (c *collect) on(ev Event) { c.evs = append(c.evs, ev) }

func (c *collect) texts() []string {
	var out []string
	for _, ev := range c.evs {
		if a, ok := ev.(AssistantText); ok {
			out = append(out, a.Text)
		}
	}
	return out
}

// runTurn runs one turn of text on p, passing its events to on.
func runTurn(ctx context.Context, p *Process, text string, on func(Event)) (*Result, error) {
	return runTurnUUID(ctx, p, "", text, on)
}

// runTurnUUID is runTurn with the message's uuid chosen.
func runTurnUUID(ctx context.Context, p *Process, id, text string, on func(Event)) (*Result, error) {
	t, err := p.StartTurn(ctx, UserMessage{UUID: id, Text: text})
	if err != nil {
		return nil, err
	}
	return t.Wait(on)
}

func mustTurn(t *testing.T, p *Process, text string) (*Result, *collect) {
	t.Helper()
	var c collect
	res, err := runTurn(testCtx(t), p, text, c.on)
	if err != nil {
		t.Fatalf("Turn(%q): %v (stderr %q)", text, err, p.StderrTail())
	}
	return res, &c
}

func TestTurnOne(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	if p.Pid() <= 0 {
		t.Fatalf("Pid = %d", p.Pid())
	}
	if id := p.SessionID(); id != "" {
		t.Fatalf("SessionID before the first turn = %q, want empty", id)
	}
	res, c := mustTurn(t, p, "hello")
	if res.Text != "echo: hello" || res.IsError || res.Subtype != "success" {
		t.Fatalf("result = %+v", res)
	}
	init, ok := c.evs[0].(Init)
	if !ok {
		t.Fatalf("first event = %T, want Init", c.evs[0])
	}
	if init.SessionID == "" || init.SessionID != p.SessionID() || res.SessionID != init.SessionID {
		t.Errorf("session ids: init %q, process %q, result %q", init.SessionID, p.SessionID(), res.SessionID)
	}
	if init.Cwd != e.dir {
		t.Errorf("init cwd = %q, want %q", init.Cwd, e.dir)
	}
	if got := c.texts(); len(got) != 1 || got[0] != "echo: hello" {
		t.Errorf("assistant texts = %q", got)
	}
	if res.ContextTokens != 7+1500+2500 {
		t.Errorf("ContextTokens = %d, want %d", res.ContextTokens, 7+1500+2500)
	}
	if res.Model != "claude-opus-5-5" || res.ContextWindow() != 1000000 {
		t.Errorf("model %q window %d", res.Model, res.ContextWindow())
	}
	if _, err := os.Stat(e.transcript(res.SessionID)); err != nil {
		t.Errorf("transcript: %v", err)
	}
}

func TestTurnMany(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	var prevCost float64
	var session string
	for i, text := range []string{"one", "two", "three"} {
		res, _ := mustTurn(t, p, text)
		if res.Text != "echo: "+text {
			t.Fatalf("turn %d text = %q", i, res.Text)
		}
		if res.TotalCostUSD <= prevCost {
			t.Errorf("turn %d: total cost %v not above %v (it is cumulative)", i, res.TotalCostUSD, prevCost)
		}
		prevCost = res.TotalCostUSD
		if session == "" {
			session = res.SessionID
		} else if res.SessionID != session {
			t.Errorf("turn %d session %q, want %q", i, res.SessionID, session)
		}
		// The context grows with every call (cache_read +100).
		if want := int64(7 + 1500 + 2500 + 100*i); res.ContextTokens != want {
			t.Errorf("turn %d ContextTokens = %d, want %d", i, res.ContextTokens, want)
		}
	}
	ctx := testCtx(t)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); err != nil {
		t.Errorf("Err after clean close = %v", err)
	}
	if err := p.Close(ctx); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, ok := <-p.Events(); ok {
		t.Error("Events still open after Close")
	}
}

func TestResume(t *testing.T) {
	e := newFakeEnv(t)
	a := e.start(StartOptions{})
	r1, _ := mustTurn(t, a, "first")
	if err := a.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}

	b := e.start(StartOptions{ResumeID: r1.SessionID})
	r2, _ := mustTurn(t, b, "second")
	if b.SessionID() != r1.SessionID || r2.SessionID != r1.SessionID {
		t.Fatalf("resumed session id %q / %q, want %q", b.SessionID(), r2.SessionID, r1.SessionID)
	}
	if r2.TotalCostUSD <= r1.TotalCostUSD {
		t.Errorf("cost not carried over: %v then %v", r1.TotalCostUSD, r2.TotalCostUSD)
	}
	data, err := os.ReadFile(e.transcript(r1.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"content":"first"`) || !strings.Contains(string(data), `"content":"second"`) {
		t.Errorf("transcript lacks one of the prompts:\n%s", data)
	}
}

func TestFork(t *testing.T) {
	e := newFakeEnv(t)
	a := e.start(StartOptions{})
	r1, _ := mustTurn(t, a, "original")
	if err := a.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	orig := e.transcript(r1.SessionID)
	before := fileSum(t, orig)

	b := e.start(StartOptions{ResumeID: r1.SessionID, Fork: true})
	r2, _ := mustTurn(t, b, "forked")
	if r2.SessionID == r1.SessionID || b.SessionID() != r2.SessionID {
		t.Fatalf("fork session %q (process %q), original %q", r2.SessionID, b.SessionID(), r1.SessionID)
	}
	if after := fileSum(t, orig); after != before {
		t.Error("fork changed the original transcript")
	}
	data, err := os.ReadFile(e.transcript(r2.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"content":"original"`) {
		t.Error("fork transcript lacks the copied history")
	}
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestResumeUnknownSession(t *testing.T) {
	e := newFakeEnv(t)
	const id = "11111111-2222-3333-4444-555555555555"
	p := e.start(StartOptions{ResumeID: id})
	res, err := runTurn(testCtx(t), p, "hello", nil)
	if !errors.Is(err, ErrSessionNotFound) {
		t.Fatalf("Turn error = %v, want ErrSessionNotFound", err)
	}
	if res == nil || !res.IsError || len(res.Errors) == 0 {
		t.Fatalf("result = %+v, want the CLI's error result", res)
	}
	<-p.Done()
	var ee *ExitError
	if !errors.As(p.Err(), &ee) || ee.Code != 1 {
		t.Fatalf("Err = %v, want exit code 1", p.Err())
	}
	if !strings.Contains(p.StderrTail(), "No conversation found with session ID: "+id) {
		t.Errorf("stderr = %q", p.StderrTail())
	}
}

func TestPromptTooLong(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	var c collect
	res, err := runTurn(testCtx(t), p, "[[TOOLONG]] big", c.on)
	if !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("Turn error = %v, want ErrPromptTooLong", err)
	}
	if res == nil || res.TerminalReason != "prompt_too_long" || res.APIErrorStatus != 400 || !strings.HasPrefix(res.Text, "Prompt is too long") {
		t.Fatalf("result = %+v", res)
	}
	var synthetic bool
	for _, ev := range c.evs {
		if a, ok := ev.(AssistantText); ok && a.Synthetic {
			synthetic = true
		}
	}
	if !synthetic {
		t.Error("no synthetic assistant event seen")
	}
	if res.ContextTokens != 0 {
		t.Errorf("ContextTokens = %d; a synthetic message is no API call", res.ContextTokens)
	}
	// The session is poisoned: the next turn fails too.
	if _, err := runTurn(testCtx(t), p, "small", nil); !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("next turn error = %v, want ErrPromptTooLong", err)
	}
}

// waitHanging starts a [[HANG]] turn and returns once it runs.
func waitHanging(t *testing.T, p *Process) {
	t.Helper()
	if _, err := p.Send(testCtx(t), "[[HANG]]"); err != nil {
		t.Fatal(err)
	}
	waitEvent[Init](t, p)
}

// waitEvent reads Events until one of type T.
func waitEvent[T Event](t *testing.T, p *Process) T {
	t.Helper()
	ctx := testCtx(t)
	for {
		select {
		case ev, ok := <-p.Events():
			if !ok {
				t.Fatalf("events closed while waiting (err %v)", p.Err())
			}
			if e, ok := ev.(T); ok {
				return e
			}
		case <-ctx.Done():
			t.Fatal("timed out waiting for an event")
		}
	}
}

func TestMalformedLineTolerated(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	res, c := mustTurn(t, p, "[[MALFORMED]] hi")
	if res.Text != "echo: [[MALFORMED]] hi" {
		t.Errorf("result text = %q", res.Text)
	}
	var m *Malformed
	for _, ev := range c.evs {
		if mm, ok := ev.(Malformed); ok {
			m = &mm
		}
	}
	if m == nil || !strings.Contains(m.Line, "not JSON") || errors.Is(m.Err, ErrMalformedOutput) {
		t.Errorf("Malformed event = %+v", m)
	}
}

func TestHugeLine(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	const n = 10 << 20
	res, c := mustTurn(t, p, "[[HUGE:10485760]]")
	texts := c.texts()
	if len(texts) != 1 || len(texts[0]) != n || len(res.Text) != n {
		t.Fatalf("got %d texts, first %d bytes, result %d bytes; want one of %d", len(texts), lenFirst(texts), len(res.Text), n)
	}
}

func lenFirst(s []string) int {
	if len(s) == 0 {
		return -1
	}
	return len(s[0])
}

func TestTurnBusy(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	running := make(chan struct{})
	type turnOut struct {
		res *Result
		err error
	}
	first := make(chan turnOut, 1)
	go func() {
		res, err := runTurn(ctx, p, "[[HANG]]", func(ev Event) {
			if _, ok := ev.(Init); ok {
				close(running)
			}
		})
		first <- turnOut{res, err}
	}()
	<-running
	if _, err := runTurn(ctx, p, "second", nil); !errors.Is(err, ErrTurnInProgress) {
		t.Errorf("concurrent Turn = %v, want ErrTurnInProgress", err)
	}
	if err := p.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	out := <-first
	if out.err != nil || out.res.TerminalReason != "aborted_streaming" {
		t.Errorf("first turn = %+v, %v", out.res, out.err)
	}
}

func TestTurnAfterAbandonedTurn(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	short, cancel := context.WithCancel(ctx)
	_, err := runTurn(short, p, "[[HANG]]", func(ev Event) {
		if _, ok := ev.(Init); ok {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Turn = %v, want context.Canceled", err)
	}
	if err := p.Interrupt(ctx); err != nil {
		t.Fatal(err)
	}
	// The abandoned turn's aborted result must not answer this one.
	res, _ := mustTurn(t, p, "next")
	if res.Text != "echo: next" {
		t.Errorf("next turn = %+v", res)
	}
}

func TestEventsBackpressure(t *testing.T) {
	e := newFakeEnv(t)
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	const n = 200 // about 600 events: more than the buffer holds
	for i := range n {
		if _, err := p.Send(ctx, "m"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		res := waitEvent[*Result](t, p)
		if want := "echo: m" + strconv.Itoa(i); res.Text != want {
			t.Fatalf("result %d = %q, want %q", i, res.Text, want)
		}
	}
}

func TestSendUUIDRecorded(t *testing.T) {
	e := newFakeEnv(t)
	record := filepath.Join(t.TempDir(), "record.jsonl")
	e.env["FAKECLAUDE_RECORD"] = record
	p := e.start(StartOptions{})
	ctx := testCtx(t)
	id, err := p.Send(ctx, "tracked")
	if err != nil {
		t.Fatal(err)
	}
	res := waitEvent[*Result](t, p)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(record)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 1 || lines[0]["uuid"] != id || lines[0]["text"] != "tracked" ||
		lines[0]["session_id"] != res.SessionID || int(lines[0]["pid"].(float64)) != p.Pid() {
		t.Errorf("record = %v, want uuid %s pid %d", lines, id, p.Pid())
	}
	data, err := os.ReadFile(e.transcript(res.SessionID))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"uuid":"`+id+`"`) {
		t.Error("the message uuid is not in the transcript")
	}
}
