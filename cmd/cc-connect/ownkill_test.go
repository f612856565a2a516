package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackOwnReplySurvivesAKill: the built binary, on Slack with the fake
// claude, gets the answer of a turn Claude ran by itself after a
// background task ended, and is SIGKILLed while that answer's post is in
// flight (the fake holds it; the kill drops it). Claude's process dies
// with it, so the journal is all that is left of that answer: the
// restarted instance posts it into the same thread, once, with no notice,
// and the thread goes on.
func TestSlackOwnReplySurvivesAKill(t *testing.T) {
	f := fakeslack.New(t)
	path, state := slackSoakConfig(t, f)
	tmp := filepath.Join(filepath.Dir(path), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)
	const ts = "1700000950.000100"
	gate := filepath.Join(t.TempDir(), "gate")
	t.Cleanup(func() { _ = os.WriteFile(gate, nil, 0o600) })
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> [[BG:"+gate+"]]", nil))
	f.WaitPost(t, "the turn's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Command running in background")
	})
	release := f.HoldWhere("chat.postMessage", func(form map[string]string) bool {
		return strings.Contains(form["text"], "background task: ")
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.WaitHeld(t, "chat.postMessage", 1)
	journaled := func() bool {
		journals, _ := filepath.Glob(filepath.Join(state, "inbox", "*.jsonl"))
		for _, j := range journals {
			if b, err := os.ReadFile(j); err == nil && strings.Contains(string(b), `"kind":"own"`) {
				return true
			}
		}
		return false
	}
	if !journaled() {
		t.Fatal("Claude's own reply is being posted and not in the journal")
	}
	if !kill(t, p, 0) {
		t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
	}
	release() // the held post's client is gone: nothing lands
	if n := slackPostsIn(f, ts, "background task: "); n != 0 {
		t.Fatalf("the held own reply landed %d times before the restart", n)
	}

	last := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 2)
	f.WaitPost(t, "Claude's own reply after the restart", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "background task: ") &&
			strings.Contains(m.Text, "⚙️ Background command")
	})
	f.DeliverMention(t, fakeslack.MsgEvent("C1", "1700000950.000200", "U1", "<@UBOT> after", map[string]any{"thread_ts": ts}))
	f.WaitPost(t, "the next message's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "echo: after")
	})
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
	if n := slackPostsIn(f, ts, "background task: "); n != 1 {
		t.Errorf("Claude's own reply shows %d times in the thread, want once", n)
	}
	if n := slackPostsIn(f, ts, "here it is again"); n != 0 {
		t.Errorf("%d notices that the reply comes again; Slack finds its posts, so want none", n)
	}
}
