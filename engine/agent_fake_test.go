package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/procs"
)

// fakeAgents is an in-memory stand-in for the claude CLI behind spawnFunc,
// for cases the fake claude binary cannot express (gated turns, poisoned
// sessions, exact counts of live processes). Markers in the prompt choose
// what a turn does:
//
//	[[TOOL:cmd]]  Bash tool use needing permission; replies "ran: cmd" or "denied: msg"
//	[[DELTA]]     with [[TOOL:cmd]]: "Let me check." streams first, and the turn waits for
//	              the test (release) before it asks
//	[[PLAN]]      ExitPlanMode asking to leave plan mode; an approval makes the process
//	              report the mode it goes on in (ModeChange: the answer's SetMode, else
//	              default), as the CLI's system/status does; replies "plan approved" or
//	              "plan denied: msg"
//	[[ASK]]       AskUserQuestion ("Which color?": Red or Blue); replies "answer: " and
//	              the answer's message and input
//	[[TOOLONG]]   prompt too long (and the session stays poisoned)
//	[[CRASH]]     the process exits mid-turn, "Not logged in · Please run /login" on stderr
//	[[HANG]]      runs until interrupted
//	[[WAIT]]      runs until the test calls release (or an interrupt)
//	[[SELF:NN]]   the reply ends with the self-report marker [ctx: ~NN%]
//	[[EMPTY]]     no reply text at all
//	[[HISTORY]]   replies with the session's history
//	[[OVER]]      reports 300,000 context tokens of the 200,000 window
//	[[NOUSAGE]]   reports no token usage (a turn that made no API call)
//	[[BADID]]     reports badSessionID, not its own id, as its session id
//
// Otherwise the reply is "echo: <text>", with 50,000 context tokens of a
// 200,000 window (25%).
type fakeAgents struct {
	mu        sync.Mutex // guards everything below
	sessions  map[string][]string
	lines     map[string][]fakeLine // per session: the messages as its transcript holds them
	poisoned  map[string]bool
	spawns    []agentproc.StartOptions
	configs   []agentproc.Config // each spawn's
	procs     []*fakeProc
	live      int
	maxLive   int
	waiting   int
	nextID    int
	failFresh error // the first turn of a fresh (not resumed) process fails with this
	// ignoreReadOnly makes ReadOnly processes start with every tool, as
	// a CLI that ignored the read-only flags would.
	ignoreReadOnly bool
	// readOnlyMode, when set, is the permission mode a ReadOnly process
	// reports instead of plan (its tools still narrowed), as a CLI that
	// dropped --permission-mode plan would.
	readOnlyMode string
	chosenIDs    bool // a new process runs the session id it was started with (--session-id)
	gate         chan struct{}
	changed      chan struct{}
}

// The fake's session ids are UUIDs, as the CLI's are (the engine stores and
// resumes nothing else): sess1 is the first session a test starts, and so on.
var (
	sess1, sess2 = fakeSessionID(1), fakeSessionID(2)
	old1, old2   = fakeSessionID(901), fakeSessionID(902) // sessions a test lists by hand
)

func fakeSessionID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

// fakeForkID is the id of the n-th session a fork created.
func fakeForkID(n int) string { return fmt.Sprintf("00000000-0000-4000-9000-%012d", n) }

func newFakeAgents() *fakeAgents {
	return &fakeAgents{
		sessions: map[string][]string{},
		lines:    map[string][]fakeLine{},
		poisoned: map[string]bool{},
		gate:     make(chan struct{}),
		changed:  make(chan struct{}),
	}
}

func (fa *fakeAgents) notifyLocked() {
	close(fa.changed)
	fa.changed = make(chan struct{})
}

