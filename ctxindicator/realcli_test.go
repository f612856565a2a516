package ctxindicator_test

// Real-CLI tier: the pinned claude CLI (internal/testenv) driven through
// agentproc against the fake Messages API (internal/fakeapi). It checks what
// this package relies on from the CLI: that the self-report instruction
// reaches the model through --append-system-prompt, that turning it on or
// off takes effect on a resumed session (--system-prompt-snapshot off), and
// that a real result feeds both tracks.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// turnTimeout bounds one turn: a CLI start takes about a second, a fake
// reply milliseconds.
const turnTimeout = 90 * time.Second

type rig struct {
	api *fakeapi.Server
	cfg agentproc.Config
	dir string
}

func newRig(t *testing.T, opts ...fakeapi.Option) *rig {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t, opts...)
	home := t.TempDir()
	return &rig{
		api: api,
		dir: t.TempDir(),
		cfg: agentproc.Config{
			Command: bin,
			Env: map[string]string{
				"HOME":               home,
				"CLAUDE_CONFIG_DIR":  home + "/.claude",
				"ANTHROPIC_BASE_URL": api.URL(),
				"ANTHROPIC_API_KEY":  "test",
				"DISABLE_TELEMETRY":  "1",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
				"DISABLE_AUTOUPDATER":                      "1",
			},
			CloseGrace: 10 * time.Second,
		},
	}
}

// runTurn starts a process (resuming resumeID when set) with or without
// the self-report instruction, runs one turn, closes the process, and
// returns the result and the API request that carried the prompt.
func (r *rig) runTurn(t *testing.T, resumeID string, selfReport bool, prompt string) (*agentproc.Result, fakeapi.Request) {
	t.Helper()
	cfg := r.cfg
	if selfReport {
		cfg.AppendSystemPrompt = ctxindicator.SelfReportInstruction
	}
	ctx, cancel := context.WithTimeout(t.Context(), turnTimeout)
	defer cancel()
	p, err := agentproc.Start(ctx, cfg, agentproc.StartOptions{Dir: r.dir, ResumeID: resumeID}, nil)
	if err != nil {
		t.Fatalf("starting the CLI: %v", err)
	}
	var res *agentproc.Result
	turn, err := p.StartTurn(ctx, agentproc.UserMessage{Text: prompt})
	if err == nil {
		res, err = turn.Wait(nil)
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer closeCancel()
	if cerr := p.Close(closeCtx); cerr != nil {
		t.Errorf("closing the CLI: %v", cerr)
	}
	if err != nil || res == nil || res.IsError {
		t.Fatalf("turn %q: result %+v, err %v\nstderr: %s", prompt, res, err, p.StderrTail())
	}
	for _, req := range r.api.Requests() {
		if req.Prompt == prompt && !req.FollowUp {
			return res, req
		}
	}
	t.Fatalf("no API request carried the prompt %q", prompt)
	return nil, fakeapi.Request{}
}

func systemHas(req fakeapi.Request, s string) bool {
	for _, block := range req.System {
		if strings.Contains(block, s) {
			return true
		}
	}
	return false
}

// step is one process of a session: self-report on or off through
// agentproc (which always adds --system-prompt-snapshot off),
// or raw extra CLI args, and whether the instruction must reach the API.
type step struct {
	selfReport bool
	args       []string
	want       bool
}

// TestRealCLISelfReportFollowsResume turns self-report on or off between a
// session's processes; each resumed request's system blocks must follow the
// setting of its own process, not the one the session began with.
func TestRealCLISelfReportFollowsResume(t *testing.T) {
	on, off := step{selfReport: true, want: true}, step{selfReport: false, want: false}
	tests := []struct {
		name  string
		steps []step
	}{
		{"on, then off", []step{on, off}},
		{"off, then on", []step{off, on}},
		{"on, still on", []step{on, on}},
		{"off, on, off", []step{off, on, off}},
		{"on, off, on", []step{on, off, on}},
		// A session given the instruction some other way (extra args,
		// or claude run by hand) loses it on a resume without it: the
		// driver always passes --system-prompt-snapshot off, since under
		// the CLI's default snapshot the stale instruction would stay
		// (PROTOCOL.md §8).
		{"instruction given by hand, then a plain resume", []step{
			{args: []string{"--append-system-prompt", ctxindicator.SelfReportInstruction}, want: true},
			{want: false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			session := ""
			for i, st := range tt.steps {
				r.cfg.Args = st.args
				prompt := fmt.Sprintf("prompt %d", i)
				res, req := r.runTurn(t, session, st.selfReport, prompt)
				if session != "" && (res.SessionID != session || !req.Contains("prompt 0")) {
					t.Fatalf("step %d is not a resume: session %s then %s, history has the first prompt: %v",
						i, session, res.SessionID, req.Contains("prompt 0"))
				}
				session = res.SessionID
				if got := systemHas(req, ctxindicator.SelfReportInstruction); got != st.want {
					t.Errorf("step %d (self-report %v, args %q): instruction in system blocks = %v, want %v",
						i, st.selfReport, st.args, got, st.want)
				}
				// The instruction lives in the system prompt only, never
				// in the conversation.
				for _, m := range req.Messages {
					if strings.Contains(m.Text(), ctxindicator.SelfReportInstruction) {
						t.Errorf("step %d: instruction found in a %s message", i, m.Role)
					}
				}
			}
		})
	}
}

// TestRealCLIResultFeedsBothTracks runs a turn whose reply carries a
// self-report marker and checks the figures taken from the real result:
// track A from the last call's usage over the window the CLI reports,
// track B from the marker, which is stripped from the relayed text.
func TestRealCLIResultFeedsBothTracks(t *testing.T) {
	usage := fakeapi.Usage{InputTokens: 120_000, CacheCreationInputTokens: 1_500, CacheReadInputTokens: 2_500, OutputTokens: 5}
	r := newRig(t, fakeapi.WithUsage(usage), fakeapi.WithReply("All done.\n\n[ctx: ~15%]"))
	res, _ := r.runTurn(t, "", true, "do the thing")

	text, self, ok := ctxindicator.StripSelfReport(res.Text)
	if !ok || self != 15 || text != "All done." {
		t.Fatalf("StripSelfReport(%q) = %q, %d, %v", res.Text, text, self, ok)
	}
	f := ctxindicator.NewFigures(res.ContextTokens, res.ContextWindow(), 0).WithSelfReport(self)
	if f.Tokens != usage.ContextTokens() || !f.WindowReported {
		t.Fatalf("figures %+v: want %d tokens and the CLI's window", f, usage.ContextTokens())
	}
	// The CLI's default model has a 1M window (PROTOCOL.md §9): 124,000
	// tokens are 12%, where a fixed 200k divisor would say 62%.
	pct, ok := f.SDK()
	if f.Window != 1_000_000 || pct != 12 || !ok {
		t.Errorf("SDK() = %d%% of %d, want 12%% of 1,000,000", pct, f.Window)
	}
	if d, ok := f.Drift(); d != 3 || !ok {
		t.Errorf("Drift() = %d, %v; want +3", d, ok)
	}
	if got := ctxindicator.Append(text, pct, true); got != "All done.\n[ctx: 12%]" {
		t.Errorf("relayed reply %q", got)
	}
}
