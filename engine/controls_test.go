package engine

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/procs"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/metrics"
)

// ctlProc adds the live controls and /compact to the in-memory fake, as
// the real CLI has them (PROTOCOL.md §4, §14). It records the control
// requests and refuses the values in refuse.
type ctlProc struct {
	*fakeProc
	c *ctlCalls
}

type ctlCalls struct {
	mu     sync.Mutex // guards calls
	calls  []string
	refuse map[string]bool
}

func (c *ctlCalls) add(call string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, call)
	if c.refuse[call] {
		return &agentproc.ControlError{Subtype: strings.SplitN(call, " ", 2)[0], Message: "Invalid value: " + call}
	}
	return nil
}

func (c *ctlCalls) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

var _ procs.Controller = ctlProc{}

func (p ctlProc) SetModel(ctx context.Context, model string) error {
	return p.c.add("set_model " + model)
}

func (p ctlProc) SetPermissionMode(ctx context.Context, mode string) error {
	return p.c.add("set_permission_mode " + mode)
}

func (p ctlProc) StartTurn(ctx context.Context, msg agentproc.UserMessage) (procs.Turn, error) {
	return startFakeTurn(func(on func(agentproc.Event)) (*agentproc.Result, error) { return p.turn(ctx, msg.Text, on) }), nil
}

// turn compacts on "/compact": status compacting, the boundary, an empty
// successful result, as the CLI does.
func (p ctlProc) turn(ctx context.Context, text string, on func(agentproc.Event)) (*agentproc.Result, error) {
	if !conv.IsCompaction(text) {
		return p.fakeProc.turn(ctx, text, on)
	}
	p.fa.mu.Lock()
	p.fa.sessions[p.id] = append(p.fa.sessions[p.id], text)
	p.fa.mu.Unlock()
	on(agentproc.Compaction{Active: true})
	if strings.Contains(text, "refuse") {
		return &agentproc.Result{SessionID: p.id, Subtype: "error_during_execution", IsError: true,
			Errors: []string{"Not enough messages to compact."}}, nil
	}
	if strings.Contains(text, "fail") {
		on(agentproc.Compaction{Result: "failed", Error: "too_few_groups"})
		return &agentproc.Result{SessionID: p.id, Subtype: "success", TerminalReason: "completed"}, nil
	}
	on(agentproc.Compaction{Result: "success"})
	on(agentproc.Init{SessionID: p.id, Model: "claude-test"})
	on(agentproc.CompactBoundary{Trigger: "manual", PreTokens: 150000, PostTokens: 20000})
	return &agentproc.Result{SessionID: p.id, Subtype: "success", TerminalReason: "completed", TotalCostUSD: 0.5}, nil
}

// controlHarness runs the fake agents behind ctlProc.
func controlHarness(t *testing.T, mutate func(*Options)) (*harness, *ctlCalls) {
	t.Helper()
	h := newHarness(t, func(o *Options, _ *harnessConfig) {
		if mutate != nil {
			mutate(o)
		}
	})
	calls := &ctlCalls{refuse: map[string]bool{}}
	h.e.spawn = func(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
		p, err := h.fa.spawn(ctx, cfg, opts, log)
		if err != nil {
			return nil, err
		}
		return ctlProc{fakeProc: p.(*fakeProc), c: calls}, nil
	}
	return h, calls
}

func TestModelCommand(t *testing.T) {
	h, calls := controlHarness(t, func(o *Options) { o.Agent.Model = "claude-configured" })
	h.say("alice", "T1", "!model")
	h.rec.waitSend(t, "Model: claude-configured\n")
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()

	h.say("bob", "T1", "!model claude-sonnet-4-5")
	h.rec.waitSend(t, "Model set to claude-sonnet-4-5 for this conversation")
	if got := calls.snapshot(); len(got) != 1 || got[0] != "set_model claude-sonnet-4-5" {
		t.Errorf("control requests = %q, want set_model on the live process", got)
	}
	h.say("alice", "T1", "!status")
	st := h.rec.waitSend(t, "State: ")
	if !strings.Contains(st.Text, "Model: claude-test (set with !model: claude-sonnet-4-5)") || !strings.Contains(st.Text, "Cost: $") {
		t.Errorf("status = %q", st.Text)
	}

	// Remembered for the next spawn (after a restart of cc-connect too).
	h = h.restart()
	h.e.spawn = func(ctx context.Context, cfg agentproc.Config, opts agentproc.StartOptions, log *slog.Logger) (procs.Process, error) {
		p, err := h.fa.spawn(ctx, cfg, opts, log)
		return ctlProc{fakeProc: p.(*fakeProc), c: calls}, err
	}
	h.say("alice", "T1", "again")
	h.rec.waitSend(t, "echo: again")
	spawns := h.fa.spawnsSnapshot()
	if last := spawns[len(spawns)-1]; last.Model != "claude-sonnet-4-5" || last.ResumeID == "" {
		t.Errorf("spawn after restart = %+v, want the chosen model on a resume", last)
	}

	h.say("alice", "T1", "!model default")
	h.rec.waitSend(t, "goes back to the configured model (claude-configured)")
	if got := calls.snapshot(); got[len(got)-1] != "set_model claude-configured" {
		t.Errorf("control requests = %q", got)
	}
}