// waitFor waits until pred holds for the fake's state.
func (fa *fakeAgents) waitFor(t *testing.T, what string, pred func(fa *fakeAgents) bool) {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		fa.mu.Lock()
		ok := pred(fa)
		ch := fa.changed
		fa.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// release lets one [[WAIT]] turn finish.
func (fa *fakeAgents) release(t *testing.T) {
	t.Helper()
	select {
	case fa.gate <- struct{}{}:
	case <-time.After(waitLimit):
		t.Fatal("no [[WAIT]] turn to release")
	}
}

func (fa *fakeAgents) spawnsSnapshot() []agentproc.StartOptions {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	return append([]agentproc.StartOptions(nil), fa.spawns...)
}

func (fa *fakeAgents) history(id string) []string {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	return append([]string(nil), fa.sessions[id]...)
}

func (fa *fakeAgents) spawn(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
	fa.mu.Lock()
	defer fa.mu.Unlock()
	fa.spawns = append(fa.spawns, opts)
	fa.configs = append(fa.configs, cfg)
	fa.live++
	fa.maxLive = max(fa.maxLive, fa.live)
	p := &fakeProc{
		fa:      fa,
		opts:    opts,
		pid:     4000 + len(fa.spawns),
		done:    make(chan struct{}),
		perm:    make(chan agentproc.PermissionDecision, 1),
		intr:    make(chan struct{}, 1),
		resumed: opts.ResumeID != "",
	}
	if opts.ResumeID != "" {
		hist, ok := fa.sessions[opts.ResumeID]
		switch {
		case !ok:
			p.notFound = true
		case opts.Fork:
			fa.nextID++
			p.id = fakeForkID(fa.nextID)
			fa.sessions[p.id] = append([]string(nil), hist...)
		default:
			p.id = opts.ResumeID
		}
	} else if fa.chosenIDs && opts.SessionID != "" {
		p.id = opts.SessionID // as the CLI runs --session-id
	} else {
		fa.nextID++
		p.id = fakeSessionID(fa.nextID)
	}
	fa.procs = append(fa.procs, p)
	fa.notifyLocked()
	return p, nil
}

type fakeProc struct {
	fa       *fakeAgents
	opts     agentproc.StartOptions
	pid      int
	id       string
	resumed  bool
	notFound bool
	turns    int
	badID    bool // [[BADID]]: report badSessionID from now on

	done    chan struct{}
	once    sync.Once
	perm    chan agentproc.PermissionDecision
	intr    chan struct{}
	mu      sync.Mutex // guards pending
	pending string
}

var _ procs.Process = (*fakeProc)(nil)

// badSessionID is what [[BADID]] reports as the session id: a CLI (or a
// stand-in for one) whose id could pass for a flag.
const badSessionID = "--dangerously-skip-permissions"

// reportedID is the session id the process reports in its events.
func (p *fakeProc) reportedID() string {
	if p.badID {
		return badSessionID
	}
	return p.id
}

var (
	toolRe = regexp.MustCompile(`\[\[TOOL:([^\]]*)\]\]`)
	selfRe = regexp.MustCompile(`\[\[SELF:(\d+)\]\]`)
)

func (p *fakeProc) exit() {
	p.once.Do(func() {
		close(p.done)
		p.fa.mu.Lock()
		p.fa.live--
		p.fa.notifyLocked()
		p.fa.mu.Unlock()
	})
}

func (p *fakeProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *fakeProc) result(text string) *agentproc.Result {
	p.fa.mu.Lock()
	cost := 0.01 * float64(len(p.fa.sessions[p.id]))
	p.fa.mu.Unlock()
	return &agentproc.Result{
		SessionID: p.reportedID(), Subtype: "success", Text: text, TerminalReason: "completed",
		TotalCostUSD: cost, ContextTokens: 50000, Model: "claude-test",
		ModelUsage: map[string]agentproc.ModelUsage{"claude-test": {ContextWindow: 200000}},
	}
}

// fakeLine is one user message in a fake transcript: its uuid, and the
// reply once its turn ended with a result (a crash leaves it cut).
type fakeLine struct {
	uuid, text string
	ended      bool
	reply      string
}

func (p *fakeProc) StartTurn(ctx context.Context, msg agentproc.UserMessage) (procs.Turn, error) {
	return startFakeTurn(func(on func(agentproc.Event)) (*agentproc.Result, error) {
		return p.fa.transcribe(p, msg, func() (*agentproc.Result, error) { return p.turn(ctx, msg.Text, on) })
	}), nil
}

// transcribe runs a turn of p and keeps its message in the session's fake
// transcript, as the CLI writes it: the message once the session is known,
// the reply when the turn ended with one.
func (fa *fakeAgents) transcribe(p *fakeProc, msg agentproc.UserMessage, run func() (*agentproc.Result, error)) (*agentproc.Result, error) {
	if p.notFound || !p.alive() {
		return run()
	}
	fa.mu.Lock()
	i := len(fa.lines[p.id])
	fa.lines[p.id] = append(fa.lines[p.id], fakeLine{uuid: msg.UUID, text: msg.Text})
	fa.mu.Unlock()
	res, err := run()
	if res != nil {
		fa.mu.Lock()
		fa.lines[p.id][i].ended, fa.lines[p.id][i].reply = true, res.Text
		fa.mu.Unlock()
	}
	return res, err
}

// turn runs one turn synchronously, calling on for each event.
func (p *fakeProc) turn(ctx context.Context, text string, on func(agentproc.Event)) (*agentproc.Result, error) {
	if !p.alive() {
		return nil, agentproc.ErrClosed
	}
	if p.notFound {
		p.exit()
		msg := "No conversation found with session ID: " + p.opts.ResumeID
		return &agentproc.Result{IsError: true, Subtype: "error_during_execution", Errors: []string{msg}}, agentproc.ErrSessionNotFound
	}
	fa := p.fa
	p.turns++
	fa.mu.Lock()
	fresh := !p.resumed && p.turns == 1
	failFresh := fa.failFresh
	if strings.Contains(text, "[[TOOLONG]]") {
		fa.poisoned[p.id] = true
	}
	poisoned := fa.poisoned[p.id]
	ignoreReadOnly, readOnlyMode := fa.ignoreReadOnly, fa.readOnlyMode
	fa.sessions[p.id] = append(fa.sessions[p.id], text)
	fa.notifyLocked()
	fa.mu.Unlock()

	if strings.Contains(text, "[[BADID]]") {
		p.badID = true
	}
	// Like the CLI, a read-only process reports the narrowed tool set
	// and plan mode (agentproc.BuildArgs).
	tools, mode := []string{"Bash", "Edit", "Read", "Write"}, cmp.Or(p.opts.PermissionMode, "default")
	if p.opts.ReadOnly && !ignoreReadOnly {
		tools, mode = agentproc.ReadOnlyTools, cmp.Or(readOnlyMode, "plan")
	}
	on(agentproc.Init{SessionID: p.reportedID(), Model: "claude-test", Cwd: p.opts.Dir, Tools: tools, PermissionMode: mode})
	if fresh && failFresh != nil {
		p.exit()
		return nil, failFresh
	}
	if poisoned {
		on(agentproc.AssistantText{Text: "Prompt is too long", Synthetic: true})
		res := p.result("Prompt is too long")
		res.IsError, res.TerminalReason, res.ContextTokens = true, "prompt_too_long", 0
		return res, agentproc.ErrPromptTooLong
	}
	if strings.Contains(text, "[[CRASH]]") {
		p.exit()
		return nil, &agentproc.ExitError{Code: 1, StderrTail: "starting\nNot logged in · Please run /login\n"}
	}
	aborted := func(reason string) (*agentproc.Result, error) {
		on(agentproc.AssistantText{Text: "partial"})
		res := p.result("")
		res.IsError, res.Subtype, res.TerminalReason = true, "error_during_execution", reason
		return res, nil
	}
	wait := func(gate chan struct{}) bool {
		fa.mu.Lock()
		fa.waiting++
		fa.notifyLocked()
		fa.mu.Unlock()
		defer func() {
			fa.mu.Lock()
			fa.waiting--
			fa.notifyLocked()
			fa.mu.Unlock()
		}()
		select {
		case <-gate:
			return true
		case <-p.intr:
			return false
		case <-p.done:
			return false
		}
	}
	switch {
	case strings.Contains(text, "[[HANG]]"):
		wait(nil)
		return aborted("aborted_streaming")
	case strings.Contains(text, "[[WAIT]]"):
		if !wait(fa.gate) {
			return aborted("aborted_streaming")
		}
	}
	reply := "echo: " + text
	if strings.Contains(text, "[[PLAN]]") {
		input, _ := json.Marshal(map[string]string{"plan": "1. Change the thing."})
		on(agentproc.ToolUse{ID: "toolu_plan", Name: "ExitPlanMode", Input: input})
		reqID := fmt.Sprintf("plan-%d-%d", p.pid, p.turns)
		p.mu.Lock()
		p.pending = reqID
		p.mu.Unlock()
		on(agentproc.PermissionRequest{RequestID: reqID, ToolName: "ExitPlanMode", DisplayName: "ExitPlanMode", Input: input})
		select {
		case d := <-p.perm:
			switch d.Behavior {
			case agentproc.Allow, agentproc.AlwaysAllow:
				on(agentproc.ModeChange{Mode: cmp.Or(d.SetMode, "default")})
				reply = "plan approved"
			default:
				reply = "plan denied: " + d.Message
			}
		case <-p.intr:
			on(agentproc.PermissionCancel{RequestID: reqID})
			return aborted("aborted_tools")
		case <-p.done:
			return nil, &agentproc.ExitError{Code: -1, Signal: "killed"}
		}
	}
	if m := toolRe.FindStringSubmatch(text); m != nil {
		if strings.Contains(text, "[[DELTA]]") {
			on(agentproc.TextDelta{Text: "Let me check."})
			if !wait(fa.gate) {
				return aborted("aborted_streaming")
			}
		}
		input, _ := json.Marshal(map[string]string{"command": m[1]})
		on(agentproc.ToolUse{ID: "toolu_1", Name: "Bash", Input: input})
		reqID := fmt.Sprintf("req-%d-%d", p.pid, p.turns)
		p.mu.Lock()
		p.pending = reqID
		p.mu.Unlock()
		on(agentproc.PermissionRequest{RequestID: reqID, ToolName: "Bash", DisplayName: "Bash", Input: input, BlockedPath: p.opts.Dir + "/x"})
		select {
		case d := <-p.perm:
			switch d.Behavior {
			case agentproc.Allow, agentproc.AlwaysAllow:
				reply = "ran: " + m[1]
			default:
				reply = "denied: " + d.Message
			}
		case <-p.intr:
			on(agentproc.PermissionCancel{RequestID: reqID})
			return aborted("aborted_tools")
		case <-p.done:
			return nil, &agentproc.ExitError{Code: -1, Signal: "killed"}
		}
	}
	if strings.Contains(text, "[[ASK]]") {
		// Claude's question: the answers' input is the reply.
		input := json.RawMessage(`{"questions":[{"question":"Which color?","header":"Color","multiSelect":false,` +
			`"options":[{"label":"Red","description":"warm"},{"label":"Blue","description":"cold"}]}]}`)
		reqID := fmt.Sprintf("ask-%d-%d", p.pid, p.turns)
		p.mu.Lock()
		p.pending = reqID
		p.mu.Unlock()
		on(agentproc.PermissionRequest{RequestID: reqID, ToolName: "AskUserQuestion", Input: input, RequiresUserInteraction: true})
		select {
		case d := <-p.perm:
			reply = "answer: " + d.Message + string(d.Input)
		case <-p.intr:
			on(agentproc.PermissionCancel{RequestID: reqID})
			return aborted("aborted_tools")
		case <-p.done:
			return nil, &agentproc.ExitError{Code: -1, Signal: "killed"}
		}
	}
	if strings.Contains(text, "[[HISTORY]]") {
		reply = "history: " + strings.Join(p.fa.history(p.id), " | ")
	}
	if m := selfRe.FindStringSubmatch(text); m != nil {
		reply += "\n[ctx: ~" + m[1] + "%]"
	}
	if strings.Contains(text, "[[EMPTY]]") {
		reply = ""
	}
	if strings.Contains(text, "[[STREAM]]") {
		// The reply's start streams, then the turn waits for the test
		// (release); a kill meanwhile leaves it unfinished in the
		// transcript, as a killed CLI does.
		on(agentproc.TextDelta{Text: reply[:min(len(reply), 12)]})
		if !wait(fa.gate) {
			return nil, &agentproc.ExitError{Code: -1, Signal: "killed"}
		}
	}
	if reply != "" {
		on(agentproc.AssistantText{Text: reply})
	}
	res := p.result(reply)
	if strings.Contains(text, "[[OVER]]") {
		res.ContextTokens = 300000
	}
	if strings.Contains(text, "[[NOUSAGE]]") {
		res.ContextTokens, res.ModelUsage = 0, nil
	}
	return res, nil
}

func (p *fakeProc) Interrupt(ctx context.Context) error {
	select {
	case p.intr <- struct{}{}:
	default:
	}
	return nil
}

func (p *fakeProc) RespondPermission(ctx context.Context, requestID string, d agentproc.PermissionDecision) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending != requestID {
		return agentproc.ErrNoPendingPermission
	}
	p.pending = ""
	p.perm <- d
	return nil
}

