package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

func client(s *Server) *slack.Client {
	return slack.New(BotToken, slack.OptionAPIURL(s.APIURL()), slack.OptionAppLevelToken(AppToken))
}

// slackErr is the error code of a Web API refusal as slack-go reports it.
func slackErr(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestPostLimits(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	section := func(n int) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("a", n), false, false), nil, nil)
	}
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	button := func(value string) slack.Block {
		return slack.NewActionBlock("perm", slack.NewButtonBlockElement("allow", value, slack.NewTextBlockObject(slack.PlainTextType, "Allow", false, false)))
	}
	context := func(n int) slack.Block {
		return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, strings.Repeat("c", n), false, false))
	}
	tests := []struct {
		name    string
		channel string
		opts    []slack.MsgOption
		want    string // "" = posted
	}{
		{"40,000 characters are fine", "C1", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("é", 40000), false)}, ""},
		{"40,001 characters are too long", "C1", []slack.MsgOption{slack.MsgOptionText(strings.Repeat("é", 40001), false)}, "msg_too_long"},
		{"no text, no blocks", "C1", []slack.MsgOption{slack.MsgOptionText(" ", false)}, "no_text"},
		{"section of 3,000 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(section(3000))}, ""},
		{"section of 3,001 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(section(3001))}, "invalid_blocks"},
		{"51 blocks", "C1", []slack.MsgOption{slack.MsgOptionBlocks(many...)}, "invalid_blocks"},
		{"button value of 2,000 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(button(strings.Repeat("é", 2000)))}, ""},
		{"button value of 2,001 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(button(strings.Repeat("v", 2001)))}, "invalid_blocks"},
		{"context text of 3,000 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(context(3000))}, ""},
		{"context text of 3,001 characters", "C1", []slack.MsgOption{slack.MsgOptionBlocks(context(3001))}, "invalid_blocks"},
		{"unknown channel", "CGONE", []slack.MsgOption{slack.MsgOptionText("hi", false)}, "channel_not_found"},
	}
	s.DeleteChannel("CGONE")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts, err := api.PostMessageContext(ctx, tt.channel, tt.opts...)
			if got := slackErr(err); got != tt.want {
				t.Fatalf("PostMessage error = %q, want %q", got, tt.want)
			}
			if tt.want == "" {
				if _, ok := s.Message(tt.channel, ts); !ok {
					t.Errorf("the post %s is not in the channel", ts)
				}
			}
		})
	}
	// Slack names what is wrong in the blocks.
	var body map[string]any
	resp, err := http.PostForm(s.APIURL()+"chat.postMessage", map[string][]string{
		"token": {BotToken}, "channel": {"C1"}, "blocks": {`[{"type":"section","text":{"type":"mrkdwn","text":"` + strings.Repeat("b", 3001) + `"}}]`}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	msgs, _ := body["response_metadata"].(map[string]any)["messages"].([]any)
	if body["error"] != "invalid_blocks" || len(msgs) != 1 || msgs[0] != "[ERROR] must be less than 3001 characters [json-pointer:/blocks/0/text/text]" {
		t.Errorf("invalid_blocks answer = %v", body)
	}
}

func TestUpdatesAndReactionsNeedTheMessage(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.AddMessage("C1", "1700000000.000001", "U1", "a user's message")
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("first", false), slack.MsgOptionTS("1700000000.000001"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		do   func() error
		want string
	}{
		{"edit the post", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("second", false))
			return err
		}, ""},
		{"edit a post that does not exist", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", "1700000999.000001", slack.MsgOptionText("x", false))
			return err
		}, "message_not_found"},
		{"edit a user's message", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", "1700000000.000001", slack.MsgOptionText("x", false))
			return err
		}, "cant_update_message"},
		{"edit past 40,000 characters", func() error {
			_, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText(strings.Repeat("x", 40001), false))
			return err
		}, "msg_too_long"},
		{"react", func() error {
			return api.AddReactionContext(ctx, "eyes", slack.NewRefToMessage("C1", "1700000000.000001"))
		}, ""},
		{"react twice", func() error {
			return api.AddReactionContext(ctx, "eyes", slack.NewRefToMessage("C1", "1700000000.000001"))
		}, "already_reacted"},
		{"react to nothing", func() error { return api.AddReactionContext(ctx, "eyes", slack.NewRefToMessage("C1", "1.2")) }, "message_not_found"},
		{"unreact what is not there", func() error {
			return api.RemoveReactionContext(ctx, "x", slack.NewRefToMessage("C1", "1700000000.000001"))
		}, "no_reaction"},
	}
	for _, st := range steps {
		if got := slackErr(st.do()); got != st.want {
			t.Errorf("%s: error %q, want %q", st.name, got, st.want)
		}
	}
	m, _ := s.Message("C1", ts)
	if m.Text != "second" || len(m.Edits) != 1 || m.ThreadTS != "1700000000.000001" {
		t.Errorf("post after the edit = %+v", m)
	}
	if u, _ := s.Message("C1", "1700000000.000001"); len(u.Reactions) != 1 || u.Reactions[0] != "eyes" {
		t.Errorf("reactions on the user's message = %v", u.Reactions)
	}
}