func TestModelCommandRefusals(t *testing.T) {
	tests := []struct {
		name, arg, want string
		calls           int
	}{
		{"flag-like", "--dangerously-skip-permissions", "is not a model name", 0},
		{"two words", "opus please", "is not a model name", 0},
		{"refused by the CLI", "bogus-model", "Claude Code refused the model change: Invalid value", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, calls := controlHarness(t, nil)
			calls.refuse["set_model bogus-model"] = true
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.waitIdle()
			h.say("alice", "T1", "!model "+tt.arg)
			h.rec.waitSend(t, tt.want)
			if got := calls.snapshot(); len(got) != tt.calls {
				t.Errorf("control requests = %q", got)
			}
			s := sessionFor(t, h, "T1")
			override := s.Record().ModelOverride
			if override != "" {
				t.Errorf("override = %q after a refusal, want none", override)
			}
		})
	}
}

func TestModeCommand(t *testing.T) {
	h, calls := controlHarness(t, func(o *Options) { o.AllowedModes = []string{"default", "acceptEdits"} })
	calls.refuse["set_permission_mode default"] = true
	h.say("alice", "T1", "!mode")
	h.rec.waitSend(t, "Permission mode: default\nAllowed here: default, acceptEdits.")
	h.say("alice", "T1", "!mode bypassPermissions")
	h.rec.waitSend(t, `"bypassPermissions" is not allowed here. Allowed modes: default, acceptEdits.`)

	// Set before any process: it is passed at the spawn.
	h.say("alice", "T1", "!mode acceptedits")
	h.rec.waitSend(t, "Permission mode set to acceptEdits")
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	if sp := h.fa.spawnsSnapshot(); len(sp) != 1 || sp[0].PermissionMode != "acceptEdits" {
		t.Errorf("spawns = %+v, want --permission-mode acceptEdits", sp)
	}
	if got := calls.snapshot(); len(got) != 0 {
		t.Errorf("control requests = %q, want none before a process lived", got)
	}

	// Refused by the live process: the old mode stays.
	h.say("alice", "T1", "!mode default")
	h.rec.waitSend(t, "Claude Code refused the mode change")
	h.say("alice", "T1", "!status")
	if st := h.rec.waitSend(t, "State: "); !strings.Contains(st.Text, "Permission mode: acceptEdits") {
		t.Errorf("status = %q", st.Text)
	}
}

func TestCompactCommand(t *testing.T) {
	h, _ := controlHarness(t, nil)
	h.say("alice", "T1", "!compact")
	h.rec.waitSend(t, "There is no conversation to compact yet.")

	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	h.say("alice", "T1", "/compact  keep the   API notes")
	got := h.rec.waitSend(t, "Compacted the conversation")
	if got.Text != "Compacted the conversation: 150,000 → 20,000 tokens of context (75% → 10%).\n[ctx: 10%]" {
		t.Errorf("report = %q", got.Text)
	}
	h.waitIdle()
	if hist := h.fa.history(sess1); len(hist) != 2 || hist[1] != "/compact keep the API notes" {
		t.Errorf("history = %q, want /compact with the instructions as the next turn", hist)
	}
	h.say("alice", "T1", "!status")
	st := h.rec.waitSend(t, "State: ")
	if !strings.Contains(st.Text, "20,000") || !strings.Contains(st.Text, "Cost: $0.5000") {
		t.Errorf("status = %q, want the refreshed context figure and the cost", st.Text)
	}

	h.say("alice", "T1", "!compact fail")
	h.rec.waitSend(t, "Compaction failed (too_few_groups); the conversation is unchanged.")
	h.say("alice", "T1", "!compact refuse")
	h.rec.waitSend(t, "Compaction failed: Not enough messages to compact.")
}

