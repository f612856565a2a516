package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackReplyBeforeItsRoot: a thread's root mention never reached
// cc-connect (it was pushed to an instance killed before its ack, and its
// retry has not come), and a reply without a mention arrives in that
// thread. cc-connect reads the root back from Slack, answers it first,
// then the reply; the root's late retry is a duplicate and runs nothing.
func TestSlackReplyBeforeItsRoot(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	r := startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1", "U2"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	f.WaitConn(t, 1)

	const root, reply = "1700000001.000100", "1700000001.000200"
	f.AddMessage("C1", root, "U1", "<@UBOT> why is the build red")
	f.WaitAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", reply, "U2", "the linter fails", map[string]any{"thread_ts": root})))
	first := f.WaitPost(t, "the root's answer", func(m fakeslack.Message) bool {
		return m.ThreadTS == root && strings.Contains(m.Text, "\nwhy is the build red")
	})
	second := f.WaitPost(t, "the reply's answer", func(m fakeslack.Message) bool {
		return m.ThreadTS == root && strings.Contains(m.Text, "\nthe linter fails")
	})
	if !(first.TS < second.TS) {
		t.Errorf("the reply was answered (%s) before its root (%s)", second.TS, first.TS)
	}
	// The root's own delivery, late.
	f.WaitAck(t, f.Deliver(t, fakeslack.MsgEvent("C1", root, "U1", "<@UBOT> why is the build red", nil)))
	// A marker in the same thread: its turn runs after any the late root
	// would have queued.
	f.Deliver(t, fakeslack.MsgEvent("C1", "1700000003.000100", "U1", "<@UBOT> marker", map[string]any{"thread_ts": root}))
	f.WaitPost(t, "the marker's answer", func(m fakeslack.Message) bool { return strings.Contains(m.Text, "\nmarker") })
	prompts := strings.Join(r.prompts(t), "\n")
	for _, text := range []string{"why is the build red", "the linter fails"} {
		if n := strings.Count(prompts, text); n != 1 {
			t.Errorf("claude got %q %d times, want once", text, n)
		}
	}
	if n := slackPostsIn(f, root, "\nwhy is the build red"); n != 1 {
		t.Errorf("the root was answered %d times, want once", n)
	}
	r.stop(t)
}