func (p *fakeProc) Close(ctx context.Context) error {
	p.exit()
	return nil
}

func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) SessionID() string     { return p.id }
func (p *fakeProc) StderrTail() string    { return "" }
func (p *fakeProc) Pid() int              { return p.pid }

// fakeTurn is an agentTurn fed by a synchronous turn function running on
// a goroutine of its own, buffered without bound as agentproc's turns are.
type fakeTurn struct {
	events chan agentproc.Event
	done   chan struct{}
	res    *agentproc.Result
	err    error
}

func startFakeTurn(run func(on func(agentproc.Event)) (*agentproc.Result, error)) *fakeTurn {
	t := &fakeTurn{events: make(chan agentproc.Event), done: make(chan struct{})}
	var (
		mu      sync.Mutex // guards backlog and ended
		backlog []agentproc.Event
		ended   bool
	)
	ready := make(chan struct{}, 1)
	poke := func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	}
	go func() {
		res, err := run(func(ev agentproc.Event) {
			mu.Lock()
			backlog = append(backlog, ev)
			mu.Unlock()
			poke()
		})
		t.res, t.err = res, err
		mu.Lock()
		ended = true
		mu.Unlock()
		poke()
	}()
	go func() {
		defer close(t.done)
		defer close(t.events)
		for range ready {
			mu.Lock()
			evs, end := backlog, ended
			backlog = nil
			mu.Unlock()
			for _, ev := range evs {
				t.events <- ev
			}
			if end {
				return
			}
		}
	}()
	return t
}