// !compact queues behind a running turn instead of interrupting it.
func TestCompactWaitsForTheTurn(t *testing.T) {
	h, _ := controlHarness(t, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "work [[WAIT]]")
	h.fa.waitFor(t, "the turn to wait", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "!compact")
	h.rec.waitSend(t, "Queued (position 1)")
	h.fa.release(t)
	h.rec.waitSend(t, "Compacted the conversation")
	if hist := h.fa.history(sess1); len(hist) != 3 || hist[1] != "work [[WAIT]]" || hist[2] != "/compact" {
		t.Errorf("history = %q, want the compaction after the running turn", hist)
	}
}

// A side question uses the conversation's model, never its mode.
func TestBtwUsesModelNotMode(t *testing.T) {
	h, _ := controlHarness(t, nil)
	h.say("alice", "T1", "!model claude-haiku-4-5")
	h.rec.waitSend(t, "Model set to")
	h.say("alice", "T1", "!mode acceptEdits")
	h.rec.waitSend(t, "Permission mode set to")
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "!btw what did I say?")
	h.rec.waitSend(t, render.SidePrefix)
	h.waitIdle()
	var fork *agentproc.StartOptions
	for _, sp := range h.fa.spawnsSnapshot() {
		if sp.Fork {
			fork = &sp
		}
	}
	if fork == nil || fork.Model != "claude-haiku-4-5" || fork.PermissionMode != "" {
		t.Errorf("side question spawn = %+v, want the model and no mode", fork)
	}
}

// A !compact that did not compact is marked failed, in the reaction and in
// the metrics, though the CLI ends it with a successful result.
func TestCompactOutcome(t *testing.T) {
	for _, tc := range []struct {
		command, reaction string
		ok, failed        float64 // turns by outcome, the "hello" before included
	}{
		{"!compact", "white_check_mark", 2, 0},
		{"!compact fail", "x", 1, 1},
		{"!compact refuse", "x", 1, 1},
	} {
		t.Run(tc.command, func(t *testing.T) {
			m := metrics.New()
			h, _ := controlHarness(t, func(o *Options) { o.Metrics = m })
			h.say("alice", "T1", "hello")
			h.rec.waitSend(t, "echo: hello")
			h.waitIdle()
			msg := h.message("alice", "T1", tc.command)
			h.deliver(msg)
			h.waitIdle()
			var got []string
			for _, c := range h.rec.kinds("react") {
				if c.To.MessageID == msg.Target.MessageID && c.Text != "eyes" {
					got = append(got, c.Text)
				}
			}
			if len(got) != 1 || got[0] != tc.reaction {
				t.Errorf("reactions on the command = %q, want %s", got, tc.reaction)
			}
			series := scrape(t, m)
			ok, failed := series[`cc_connect_turns_total{outcome="ok"}`], series[`cc_connect_turns_total{outcome="error"}`]
			if ok != tc.ok || failed != tc.failed {
				t.Errorf("turns ok %v, error %v; want %v, %v", ok, failed, tc.ok, tc.failed)
			}
		})
	}
}

// A side question starts from the binding's agent setup (its arguments,
// environment and model), not the global one, while still read-only.
func TestBtwUsesTheBindingsAgentSetup(t *testing.T) {
	model := "claude-binding-model"
	h, _ := controlHarness(t, func(o *Options) {
		o.Agent.Model = "claude-global-model"
		o.Agent.Args = []string{"--global"}
		o.Agent.Env = map[string]string{"K": "global"}
		o.Bindings[0].Setup.Model = &model
		o.Bindings[0].Setup.Args = []string{"--binding"}
		o.Bindings[0].Setup.Env = map[string]string{"K": "binding"}
	})
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "!btw what did I say?")
	h.rec.waitSend(t, render.SidePrefix)
	h.waitIdle()
	h.fa.mu.Lock()
	defer h.fa.mu.Unlock()
	var fork *agentproc.Config
	for i, sp := range h.fa.spawns {
		if sp.Fork {
			if !sp.ReadOnly {
				t.Errorf("the side question's process is not read-only: %+v", sp)
			}
			fork = &h.fa.configs[i]
		}
	}
	if fork == nil {
		t.Fatal("no side-question process")
	}
	if fork.Model != model || !slices.Equal(fork.Args, []string{"--global", "--binding"}) || fork.Env["K"] != "binding" {
		t.Errorf("side question started with model %q, args %q, env %v; want the binding's", fork.Model, fork.Args, fork.Env)
	}
}
