package engine

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/agentproc"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/platform"
)

// The tests in this file run the real agentproc driver against the fake
// claude binary, end to end: engine -> agentproc -> process -> stream-json.

type realEnv struct {
	record    string // FAKECLAUDE_RECORD
	configDir string
}

// newRealHarness runs an engine whose agents are fake claude processes with
// an isolated config dir. The context is 50,000 tokens of a 200,000 window
// on every call's first turn (46000 input + 1500 cache creation + 2500
// cache read), so replies show 25%.
func newRealHarness(t *testing.T, env map[string]string, mutate func(*Options)) (*harness, realEnv) {
	t.Helper()
	return newRealHarnessCfg(t, env, func(o *Options, _ *harnessConfig) {
		if mutate != nil {
			mutate(o)
		}
	})
}

// newRealHarnessCfg is newRealHarness whose mutate sets the harness's
// config too (its adapter, say).
func newRealHarnessCfg(t *testing.T, env map[string]string, mutate func(*Options, *harnessConfig)) (*harness, realEnv) {
	t.Helper()
	bin := fakeclaude.Build(t)
	home := t.TempDir()
	re := realEnv{record: filepath.Join(home, "record.jsonl"), configDir: filepath.Join(home, ".claude")}
	agentEnv := map[string]string{
		"HOME":                      home,
		"CLAUDE_CONFIG_DIR":         re.configDir,
		"FAKECLAUDE_RECORD":         re.record,
		"FAKECLAUDE_CONTEXT_WINDOW": "200000",
		"FAKECLAUDE_INPUT_TOKENS":   "46000",
	}
	for k, v := range env {
		agentEnv[k] = v
	}
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		c.real = true
		o.Agent = agentproc.Config{Command: bin, Env: agentEnv, CloseGrace: 2 * time.Second}
		if mutate != nil {
			mutate(o, c)
		}
	})
	return h, re
}

// recordedLine and readRecord are the engine tests' names for the fake
// claude's record of what each process received.
type recordedLine = fakeclaude.RecordedLine

func readRecord(t *testing.T, path string) []recordedLine { return fakeclaude.ReadRecord(t, path) }

func linesWith(lines []recordedLine, text string) []recordedLine {
	var out []recordedLine
	for _, l := range lines {
		if l.Text == text {
			out = append(out, l)
		}
	}
	return out
}

func TestDriverReplyAndIdleResume(t *testing.T) {
	h, re := newRealHarness(t, nil, func(o *Options) { o.IdleTimeout = 20 * time.Millisecond })
	h.say("alice", "T1", "hello")
	got := h.rec.waitSend(t, "echo: hello")
	if got.Text != "echo: hello\n[ctx: 25%]" {
		t.Errorf("reply = %q", got.Text)
	}
	h.logs.WaitRecords(t, waitLimit, "Reaping idle agent process", 1)
	h.say("alice", "T1", "again")
	h.rec.waitSend(t, "echo: again")
	lines := readRecord(t, re.record)
	if len(lines) != 2 {
		t.Fatalf("record = %+v, want two user lines", lines)
	}
	if lines[0].SessionID == "" || lines[0].SessionID != lines[1].SessionID || lines[0].Pid == lines[1].Pid {
		t.Errorf("record = %+v, want one session resumed in a second process", lines)
	}
	resumes := h.logs.Records("Resuming agent session")
	if len(resumes) != 1 || resumes[0]["session_id"] != lines[0].SessionID ||
		!strings.HasSuffix(resumes[0]["transcript"].(string), lines[0].SessionID+".jsonl") || resumes[0]["transcript_size"].(float64) <= 0 {
		t.Errorf("resume log = %v", resumes)
	}
}

func TestDriverNotFoundFallback(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	// A stored id the CLI does not know (its transcript is gone).
	h.stop()
	const lost = "11111111-2222-4333-8444-555555555555"
	if err := conv.NewStore(h.opts.StateDir).Save(conv.Record{Key: "fake/C1/T1", Platform: "fake", Channel: "C1", Thread: "T1",
		Workspace: h.e.routes.pool.normalize(h.ws), SessionID: lost}); err != nil {
		t.Fatal(err)
	}
	h = h.restart()
	h.say("alice", "T1", "are you there")
	h.rec.waitSend(t, "echo: are you there")
	h.waitIdle()
	if got := h.rec.sends(render.NoticeNotFound); len(got) != 1 {
		t.Errorf("not-found notice posted %d times, want once", len(got))
	}
	lines := linesWith(readRecord(t, re.record), "are you there")
	if len(lines) != 1 || lines[0].SessionID == lost {
		t.Errorf("record = %+v, want the message sent once, to a fresh session", lines)
	}
	lookups := h.logs.Records("Resuming agent session")
	if len(lookups) != 1 || lookups[0]["transcript_lookup_error"] == "" {
		t.Errorf("resume lookup log = %v, want the missing transcript logged", lookups)
	}
}

