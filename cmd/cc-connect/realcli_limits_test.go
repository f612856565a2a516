package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// TestRealCLILimitThroughSlack: through the binary on Slack with the real
// CLI, a turn the API refuses with 429 is parked with the notice (no raw
// error), and runs by itself once the API accepts again and the retry's
// wait (agent.limit_retry) has passed.
func TestRealCLILimitThroughSlack(t *testing.T) {
	t.Parallel()
	f := fakeslack.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, api := startRealChatAgent(t, `limit_retry = "2s"`, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
`, f.APIURL()), `"U1"`, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	defer r.stop(t)
	f.WaitConn(t, 1)
	// Only the turn's request is refused: the retry meets an API that
	// accepts again, however long the notice took to post.
	api.SetModeOnce(fakeapi.ModeRateLimited)
	const ts = "1700000201.000100"
	f.Deliver(t, fakeslack.MsgEvent("C1", ts, "U1", "<@UBOT> parked message", nil))
	f.WaitPost(t, "the usage-limit notice", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "Claude's usage limit is reached; this message runs by itself at")
	})
	f.WaitPost(t, "the parked message's reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "echo: ") && strings.Contains(m.Text, "parked message")
	})
	if reqs := api.Requests(); len(reqs) < 2 || reqs[0].Outcome != fakeapi.OutcomeRateLimit {
		t.Errorf("API requests %+v: want the refused one, then the run", reqs)
	}
	if n := slackPostsIn(f, ts, "API Error"); n != 0 {
		t.Errorf("%d raw API errors in the thread, want none", n)
	}
	if n := slackPostsIn(f, ts, "usage limit is reached"); n != 1 {
		t.Errorf("%d notices in the thread, want 1", n)
	}
}

// TestRealCLILimitThroughTelegram is the same on Telegram, in a forum
// topic: the refused turn is parked with one notice in the topic, no raw
// error, and runs by itself once the API accepts again and the retry's
// wait has passed.
func TestRealCLILimitThroughTelegram(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	f.SetWaitLimit(min(testenv.HangLimit(t, 2*time.Minute), 3*time.Minute))
	r, api := startRealChatAgent(t, `limit_retry = "2s"`, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
`, f.URL()), `"7"`, "TELEGRAM_BOT_TOKEN="+faketelegram.Token)
	defer r.stop(t)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	api.SetModeOnce(fakeapi.ModeRateLimited)
	const forumID, topic = -1001, 89
	f.Send(map[string]any{
		"chat": map[string]any{"id": forumID, "type": "supergroup", "is_forum": true, "title": "dev"},
		"from": faketelegram.User(7, "alice", false), "text": "@" + faketelegram.BotUsername + " parked message",
		"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		"message_thread_id": topic, "is_topic_message": true,
	})
	f.WaitSent(t, "the usage-limit notice", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "Claude's usage limit is reached; this message runs by itself at")
	})
	f.WaitSent(t, "the parked message's reply", func(m faketelegram.Message) bool {
		return m.ThreadID == topic && strings.Contains(m.Text, "echo: ") && strings.Contains(m.Text, "parked message")
	})
	if reqs := api.Requests(); len(reqs) < 2 || reqs[0].Outcome != fakeapi.OutcomeRateLimit {
		t.Errorf("API requests %+v: want the refused one, then the run", reqs)
	}
	notices, raw := 0, 0
	for _, m := range f.Sent() {
		if m.ThreadID != topic {
			continue
		}
		if strings.Contains(m.Text, "usage limit is reached") {
			notices++
		}
		if strings.Contains(m.Text, "API Error") {
			raw++
		}
	}
	if notices != 1 || raw != 0 {
		t.Errorf("%d notices and %d raw API errors in the topic, want 1 and none", notices, raw)
	}
}
