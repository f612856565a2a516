package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/ctxindicator"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/platform"
)

// The controls against the real CLI and the fake Messages API: the model
// named in the API requests, the CLI's answer to set_permission_mode and
// its effect, and a manual compaction's figures (PROTOCOL.md §4, §14).

// promptRequest returns the last API request whose prompt is text.
func promptRequest(t *testing.T, api *fakeapi.Server, text string) fakeapi.Request {
	t.Helper()
	reqs := api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Prompt == text {
			return reqs[i]
		}
	}
	t.Fatalf("no API request for %q", text)
	return fakeapi.Request{}
}

func TestRealCLIModel(t *testing.T) {
	h, api := newRealCLIHarness(t, nil)
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	before := promptRequest(t, api, "first").Model

	// Set on the live process (set_model)…
	h.say("alice", "T1", "!model claude-sonnet-4-5")
	h.rec.waitSend(t, "Model set to claude-sonnet-4-5")
	if recs := h.logs.Records("Live control request failed; the setting applies at the next start"); len(recs) != 0 {
		t.Fatalf("the CLI did not answer set_model: %v", recs)
	}
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	if got := promptRequest(t, api, "second").Model; got != "claude-sonnet-4-5" || before == got {
		t.Errorf("model after !model = %q (before %q), want claude-sonnet-4-5", got, before)
	}
	// …and remembered for the next process (--model on the resume after
	// a restart).
	h = h.restart()
	h.say("alice", "T1", "third")
	h.rec.waitSend(t, "echo: third")
	if got := promptRequest(t, api, "third").Model; got != "claude-sonnet-4-5" {
		t.Errorf("model after a restart = %q, want the chosen one", got)
	}
	if recs := h.logs.Records("Resuming agent session"); len(recs) == 0 {
		t.Error("the conversation did not resume")
	}
	h.say("alice", "T1", "!status")
	if st := h.rec.waitSend(t, "State: "); !regexp.MustCompile(`Model: claude-sonnet-4-5[^\n]*\n`).MatchString(st.Text) ||
		!regexp.MustCompile(`Cost: \$0\.\d{4}`).MatchString(st.Text) {
		t.Errorf("status = %q", st.Text)
	}
	// Back to the default: the CLI takes set_model "default".
	h.say("alice", "T1", "!model default")
	h.rec.waitSend(t, "goes back to the configured model")
	h.say("alice", "T1", "fourth")
	h.rec.waitSend(t, "echo: fourth")
	if got := promptRequest(t, api, "fourth").Model; got != before {
		t.Errorf("model after !model default = %q, want %q", got, before)
	}
}

func TestRealCLIMode(t *testing.T) {
	h, _ := newRealCLIHarness(t, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "!mode acceptEdits")
	h.rec.waitSend(t, "Permission mode set to acceptEdits")
	if recs := h.logs.Records("Live control request failed; the setting applies at the next start"); len(recs) != 0 {
		t.Fatalf("the CLI did not answer set_permission_mode: %v", recs)
	}
	h.say("alice", "T1", "[[TOOL:touch made_in_accept_edits.txt]]")
	h.rec.waitSend(t, "tool said:")
	if asks := h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("asked %d permission prompts in acceptEdits mode", len(asks))
	}
	ws := h.e.routes.pool.normalize(h.ws)
	if _, err := os.Stat(filepath.Join(ws, "made_in_accept_edits.txt")); err != nil {
		t.Errorf("the edit did not run: %v", err)
	}
	// In plan mode a turn runs and changes nothing: the CLI refuses the
	// edit itself, without asking.
	h.say("alice", "T1", "!mode plan")
	h.rec.waitSend(t, "Permission mode set to plan")
	h.say("alice", "T1", "[[TOOL:touch made_in_plan.txt]]")
	h.rec.waitFor(t, "the reply in plan mode", func([]recorded) bool { return len(h.rec.sends("tool said:")) == 2 })
	if _, err := os.Stat(filepath.Join(ws, "made_in_plan.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a turn in plan mode changed the workspace: %v", err)
	}
	if asks := h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("asked %d permission prompts in plan mode", len(asks))
	}

	h.say("alice", "T1", "!mode default")
	h.rec.waitSend(t, "Permission mode set to default")
	if got := h.rec.sends("refused the mode change"); len(got) != 0 {
		t.Errorf("the CLI refused: %q", got)
	}
	h.say("alice", "T1", "[[TOOL:touch needs_asking.txt]]")
	ask := waitAsk(t, h)
	if !strings.Contains(ask.Prompt.Text, "touch needs_asking.txt") {
		t.Errorf("prompt in default mode = %+v", ask.Prompt)
	}
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceDeny)
	h.rec.waitFor(t, "the reply after the denial", func([]recorded) bool { return len(h.rec.sends("tool said:")) == 3 })
	if _, err := os.Stat(filepath.Join(ws, "needs_asking.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a denied edit ran: %v", err)
	}
	// The model's reply is built from the tool_result the CLI gave it.
	if reply := h.rec.sends("tool said:")[2]; !strings.Contains(reply, "Denied by alice") {
		t.Errorf("reply after the denial %q, want the model told it was denied", reply)
	}
}