func TestRateLimitAndFaults(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.RateLimit("chat.postMessage", 7)
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter != 7*time.Second {
		t.Fatalf("rate-limited post = %v, want Retry-After 7s", err)
	}
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Fatalf("the next post = %v", err)
	}
	s.Down("users.info", 1)
	if _, err := api.GetUserInfoContext(ctx, "U1"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("users.info while down = %v", err)
	}
	u, err := api.GetUserInfoContext(ctx, "U1")
	if err != nil || u.Profile.DisplayName != "Display U1" {
		t.Errorf("users.info = %+v, %v", u, err)
	}
	if got := slackErr(func() error {
		_, err := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL())).AuthTestContext(ctx)
		return err
	}()); got != "invalid_auth" {
		t.Errorf("auth.test with a wrong token = %q", got)
	}
	calls := s.Calls("chat.postMessage")
	if len(calls) != 2 || calls[0].Error != "ratelimited" || calls[1].Error != "" {
		t.Errorf("recorded calls = %+v", calls)
	}
}

// dial opens a raw Socket Mode connection, as a client that acks by hand.
func dial(t *testing.T, s *Server) *websocket.Conn {
	t.Helper()
	var open struct {
		OK  bool   `json:"ok"`
		URL string `json:"url"`
	}
	req, _ := http.NewRequest(http.MethodPost, s.APIURL()+"apps.connections.open", nil)
	req.Header.Set("Authorization", "Bearer "+AppToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&open); err != nil || !open.OK {
		t.Fatalf("apps.connections.open: %v %+v", err, open)
	}
	ws, _, err := websocket.DefaultDialer.Dial(open.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	var hello map[string]any
	if err := ws.ReadJSON(&hello); err != nil || hello["type"] != "hello" {
		t.Fatalf("first frame %v, %v", hello, err)
	}
	return ws
}

type envelope struct {
	EnvelopeID   string `json:"envelope_id"`
	Type         string `json:"type"`
	RetryAttempt int    `json:"retry_attempt"`
	RetryReason  string `json:"retry_reason"`
	Payload      struct {
		EventID string         `json:"event_id"`
		Event   map[string]any `json:"event"`
	} `json:"payload"`
}

func readEnvelope(t *testing.T, ws *websocket.Conn) envelope {
	t.Helper()
	_ = ws.SetReadDeadline(time.Now().Add(fakekit.DefaultWaitLimit))
	var e envelope
	if err := ws.ReadJSON(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestRedeliveryOfUnackedEnvelopes(t *testing.T) {
	s := New(t)
	s.SetRedeliverAfter(time.Millisecond)
	ws := dial(t, s)
	s.WaitConn(t, 1)
	s.Deliver(t, MsgEvent("C1", "1700000001.000001", "U1", "hello", nil))
	// Unacked, the event comes back three times, each time as a new
	// envelope with the same event id and a higher retry_attempt.
	var got []envelope
	for range 4 {
		got = append(got, readEnvelope(t, ws))
	}
	for i, e := range got {
		if e.Payload.EventID != got[0].Payload.EventID || e.RetryAttempt != i || (i > 0) != (e.RetryReason == "timeout") {
			t.Errorf("delivery %d = %+v", i, e)
		}
		if i > 0 && e.EnvelopeID == got[i-1].EnvelopeID {
			t.Errorf("delivery %d reuses envelope id %s", i, e.EnvelopeID)
		}
	}
	if n := len(s.Deliveries()); n != 4 {
		t.Errorf("%d deliveries, want 4 (no more after three retries)", n)
	}
	// The ack of the last retry is the ack of the event the first
	// envelope carried, which itself stays unacked.
	if err := ws.WriteJSON(map[string]any{"envelope_id": got[3].EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	s.WaitEventAck(t, got[0].EnvelopeID)
	if s.Acked(got[0].EnvelopeID) {
		t.Errorf("envelope %s acked, want only its retry", got[0].EnvelopeID)
	}

	// An acked envelope is not sent again: the next frame is the next event.
	s.SetRedeliverAfter(time.Hour)
	s.Deliver(t, MsgEvent("C1", "1700000002.000001", "U1", "acked", nil))
	e := readEnvelope(t, ws)
	if err := ws.WriteJSON(map[string]any{"envelope_id": e.EnvelopeID}); err != nil {
		t.Fatal(err)
	}
	s.WaitAck(t, e.EnvelopeID)
	s.Deliver(t, MsgEvent("C1", "1700000003.000001", "U1", "next", nil))
	if n := readEnvelope(t, ws); n.Payload.Event["text"] != "next" {
		t.Errorf("after an ack got %+v", n)
	}
}

func TestMentionTwinsEchoAndPress(t *testing.T) {
	s := New(t)
	ws := dial(t, s)
	s.WaitConn(t, 1)
	s.DeliverMention(t, MsgEvent("C1", "1700000001.000001", "U1", "<@UBOT> hi", nil))
	a, b := readEnvelope(t, ws), readEnvelope(t, ws)
	if a.Payload.Event["type"] != "message" || b.Payload.Event["type"] != "app_mention" ||
		a.Payload.Event["ts"] != b.Payload.Event["ts"] || a.Payload.EventID == b.Payload.EventID {
		t.Errorf("twins = %+v / %+v", a.Payload, b.Payload)
	}

	// The bot's post comes back as a message event of the bot.
	blocks := `[{"type":"actions","block_id":"perm","elements":[{"type":"button","action_id":"allow","value":"req-1","text":{"type":"plain_text","text":"Allow"}}]}]`
	resp, err := http.PostForm(s.APIURL()+"chat.postMessage", map[string][]string{
		"token": {BotToken}, "channel": {"C1"}, "thread_ts": {"1700000001.000001"}, "text": {"allow?"}, "blocks": {blocks}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	echo := readEnvelope(t, ws)
	if echo.Payload.Event["bot_id"] != BotID || echo.Payload.Event["thread_ts"] != "1700000001.000001" {
		t.Errorf("echo = %+v", echo.Payload.Event)
	}
	post := s.Posts()[0]
	id := s.Press(t, post, "allow", "U1")
	var press struct {
		EnvelopeID string `json:"envelope_id"`
		Type       string `json:"type"`
		Payload    struct {
			Type    string `json:"type"`
			Actions []struct {
				ActionID string `json:"action_id"`
				BlockID  string `json:"block_id"`
				Value    string `json:"value"`
			} `json:"actions"`
			Container struct {
				MessageTS string `json:"message_ts"`
				ThreadTS  string `json:"thread_ts"`
			} `json:"container"`
		} `json:"payload"`
	}
	_ = ws.SetReadDeadline(time.Now().Add(fakekit.DefaultWaitLimit))
	if err := ws.ReadJSON(&press); err != nil {
		t.Fatal(err)
	}
	if press.EnvelopeID != id || press.Type != "interactive" || press.Payload.Type != "block_actions" ||
		len(press.Payload.Actions) != 1 || press.Payload.Actions[0].Value != "req-1" || press.Payload.Actions[0].BlockID != "perm" ||
		press.Payload.Container.MessageTS != post.TS || press.Payload.Container.ThreadTS != "1700000001.000001" {
		t.Errorf("press = %+v", press)
	}
}

func TestFileDownloadNeedsTheToken(t *testing.T) {
	s := New(t)
	f := s.AddFile("F1", "notes.txt", "text/plain", "hello")
	get := func(auth string) (string, string) {
		req, _ := http.NewRequest(http.MethodGet, f.URL, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.Header.Get("Content-Type"), string(b)
	}
	if ct, body := get("Bearer " + BotToken); body != "hello" || ct != "application/octet-stream" {
		t.Errorf("with the token: %s %q", ct, body)
	}
	if ct, _ := get(""); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("without the token: %s, want the sign-in page", ct)
	}
	if d := s.Downloads(); len(d) != 2 || d[0] != "Bearer "+BotToken || d[1] != "" {
		t.Errorf("downloads = %q", d)
	}
}

func TestOverride(t *testing.T) {
	s := New(t)
	s.Override("chat.postMessage", 200, map[string]any{"ok": false, "error": "is_archived"})
	_, _, err := client(s).PostMessageContext(context.Background(), "C1", slack.MsgOptionText("x", false))
	if got := slackErr(err); got != "is_archived" {
		t.Errorf("overridden post = %q", got)
	}
	if c := s.Calls("chat.postMessage"); len(c) != 1 || c[0].Error != "is_archived" || len(s.Posts()) != 0 {
		t.Errorf("calls %+v, posts %+v", c, s.Posts())
	}
}

// What Slack acts on depends on where text stands: control sequences
// everywhere, "@name" words only where Slack looks for names (link_names,
// or mrkdwn block text without verbatim).
func TestPings(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	section := func(text string, verbatim bool) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, verbatim), nil, nil))
	}
	names := "@channel @here hi @alice, mail a@b.c"
	tests := []struct {
		name string
		opts []slack.MsgOption
		want string // the pings, joined by spaces
	}{
		{"control sequences in text", []slack.MsgOption{slack.MsgOptionText("<!here> <@U1> <#C1|general> <!subteam^S1|@team> &lt;!channel&gt;", false)},
			"<!here> <@U1> <#C1|general> <!subteam^S1|@team>"},
		{"names in text without link_names", []slack.MsgOption{slack.MsgOptionText(names, false), slack.MsgOptionLinkNames(false)}, ""},
		{"names in text with link_names", []slack.MsgOption{slack.MsgOptionText(names, false), slack.MsgOptionLinkNames(true)}, "@channel @here @alice"},
		{"names in verbatim mrkdwn", []slack.MsgOption{section(names, true)}, ""},
		{"names in mrkdwn that is not verbatim", []slack.MsgOption{section(names, false)}, "@channel @here @alice"},
		{"control sequences in verbatim mrkdwn", []slack.MsgOption{section("<!channel> `<@U2>`", true)}, "<!channel> <@U2>"},
		{"context and fields", []slack.MsgOption{slack.MsgOptionBlocks(
			slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, "<@U3>", false, true)),
			slack.NewSectionBlock(nil, []*slack.TextBlockObject{slack.NewTextBlockObject(slack.MarkdownType, "@here", false, false)}, nil))},
			"<@U3> @here"},
		{"plain_text and buttons make none", []slack.MsgOption{slack.MsgOptionBlocks(
			slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, "<!channel> @here", false, false)),
			slack.NewActionBlock("", slack.NewButtonBlockElement("a", "<!here>", slack.NewTextBlockObject(slack.PlainTextType, "@here", false, false))))},
			""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts, err := api.PostMessageContext(ctx, "C1", tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, tt.opts...); err != nil {
				t.Fatal(err)
			}
			post, update := s.Calls("chat.postMessage")[i], s.Calls("chat.update")[i]
			for _, c := range []Call{post, update} {
				if got := strings.Join(c.Pings, " "); got != tt.want {
					t.Errorf("%s pings %q, want %q", c.Method, got, tt.want)
				}
			}
		})
	}
	// A refused post is reported too: what it would have done.
	_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("<!everyone> "+strings.Repeat("x", 40001), false))
	if c := s.Calls("chat.postMessage"); slackErr(err) != "msg_too_long" || strings.Join(c[len(c)-1].Pings, " ") != "<!everyone>" {
		t.Errorf("refused post: %v, pings %q", err, c[len(c)-1].Pings)
	}
}

