package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLIApprovalOutlivesKill: the real claude asks to run a command;
// cc-connect is SIGKILLed while the prompt waits in the Slack thread. The
// restarted binary says the request still waits, the old prompt's Allow
// button answers it, and the command runs (the file exists) without a
// second prompt: the resumed CLI's same request is answered with the
// answer the button gave.
func TestRealCLIApprovalOutlivesKill(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakeslack.New(t)
	path, ws, env := teamSlackConfig(t, claude, f.APIURL())
	env = append(env, "CC_CONNECT_TEST_API_URL="+api.URL())
	state := filepath.Join(filepath.Dir(path), "state")
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)

	const ts = "1700000500.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U0ALICE", "<@UBOT> make it [[TOOL:touch made.txt]]", nil))
	limit := testenv.HangLimit(t, 60*time.Second)
	var prompt fakeslack.Message
	slackPostWithin(t, f, limit, "the permission prompt", func(m fakeslack.Message) bool {
		if m.ThreadTS == ts && len(m.Buttons()) > 0 {
			prompt = m
			return true
		}
		return false
	})
	waitFile(t, "the request in the conversation's record", func() bool {
		records, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json"))
		for _, r := range records {
			if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), prompt.TS) && strings.Contains(string(b), `"parked":`) {
				return true
			}
		}
		return false
	})
	if !kill(t, p, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
	}

	last := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 2)
	slackPostWithin(t, f, limit, "the notice that the request still waits", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "still waits for an answer")
	})
	var allow string
	for _, b := range prompt.Buttons() {
		if isAllow(b.Text) {
			allow = b.ActionID
		}
	}
	if allow == "" {
		t.Fatalf("no Allow button on the prompt: %+v", prompt.Buttons())
	}
	f.WaitAck(t, f.Press(t, prompt, allow, "U0ALICE"))
	slackPostWithin(t, f, limit, "the resumed turn's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && ctxFigure.MatchString(m.Text)
	})
	if _, err := os.Stat(filepath.Join(ws, "made.txt")); err != nil {
		for _, m := range f.Posts() {
			t.Logf("post in %s: %q", m.ThreadTS, m.Text)
		}
		for _, r := range api.Requests() {
			t.Logf("API request: turn prompt %q, last user text %q, tool results %+v", r.TurnPrompt, r.LastUserText, r.ToolResults)
		}
		t.Fatalf("made.txt was not made: %v", err)
	}
	n := 0
	for _, m := range f.Posts() {
		if m.ThreadTS == ts && strings.Contains(m.Text, "Permission request") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d permission prompts in the thread, want the first one only", n)
	}
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
}
