package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/testenv"
	"github.com/cc-connect/cc-connect/platform"
)

// The real-CLI tier: the engine drives the pinned claude CLI through
// agentproc against the fake Messages API. It skips without the CLI on a
// developer's machine and fails without it under CI (internal/testenv).

func newRealCLIHarness(t *testing.T, mutate func(*Options)) (*harness, *fakeapi.Server) {
	t.Helper()
	bin := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	home := t.TempDir()
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real = true
		o.Agent = agentproc.Config{Command: bin, CloseGrace: 10 * time.Second, Env: map[string]string{
			"HOME":                home,
			"CLAUDE_CONFIG_DIR":   home + "/.claude",
			"ANTHROPIC_BASE_URL":  api.URL(),
			"ANTHROPIC_API_KEY":   "test",
			"DISABLE_TELEMETRY":   "1",
			"DISABLE_AUTOUPDATER": "1",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		}}
		o.ShutdownGrace = 10 * time.Second
		if mutate != nil {
			mutate(o)
		}
	})
	return h, api
}

func TestRealCLIReplyIndicatorAndIdleResume(t *testing.T) {
	h, api := newRealCLIHarness(t, func(o *Options) { o.IdleTimeout = 50 * time.Millisecond })
	h.say("alice", "T1", "[[BIG]] remember the word kumquat")
	got := h.rec.waitSend(t, "echo: [[BIG]] remember the word kumquat")
	// 120,000 input tokens plus the cache figures of a 1,000,000 window.
	if !regexp.MustCompile(`\n\[ctx: 1[23]%\]$`).MatchString(got.Text) {
		t.Errorf("reply = %q, want the track A indicator for ~12%% of a 1M window", got.Text)
	}
	h.logs.WaitRecords(t, waitLimit, "Reaping idle agent process", 1)
	h.say("alice", "T1", "what was the word?")
	h.rec.waitSend(t, "echo: what was the word?")
	reqs := api.Requests()
	last := reqs[len(reqs)-1]
	if !last.Contains("kumquat") {
		t.Error("the resumed session's request lacks the earlier turn: resume did not keep the history")
	}
	if recs := h.logs.Records("Resuming agent session"); len(recs) != 1 || recs[0]["transcript_size"].(float64) <= 0 {
		t.Errorf("resume log = %v, want the transcript found with its size", recs)
	}
}

func TestRealCLITooLongThenRecovers(t *testing.T) {
	h, _ := newRealCLIHarness(t, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.say("alice", "T1", "paste [[TOOLONG]]")
	h.rec.waitSend(t, "Starting a fresh session failed too")
	h.say("alice", "T1", "small")
	h.rec.waitSend(t, "echo: small")
	if got := h.rec.sends(render.NoticeTooLong); len(got) != 1 {
		t.Errorf("too-long notice posted %d times, want once", len(got))
	}
}

func TestRealCLIPermission(t *testing.T) {
	h, _ := newRealCLIHarness(t, nil)
	h.say("alice", "T1", "[[TOOL:touch made_by_tool.txt]]")
	ask := waitAsk(t, h)
	if !strings.Contains(ask.Prompt.Text, "Command:\n```\ntouch made_by_tool.txt\n```") {
		t.Errorf("prompt = %+v", ask.Prompt)
	}
	h.press("alice", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitFor(t, "the reply after the tool", func([]recorded) bool {
		for _, c := range h.rec.kinds("react") {
			if c.Text == "white_check_mark" {
				return true
			}
		}
		return false
	})
	if res := h.rec.kinds("resolve"); len(res) != 1 || res[0].Text != "allowed once by alice" {
		t.Errorf("resolved = %+v", res)
	}
	// The CLI ran the allowed tool.
	if _, err := os.Stat(filepath.Join(h.e.routes.pool.normalize(h.ws), "made_by_tool.txt")); err != nil {
		t.Errorf("the allowed tool did not run: %v", err)
	}
}