func TestDriverTooLongOnResumeFallback(t *testing.T) {
	h, re := newRealHarness(t, map[string]string{"FAKECLAUDE_TOOLONG_ON_RESUME": "1"},
		func(o *Options) { o.IdleTimeout = 20 * time.Millisecond })
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.logs.WaitRecords(t, waitLimit, "Reaping idle agent process", 1)
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	h.waitIdle()
	if got := h.rec.sends(render.NoticeTooLong); len(got) != 1 {
		t.Errorf("too-long notice posted %d times, want once", len(got))
	}
	first := linesWith(readRecord(t, re.record), "first")
	second := linesWith(readRecord(t, re.record), "second")
	if len(first) != 1 || len(second) != 2 || second[0].SessionID != first[0].SessionID || second[1].SessionID == first[0].SessionID {
		t.Errorf("record: first %+v second %+v; want the resumed try, then one resend to a new session", first, second)
	}
}

func TestDriverTooLongLaterTurnThenFreshFailsThenRecovers(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "ok")
	h.rec.waitSend(t, "echo: ok")
	h.say("alice", "T1", "paste [[TOOLONG]]")
	h.rec.waitSend(t, "Starting a fresh session failed too")
	h.say("alice", "T1", "small")
	h.rec.waitSend(t, "echo: small")
	h.waitIdle()
	if got := h.rec.sends(render.NoticeTooLong); len(got) != 1 {
		t.Errorf("notice posted %d times, want once", len(got))
	}
	if got := linesWith(readRecord(t, re.record), "paste [[TOOLONG]]"); len(got) != 2 {
		t.Errorf("too-long message sent %d times, want the try and one resend", len(got))
	}
}

func TestDriverCrashMidTurn(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.say("alice", "T1", "boom [[CRASH]]")
	crash := h.rec.waitSend(t, "The agent process exited")
	if !strings.Contains(crash.Text, "code 2") || !strings.Contains(crash.Text, "simulated crash") {
		t.Errorf("crash message = %q", crash.Text)
	}
	// The CLI had the message and the transcript ends on it: the turn is
	// resumed once, in a new process on the same session.
	h.rec.waitSend(t, "Recovering the turn once. The turn for “boom [[CRASH]]” was cut off; resuming it")
	h.rec.waitSend(t, "echo: "+conv.ContinueText)
	h.say("alice", "T1", "after")
	h.rec.waitSend(t, "echo: after")
	lines := readRecord(t, re.record)
	if len(lines) != 4 || lines[2].Text != conv.ContinueText || lines[2].SessionID != lines[0].SessionID || lines[2].Pid == lines[0].Pid ||
		lines[3].Text != "after" {
		t.Errorf("record = %+v, want the cut turn resumed in the same session, then the next message", lines)
	}
}

func TestDriverPermissionAndStop(t *testing.T) {
	h, _ := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "build it [[TOOL:make build]]")
	ask := waitAsk(t, h)
	if !strings.Contains(ask.Prompt.Text, "Command:\n```\nmake build\n```") {
		t.Errorf("prompt = %+v", ask.Prompt)
	}
	h.press("bob", ask.Prompt.RequestID, platform.ChoiceAllow)
	h.rec.waitSend(t, "tool said: (fake) ran: make build")

	h.say("alice", "T1", "wait [[HANG]]")
	h.rec.waitFor(t, "the hanging turn", func([]recorded) bool {
		return len(h.rec.kinds("react")) >= 3 // eyes, check, eyes
	})
	h.say("alice", "T1", "!stop")
	h.rec.waitSend(t, "Stopped.")
	h.say("alice", "T1", "still here?")
	h.rec.waitSend(t, "echo: still here?")
}

func TestDriverBtwLeavesMainTranscript(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "main one")
	h.rec.waitSend(t, "echo: main one")
	h.say("alice", "T1", "!btw side q")
	h.rec.waitSend(t, render.SidePrefix+"echo: side q")
	h.waitIdle()
	lines := readRecord(t, re.record)
	main := linesWith(lines, "main one")[0].SessionID
	side := linesWith(lines, "side q")
	if len(side) != 1 || side[0].SessionID == main {
		t.Fatalf("side question record = %+v, want one line in a forked session", side)
	}
	path, _, err := agentproc.FindTranscript(re.configDir, main)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "side q") {
		t.Error("the side question reached the main transcript")
	}
	// !sessions lists both from the real transcripts.
	h.say("alice", "T1", "!sessions")
	list := h.rec.waitSend(t, "Sessions in")
	if !strings.Contains(list.Text, main) || !strings.Contains(list.Text, side[0].SessionID) {
		t.Errorf("listing = %q", list.Text)
	}
}