func (t *fakeTurn) Events() <-chan agentproc.Event { return t.events }

func (t *fakeTurn) Result() (*agentproc.Result, error) {
	<-t.done
	return t.res, t.err
}

// fakeTranscripts lists the fake's sessions for !sessions.
type fakeTranscripts struct {
	fa   *fakeAgents
	list []procs.SessionInfo
}

func (ft *fakeTranscripts) Find(id string) (string, int64, error) {
	ft.fa.mu.Lock()
	defer ft.fa.mu.Unlock()
	if _, ok := ft.fa.sessions[id]; !ok {
		return "/nowhere/" + id + ".jsonl", 0, fmt.Errorf("transcript of %s: not found", id)
	}
	return "/projects/" + id + ".jsonl", 1234, nil
}

func (ft *fakeTranscripts) List(cwd string) ([]procs.SessionInfo, error) { return ft.list, nil }

// line finds the message u in the fake transcript at path.
func (ft *fakeTranscripts) line(path, u string) (fakeLine, bool) {
	id := strings.TrimSuffix(strings.TrimPrefix(path, "/projects/"), ".jsonl")
	ft.fa.mu.Lock()
	defer ft.fa.mu.Unlock()
	for _, l := range ft.fa.lines[id] {
		if u != "" && l.uuid == u {
			return l, true
		}
	}
	return fakeLine{}, false
}