// errorsTB records a test's Errorf calls instead of failing it.
type errorsTB struct {
	testing.TB
	errs []string
}

func (e *errorsTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}

// TestDeliverRefusesATSTaken: a message delivered with the ts of a post
// the fake already stamped would turn that post into the message's thread
// root, and its thread would read as another's; Deliver says so. The
// same message delivered again (a retry made by hand) is no clash.
func TestDeliverRefusesATSTaken(t *testing.T) {
	s := New(t)
	dial(t, s)
	s.WaitConn(t, 1)
	s.Deliver(t, MsgEvent("C1", "1700000001.000100", "U1", "root", nil))
	_, post, err := client(s).PostMessage("C1", slack.MsgOptionText("reply", false), slack.MsgOptionTS("1700000001.000100"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		ts    string
		clash bool
	}{
		{"the same message again", "1700000001.000100", false},
		{"a new ts", "1700000002.000100", false},
		{"the ts of the bot's post", post, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &errorsTB{TB: t}
			s.Deliver(rec, MsgEvent("C1", tt.ts, "U1", "hi", nil))
			if got := len(rec.errs) > 0; got != tt.clash {
				t.Errorf("Deliver with ts %s: errors %q, want a clash: %v", tt.ts, rec.errs, tt.clash)
			}
		})
	}
}
