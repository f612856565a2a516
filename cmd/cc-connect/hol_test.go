package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
)

// TestSlackSlowConversationHoldsUpOnlyItself is the head-of-line case
// through the binary: the fake Slack holds every chat.postMessage to
// channel CA (the reply, and the "Queued" notice of a second message) and
// the download of a file shared in channel CD. Meanwhile a message in
// channel CB is acknowledged and answered as usual, several times over;
// once Slack lets go, CA and CD are answered too, each message once.
func TestSlackSlowConversationHoldsUpOnlyItself(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	r := startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	f.WaitConn(t, 1)

	// When each envelope was acked.
	var mu sync.Mutex
	ackedAt := map[string]time.Time{}
	f.OnAck(func(env string) {
		mu.Lock()
		ackedAt[env] = time.Now()
		mu.Unlock()
	})
	defer f.OnAck(nil)

	releasePosts := f.HoldWhere("chat.postMessage", func(form map[string]string) bool { return form["channel"] == "CA" })
	defer releasePosts()
	releaseDownload := f.HoldWhere(fakeslack.Download, nil)
	defer releaseDownload()

	const a1, a2, d1 = "1700000001.000100", "1700000001.000200", "1700000002.000100"
	f.Deliver(t, fakeslack.MsgEvent("CA", a1, "U1", "<@UBOT> a1", nil))
	f.WaitHeld(t, "chat.postMessage", 1) // a1's reply, or its progress
	f.Deliver(t, fakeslack.MsgEvent("CA", a2, "U1", "a2", map[string]any{"thread_ts": a1}))
	file := f.AddFile("F1", "big.log", "text/plain", "log lines\n")
	f.Deliver(t, fakeslack.MsgEvent("CD", d1, "U1", "<@UBOT> d1", map[string]any{"subtype": "file_share", "files": []any{file.Object()}}))
	f.WaitHeld(t, fakeslack.Download, 1)

	for i := range 3 {
		ts := fmt.Sprintf("1700000003.%06d", 100+i)
		sent := time.Now()
		env := f.Deliver(t, fakeslack.MsgEvent("CB", ts, "U1", fmt.Sprintf("<@UBOT> b%d", i), nil))
		f.WaitAck(t, env)
		mu.Lock()
		t.Logf("CB's message %d acked %v after it was sent, with CA's posts and CD's download held", i, ackedAt[env].Sub(sent))
		mu.Unlock()
		f.WaitPost(t, "the answer in CB", func(m fakeslack.Message) bool {
			return m.Channel == "CB" && m.ThreadTS == ts && strings.Contains(m.Text, fmt.Sprintf("\nb%d", i))
		})
	}
	for _, m := range f.Posts() {
		if m.Channel == "CA" || m.Channel == "CD" && strings.Contains(m.Text, "echo:") {
			t.Fatalf("%s was answered while Slack held it: %q", m.Channel, m.Text)
		}
	}

	releasePosts()
	releaseDownload()
	for _, want := range []struct{ ch, thread, text string }{{"CA", a1, "\na1"}, {"CA", a1, "\na2"}, {"CD", d1, "\nd1"}} {
		f.WaitPost(t, want.text, func(m fakeslack.Message) bool {
			return m.Channel == want.ch && m.ThreadTS == want.thread && strings.Contains(m.Text, want.text)
		})
	}
	r.attachmentPath(t, r.promptWith(t, "d1"), "big.log", "log lines\n")
	for _, text := range []string{"a1", "a2", "d1", "b0", "b1", "b2"} {
		if n := strings.Count(strings.Join(r.prompts(t), "\n"), text); n != 1 {
			t.Errorf("claude got %s %d times, want once", text, n)
		}
	}
	r.stop(t)
}