func TestDriverShutdownLeavesNoProcess(t *testing.T) {
	h, re := newRealHarness(t, nil, func(o *Options) { o.ShutdownGrace = 50 * time.Millisecond })
	h.say("alice", "T1", "idle")
	h.rec.waitSend(t, "echo: idle")
	h.say("bob", "T2", "forever [[HANG]]")
	pollFor(t, "the hanging turn to start", func() bool {
		return len(linesWith(readRecord(t, re.record), "forever [[HANG]]")) == 1
	})
	h.stop()
	for _, l := range readRecord(t, re.record) {
		if err := syscall.Kill(l.Pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("claude process %d still exists after Run returned (kill 0: %v)", l.Pid, err)
		}
	}
}

func (h *harness) waitTurnStarts(t *testing.T, n int) {
	t.Helper()
	h.rec.waitFor(t, "a turn to start", func([]recorded) bool { return len(h.rec.kinds("typing")) >= n })
}

func TestDriverQueueOrderAndLimit(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	h, re := newRealHarness(t, map[string]string{"FAKECLAUDE_RELEASE": release}, func(o *Options) { o.QueueLimit = 1 })
	h.say("alice", "T1", "one [[SLOW]]")
	h.waitTurnStarts(t, 1)
	h.say("alice", "T1", "two")
	h.rec.waitSend(t, "Queued (position 1)")
	h.say("alice", "T1", "three")
	h.rec.waitSend(t, "Queue full")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "echo: two")
	h.waitIdle()
	var texts []string
	for _, l := range readRecord(t, re.record) {
		texts = append(texts, l.Text)
	}
	if strings.Join(texts, "|") != "one [[SLOW]]|two" {
		t.Errorf("the CLI received %q, want one then two, one at a time, and not the refused third", texts)
	}
	var replies []string
	for _, s := range h.rec.sends("") {
		if strings.HasPrefix(s, "[chunk") || strings.HasPrefix(s, "echo:") {
			replies = append(replies, s[:5])
		}
	}
	if strings.Join(replies, ",") != "[chun,echo:" {
		t.Errorf("replies in order %q, want the slow turn's, then two's", replies)
	}
}

func TestDriverProcessCap(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	h, re := newRealHarness(t, map[string]string{"FAKECLAUDE_RELEASE": release}, func(o *Options) { o.MaxProcesses = 1 })
	h.say("alice", "T1", "a [[SLOW]]")
	h.waitTurnStarts(t, 1)
	h.say("bob", "T2", "b")
	h.rec.waitSend(t, render.NoticeWaiting)
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "echo: b")
	h.waitIdle()
	if got := h.rec.sends(render.NoticeWaiting); len(got) != 1 {
		t.Errorf("waiting notice posted %d times, want once", len(got))
	}
	lines := readRecord(t, re.record)
	if len(lines) != 2 || lines[0].Pid == lines[1].Pid {
		t.Fatalf("record = %+v", lines)
	}
	// The first process was closed before the second started.
	if err := syscall.Kill(lines[0].Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the first process %d is still alive beside the second under a cap of 1", lines[0].Pid)
	}
}

func TestDriverPermissionDenyAndTimeout(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		press   bool
		reply   string
	}{
		{"deny", 0, true, "tool said: Denied by alice in chat."},
		{"timeout", 30 * time.Millisecond, false, "tool said: No answer in chat within 30ms; the request was denied."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newRealHarness(t, nil, func(o *Options) { o.PermissionTimeout = tt.timeout })
			h.say("alice", "T1", "[[TOOL:rm -rf build]]")
			ask := waitAsk(t, h)
			if tt.press {
				h.press("alice", ask.Prompt.RequestID, platform.ChoiceDeny)
			}
			h.rec.waitSend(t, tt.reply)
		})
	}
}

func TestDriverStatusAndNew(t *testing.T) {
	h, re := newRealHarness(t, nil, nil)
	h.say("alice", "T1", "hello")
	h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	first := readRecord(t, re.record)[0]
	h.say("alice", "T1", "!status")
	st := h.rec.waitSend(t, "State:")
	for _, want := range []string{"State: idle", "Session: " + first.SessionID, "Context: 25%",
		"Process: alive, pid " + strconv.Itoa(first.Pid)} {
		if !strings.Contains(st.Text, want) {
			t.Errorf("status lacks %q:\n%s", want, st.Text)
		}
	}
	h.say("alice", "T1", "!new")
	h.rec.waitSend(t, "Started a new session")
	h.say("alice", "T1", "fresh")
	h.rec.waitSend(t, "echo: fresh")
	lines := readRecord(t, re.record)
	if len(lines) != 2 || lines[1].SessionID == first.SessionID {
		t.Errorf("record = %+v, want the message after !new in a new session", lines)
	}
}
