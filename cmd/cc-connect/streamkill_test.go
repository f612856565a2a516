package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackStreamedReplyCutByAKill: the built binary streams a slow reply
// into a Slack thread and is SIGKILLed once the stream's message is posted
// and journaled. The restarted instance marks that message as cut off
// (it must not read as a reply), resumes the turn the CLI never finished,
// and the thread ends with the resumed turn's reply, once, and no message
// left ending in the stream's "…".
func TestSlackStreamedReplyCutByAKill(t *testing.T) {
	f := fakeslack.New(t)
	path, state := slackSoakConfig(t, f)
	tmp := filepath.Join(filepath.Dir(path), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)
	const ts = "1700000900.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> tell me slowly [[DRIP:40]]", nil))
	stream := f.WaitPost(t, "the stream's first text", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.HasSuffix(m.Text, "…")
	})
	waitFile(t, "the stream's message in the journal", func() bool {
		journals, _ := filepath.Glob(filepath.Join(state, "inbox", "*.jsonl"))
		for _, j := range journals {
			if b, err := os.ReadFile(j); err == nil && strings.Contains(string(b), `"op":"stream"`) && strings.Contains(string(b), stream.TS) {
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
	f.WaitMessage(t, "C1", stream.TS, "marked as cut off", func(m fakeslack.Message) bool {
		return strings.Contains(m.Text, "cut off before it was finished")
	})
	resumed := "echo: " + continueText
	f.WaitPost(t, "the resumed turn's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, resumed) && !strings.HasSuffix(m.Text, "…")
	})
	if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := last.exitCode(t); code != 0 {
		t.Errorf("the last instance exited %d", code)
	}
	n := 0
	for _, m := range f.Posts() {
		if m.ThreadTS != ts || m.Deleted {
			continue
		}
		if strings.HasSuffix(m.Text, "…") {
			t.Errorf("a message still reads as a reply being written: %q", m.Text)
		}
		if strings.Contains(m.Text, resumed) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the resumed turn's reply shows %d times, want once", n)
	}
}
