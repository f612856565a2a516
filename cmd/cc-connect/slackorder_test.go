package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackRetriesInReverseOrder: two thread replies whose deliveries met
// a kill come again as Slack's retries, the later one first, while a turn
// runs in their thread; cc-connect answers them in the order they were
// posted, in the same instance and after a SIGKILL with both still
// waiting in the journal (recovery orders them too).
func TestSlackRetriesInReverseOrder(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			t.Parallel()
			f := fakeslack.New(t)
			path, _ := slackSoakConfig(t, f)
			tmp := filepath.Join(filepath.Dir(path), "tmp")
			if err := os.Mkdir(tmp, 0o700); err != nil {
				t.Fatal(err)
			}
			env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}
			p := startBinaryEnv(t, env, "run", "--config", path)
			f.WaitConn(t, 1)

			const root, busy, early, later = "1700000001.000100", "1700000001.000200", "1700000001.000300", "1700000001.000400"
			f.DeliverMention(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> the root", nil))
			f.WaitPost(t, "the root's reply", func(m fakeslack.Message) bool { return strings.Contains(m.Text, "echo: the root") })

			// A turn that waits at its 👀, so that what comes next waits
			// behind it.
			release := f.HoldWhere("reactions.add", func(form map[string]string) bool { return form["timestamp"] == busy })
			defer release()
			f.Deliver(t, fakeslack.MsgEvent("C1", busy, "U1", "a busy turn", map[string]any{"thread_ts": root}))
			f.WaitHeld(t, "reactions.add", 1)

			// Slack's retries, the later message first.
			for i, m := range []struct{ ts, text string }{{later, "posted second"}, {early, "posted first"}} {
				ev := fakeslack.MsgEvent("C1", m.ts, "U1", m.text, map[string]any{"thread_ts": root, "parent_user_id": "U1"})
				envID := fmt.Sprintf("env-retry-%d", i)
				f.DeliverEnvelope(t, fakeslack.EventEnvelope(envID, fmt.Sprintf("EvRetry%d", i), 1, ev))
				f.WaitAck(t, envID) // journaled
			}
			conns := 1
			if restart {
				kill(t, p, 0)
				p = startBinaryEnv(t, env, "run", "--config", path)
				conns++
				f.WaitConn(t, conns)
			}
			release()
			for _, text := range []string{"a busy turn", "posted first", "posted second"} {
				f.WaitPost(t, "the reply to "+text, func(m fakeslack.Message) bool { return strings.Contains(m.Text, "echo: "+text) })
			}
			var got []string
			for _, m := range f.Posts() {
				if m.ThreadTS == root && strings.Contains(m.Text, "echo: posted ") {
					line, _, _ := strings.Cut(m.Text[strings.Index(m.Text, "echo: "):], "\n")
					got = append(got, line)
				}
			}
			if want := []string{"echo: posted first", "echo: posted second"}; strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("answered %q, want %q", got, want)
			}
			for _, m := range f.Posts() {
				if strings.Contains(m.Text, "reached cc-connect after a later message") {
					t.Errorf("a late notice for messages that were both waiting: %q", m.Text)
				}
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := p.exitCode(t); code != 0 {
				t.Errorf("cc-connect exited %d", code)
			}
		})
	}
}

// TestSlackMessageLostWithAKillRunsFirst: a thread reply that the killed
// instance took and never journaled is in the thread, its retry still to
// come, when a newer reply reaches the restarted instance. The thread is
// read back at that first message, and the older reply answered first;
// its retry, when it comes, is a duplicate.
func TestSlackMessageLostWithAKillRunsFirst(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	path, _ := slackSoakConfig(t, f)
	tmp := filepath.Join(filepath.Dir(path), "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	env := []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken, "TMPDIR=" + tmp}
	p := startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 1)
	const root, lost, newer = "1700000002.000100", "1700000002.000200", "1700000002.000300"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> the root", nil))
	f.WaitPost(t, "the root's reply", func(m fakeslack.Message) bool { return strings.Contains(m.Text, "echo: the root") })
	kill(t, p, 0)

	// Posted while the instance died: Slack has it, cc-connect never did.
	f.Put(fakeslack.Message{Channel: "C1", TS: lost, ThreadTS: root, User: "U1", Text: "posted before the kill"})
	p = startBinaryEnv(t, env, "run", "--config", path)
	f.WaitConn(t, 2)
	f.WaitAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", newer, "U1", "posted after the restart", map[string]any{"thread_ts": root})))
	f.WaitPost(t, "the newer reply's answer", func(m fakeslack.Message) bool { return strings.Contains(m.Text, "echo: posted after the restart") })
	// Slack's retry of the lost one, at last.
	f.WaitAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", lost, "U1", "posted before the kill", map[string]any{"thread_ts": root})))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.exitCode(t); code != 0 {
		t.Errorf("cc-connect exited %d", code)
	}
	var got []string
	for _, m := range f.Posts() {
		if m.ThreadTS == root && strings.Contains(m.Text, "echo: posted ") {
			line, _, _ := strings.Cut(m.Text[strings.Index(m.Text, "echo: "):], "\n")
			got = append(got, line)
		}
	}
	if want := []string{"echo: posted before the kill", "echo: posted after the restart"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answered %q, want %q, each once", got, want)
	}
}