func (ft *fakeTranscripts) Contains(path, u string) (bool, error) {
	_, ok := ft.line(path, u)
	return ok, nil
}

// Absorbed: the fake agent takes nothing into a running turn.
func (ft *fakeTranscripts) Absorbed(path, u string) (bool, error) { return false, nil }

func (ft *fakeTranscripts) End(path string) (agentproc.Interruption, error) {
	id := strings.TrimSuffix(strings.TrimPrefix(path, "/projects/"), ".jsonl")
	ft.fa.mu.Lock()
	defer ft.fa.mu.Unlock()
	ls := ft.fa.lines[id]
	if len(ls) > 0 && !ls[len(ls)-1].ended {
		return agentproc.InterruptionPrompt, nil
	}
	return agentproc.InterruptionNone, nil
}

// ReplyAfter is the reply of the last turn from u's on, as the CLI's
// transcript holds it after u: a resumed turn ("Continue from where you
// left off.", under a uuid of its own) answers for u.
func (ft *fakeTranscripts) ReplyAfter(path, u string) (string, error) {
	id := strings.TrimSuffix(strings.TrimPrefix(path, "/projects/"), ".jsonl")
	ft.fa.mu.Lock()
	defer ft.fa.mu.Unlock()
	reply, from := "", false
	for _, l := range ft.fa.lines[id] {
		from = from || (u != "" && l.uuid == u)
		if from && l.ended && l.reply != "" {
			reply = l.reply
		}
	}
	return reply, nil
}

// Place is not used by the fake agent's tests: they run on one host.
func (ft *fakeTranscripts) Place(cwd, sessionID string, data []byte, replace bool) error {
	return fmt.Errorf("fake transcripts: placing the transcript of %s is not supported", sessionID)
}