// TestRealCLICompact: after !compact the CLI's own context figure is lower
// than before it: the compact_boundary's post figure is below its pre one,
// and the next turn's context (what the CLI reports in its result) is below
// the last turn's before the compaction. The first turn reports a large
// context ([[BIG]]) so that the drop is the compaction's, not noise.
func TestRealCLICompact(t *testing.T) {
	h, _ := newRealCLIHarness(t, nil)
	h.say("alice", "T1", "[[BIG]] hello, remember the word kumquat")
	h.rec.waitSend(t, "echo: [[BIG]] hello")
	h.say("alice", "T1", "!compact keep the fruit")
	h.rec.waitSend(t, "Compacted the conversation")
	h.say("alice", "T1", "still there?")
	h.rec.waitSend(t, "echo: still there?")
	h.waitIdle() // the turn logs its figures after posting the reply

	compacted := h.logs.Records("Conversation compacted")
	if len(compacted) != 1 {
		t.Fatalf("%d compactions logged, want 1", len(compacted))
	}
	pre, post := compacted[0]["pre_tokens"].(float64), compacted[0]["post_tokens"].(float64)
	if post <= 0 || post >= pre {
		t.Errorf("compact_boundary: %v tokens before, %v after; want fewer after", pre, post)
	}
	// One context figure per turn with usage: the big turn, then the turn
	// after the compaction (the compaction itself may report one too).
	var figures []float64
	for _, r := range h.logs.Records(ctxindicator.LogMessage) {
		figures = append(figures, r["input_tokens"].(float64))
	}
	if len(figures) < 2 || figures[0] < fakeapi.BigInputTokens || figures[len(figures)-1] >= figures[0] {
		t.Errorf("context figures per turn %v: want the turn after !compact below the one before", figures)
	}
	if recs := h.logs.Records("Starting agent process"); len(recs) != 1 {
		t.Errorf("%d agent processes, want the one that compacted to go on", len(recs))
	}
}

// A large message reaches the API as the bounded prompt: the artifact's
// workspace-relative path and an excerpt, never the whole text or a host
// path.
func TestRealCLILargeMessageArtifact(t *testing.T) {
	h, api := newRealCLIHarness(t, func(o *Options) { o.ArtifactThreshold = 2000 })
	big := "BEGIN " + strings.Repeat("a long pasted log line\n", 400) + " END-OF-PASTE"
	h.say("alice", "T1", big)
	h.rec.waitSend(t, "echo: The user's message is too long")
	reqs := api.Requests()
	var req fakeapi.Request
	for _, r := range reqs {
		if strings.Contains(r.LastUserText, ".cc-connect/artifacts/") {
			req = r
		}
	}
	if req.Seq == 0 {
		t.Fatalf("no API request carried the artifact's path")
	}
	ws := h.e.routes.pool.normalize(h.ws)
	if strings.Contains(req.LastUserText, "END-OF-PASTE") || strings.Contains(req.LastUserText, ws) ||
		!strings.Contains(req.LastUserText, "BEGIN a long pasted log line") {
		t.Errorf("user message sent to the API:\n%s", req.LastUserText)
	}
}
