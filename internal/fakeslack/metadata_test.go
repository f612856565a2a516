package fakeslack

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

// TestRepliesAndMetadata: conversations.replies returns a thread root first
// and its replies in order, paged by cursor; a post's metadata comes back
// only with include_all_metadata, as Slack does; malformed metadata is
// refused; an unknown ts is thread_not_found.
func TestRepliesAndMetadata(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	const root = "1700000001.000100"
	s.AddMessage("C1", root, "U1", "<@UBOT> deploy")
	md := slack.SlackMetadata{EventType: "cc_connect_reply", EventPayload: map[string]any{"key": "k1", "part": 0}}
	_, first, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("part one", false), slack.MsgOptionTS(root), slack.MsgOptionMetadata(md))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("part two", false), slack.MsgOptionTS(root)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("elsewhere", false)); err != nil {
		t.Fatal(err)
	}

	read := func(all bool, limit int, cursor string) ([]slack.Message, string) {
		t.Helper()
		msgs, _, next, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: "C1", Timestamp: root, Limit: limit, Cursor: cursor, IncludeAllMetadata: all})
		if err != nil {
			t.Fatal(err)
		}
		return msgs, next
	}
	msgs, next := read(false, 0, "")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Text)
	}
	if want := []string{"<@UBOT> deploy", "part one", "part two"}; !slices.Equal(texts, want) || next != "" {
		t.Fatalf("thread = %q (next %q), want %q", texts, next, want)
	}
	if msgs[0].ReplyCount != 2 || msgs[1].ParentUserId != "U1" || msgs[1].BotID != BotID || msgs[1].ThreadTimestamp != root {
		t.Errorf("thread fields: root %+v, reply %+v", msgs[0].Msg, msgs[1].Msg)
	}
	if msgs[1].Metadata.EventType != "" {
		t.Errorf("metadata %+v returned without include_all_metadata", msgs[1].Metadata)
	}
	msgs, _ = read(true, 0, "")
	if got := msgs[1].Metadata; got.EventType != "cc_connect_reply" || got.EventPayload["key"] != "k1" || msgs[1].Timestamp != first {
		t.Errorf("with include_all_metadata the reply's metadata = %+v", got)
	}
	if msgs[2].Metadata.EventType != "" {
		t.Errorf("a post without metadata shows %+v", msgs[2].Metadata)
	}

	// Paged: one message at a time, root first.
	var paged []string
	cursor := ""
	for range 5 {
		page, n := read(false, 1, cursor)
		for _, m := range page {
			paged = append(paged, m.Text)
		}
		if cursor = n; cursor == "" {
			break
		}
	}
	if !slices.Equal(paged, texts) {
		t.Errorf("paged thread = %q, want %q", paged, texts)
	}

	if _, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1.2"}); slackErr(err) != "thread_not_found" {
		t.Errorf("unknown ts = %v, want thread_not_found", err)
	}
	resp, err := http.PostForm(s.APIURL()+"chat.postMessage", map[string][]string{
		"token": {BotToken}, "channel": {"C1"}, "text": {"x"}, "metadata": {`{"event_payload":{}}`}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c := s.Calls("chat.postMessage"); c[len(c)-1].Error != "invalid_metadata_format" {
		t.Errorf("metadata without an event type: %q, want invalid_metadata_format", c[len(c)-1].Error)
	}
}

// TestHistoryIsTopLevelNewestFirst: conversations.history lists a
// channel's top-level messages, newest first, without thread replies.
func TestHistoryIsTopLevelNewestFirst(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.AddMessage("D1", "1700000001.000100", "U1", "first")
	if _, _, err := api.PostMessageContext(ctx, "D1", slack.MsgOptionText("reply", false),
		slack.MsgOptionMetadata(slack.SlackMetadata{EventType: "t", EventPayload: map[string]any{"k": "v"}})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.PostMessageContext(ctx, "D1", slack.MsgOptionText("in a thread", false), slack.MsgOptionTS("1700000001.000100")); err != nil {
		t.Fatal(err)
	}
	h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "D1", IncludeAllMetadata: true})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range h.Messages {
		texts = append(texts, m.Text)
	}
	if want := []string{"reply", "first"}; !slices.Equal(texts, want) {
		t.Errorf("history = %q, want %q", texts, want)
	}
	if h.Messages[0].Metadata.EventType != "t" {
		t.Errorf("history with include_all_metadata: %+v", h.Messages[0].Metadata)
	}
	h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "D1", Oldest: "1700000001.000100"})
	if err != nil || len(h.Messages) != 1 || h.Messages[0].Text != "reply" {
		t.Errorf("history after the first message = %+v, %v", h, err)
	}
}

// TestHoldWhere holds the posts to one channel while another's go through.
func TestHoldWhere(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	release := s.HoldWhere("chat.postMessage", func(f map[string]string) bool { return f["channel"] == "CA" })
	held := make(chan error, 1)
	go func() {
		_, _, err := api.PostMessageContext(ctx, "CA", slack.MsgOptionText("held", false))
		held <- err
	}()
	s.WaitHeld(t, "chat.postMessage", 1)
	if _, _, err := api.PostMessageContext(ctx, "CB", slack.MsgOptionText("free", false)); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Posts()); n != 1 {
		t.Fatalf("%d posts while CA's is held, want CB's alone", n)
	}
	release()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}

// TestRedeliveryWaitsForAConnection: a retry due while no socket is open
// goes out on the next one; a thread reply's event names its root's
// author in parent_user_id, as Slack's does.
func TestRedeliveryWaitsForAConnection(t *testing.T) {
	s := New(t)
	s.SetRedeliverAfter(time.Hour) // RedeliverNow decides when
	ws := dial(t, s)
	s.WaitConn(t, 1)
	s.AddMessage("C1", "1700000001.000100", "U9", "root")
	s.Deliver(t, MsgEvent("C1", "1700000002.000100", "U1", "reply", map[string]any{"thread_ts": "1700000001.000100"}))
	first := readEnvelope(t, ws)
	if first.Payload.Event["parent_user_id"] != "U9" {
		t.Errorf("thread reply event = %+v, want parent_user_id U9", first.Payload.Event)
	}
	ws.Close()
	s.Wait(t, "the first connection to close", func() bool { return s.WaitConn(t, 1).Closed() })
	s.RedeliverNow() // due with no connection: parked
	if n := len(s.Deliveries()); n != 1 {
		t.Fatalf("%d deliveries with no connection open, want the first alone", n)
	}
	ws2 := dial(t, s)
	got := readEnvelope(t, ws2)
	if got.Payload.EventID != first.Payload.EventID || got.RetryAttempt == 0 {
		t.Errorf("on the new connection: %+v, want a retry of %s", got, first.Payload.EventID)
	}
}

// TestPostsAreNewerThanWhatCameBefore: a post's ts is later than every
// message before it, as Slack's timestamps are, however far ahead the ts
// a test gave a message.
func TestPostsAreNewerThanWhatCameBefore(t *testing.T) {
	s := New(t)
	api := client(s)
	s.AddMessage("C1", "1800000000.999999", "U1", "from the future")
	_, ts, err := api.PostMessageContext(context.Background(), "C1", slack.MsgOptionText("after it", false))
	if err != nil {
		t.Fatal(err)
	}
	if ts != "1800000001.000000" {
		t.Errorf("post ts %s, want the next one after 1800000000.999999", ts)
	}
}
