package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"ok", Config{Name: "tg", Token: "1:abc"}, ""},
		{"no name", Config{Token: "1:abc"}, "name is required"},
		{"no token", Config{Name: "tg"}, "token is required"},
		{"bad token", Config{Name: "tg", Token: "abc"}, "does not look like"},
		{"bad url", Config{Name: "tg", Token: "1:abc", APIURL: "ftp://x"}, "api_url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, nil)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "abc") {
				t.Fatalf("error leaks the token: %v", err)
			}
		})
	}
}

func TestRouting(t *testing.T) {
	private := map[string]any{"id": 42, "type": "private"}
	group := map[string]any{"id": -100, "type": "group"}
	forum := map[string]any{"id": -1001, "type": "supergroup", "is_forum": true}
	alice := user(7, "alice", false)
	botMsg := map[string]any{"message_id": 50, "date": 1, "chat": group, "from": user(999, "cc_bot", true), "text": "earlier answer"}

	tests := []struct {
		name string
		msg  map[string]any
		want *platform.Message // nil: filtered out
	}{
		{
			name: "private chat",
			msg:  map[string]any{"message_id": 1, "date": 1, "chat": private, "from": alice, "text": "hello"},
			want: &platform.Message{ID: "42:1", Target: platform.Target{Channel: "42", MessageID: "1"}, Text: "hello", IsDM: true, UserID: "7", UserName: "alice"},
		},
		{
			name: "group mention stripped",
			msg: map[string]any{"message_id": 2, "date": 1, "chat": group, "from": alice, "text": "@cc_bot run the tests",
				"entities": []map[string]any{{"type": "mention", "offset": 0, "length": 7}}},
			want: &platform.Message{ID: "-100:2", Target: platform.Target{Channel: "-100", MessageID: "2"}, Text: "run the tests", Mentioned: true, UserID: "7", UserName: "alice"},
		},
		{
			name: "mention after emoji uses UTF-16 offsets",
			msg: map[string]any{"message_id": 3, "date": 1, "chat": group, "from": alice, "text": "🚀 @cc_bot go",
				"entities": []map[string]any{{"type": "mention", "offset": 3, "length": 7}}},
			want: &platform.Message{ID: "-100:3", Target: platform.Target{Channel: "-100", MessageID: "3"}, Text: "🚀 go", Mentioned: true, UserID: "7", UserName: "alice"},
		},
		{
			name: "group without mention",
			msg:  map[string]any{"message_id": 4, "date": 1, "chat": group, "from": alice, "text": "just chatting"},
			want: &platform.Message{ID: "-100:4", Target: platform.Target{Channel: "-100", MessageID: "4"}, Text: "just chatting", UserID: "7", UserName: "alice"},
		},
		{
			name: "reply to the bot",
			msg:  map[string]any{"message_id": 5, "date": 1, "chat": group, "from": alice, "text": "and then?", "reply_to_message": botMsg},
			want: &platform.Message{ID: "-100:5", Target: platform.Target{Channel: "-100", MessageID: "5"}, Text: "and then?", Mentioned: true, UserID: "7", UserName: "alice"},
		},
		{
			name: "command for the bot",
			msg: map[string]any{"message_id": 6, "date": 1, "chat": group, "from": alice, "text": "/status@cc_bot",
				"entities": []map[string]any{{"type": "bot_command", "offset": 0, "length": 14}}},
			want: &platform.Message{ID: "-100:6", Target: platform.Target{Channel: "-100", MessageID: "6"}, Text: "/status", Mentioned: true, UserID: "7", UserName: "alice"},
		},
		{
			name: "command for another bot",
			msg: map[string]any{"message_id": 7, "date": 1, "chat": group, "from": alice, "text": "/status@other_bot",
				"entities": []map[string]any{{"type": "bot_command", "offset": 0, "length": 17}}},
		},
		{
			name: "forum topic is its own thread",
			msg: map[string]any{"message_id": 8, "date": 1, "chat": forum, "from": alice, "text": "in a topic",
				"message_thread_id": 77, "is_topic_message": true,
				"reply_to_message": map[string]any{"message_id": 77, "date": 1, "chat": forum, "from": user(999, "cc_bot", true)}},
			want: &platform.Message{ID: "-1001:8", Target: platform.Target{Channel: "-1001", Thread: "77", MessageID: "8"}, Text: "in a topic", UserID: "7", UserName: "alice"},
		},
		{
			name: "other bot ignored",
			msg:  map[string]any{"message_id": 9, "date": 1, "chat": group, "from": user(5, "spam_bot", true), "text": "beep"},
		},
		{
			name: "own message ignored",
			msg:  map[string]any{"message_id": 10, "date": 1, "chat": group, "from": user(999, "cc_bot", true), "text": "mine"},
		},
		{
			name: "service message ignored",
			msg:  map[string]any{"message_id": 11, "date": 1, "chat": group, "from": alice, "new_chat_members": []any{user(8, "bob", false)}},
		},
		{
			name: "user without username",
			msg:  map[string]any{"message_id": 12, "date": 1, "chat": private, "from": map[string]any{"id": 8, "is_bot": false, "first_name": "Bob", "last_name": "Builder"}, "text": "hi"},
			want: &platform.Message{ID: "42:12", Target: platform.Target{Channel: "42", MessageID: "12"}, Text: "hi", IsDM: true, UserID: "8", UserName: "Bob Builder"},
		},
	}

	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	var batch []string
	for i, tt := range tests {
		batch = append(batch, update(1000+i, tt.msg))
	}
	// A sentinel after the table proves every filtered message was seen.
	batch = append(batch, update(2000, map[string]any{"message_id": 999, "date": 1, "chat": private, "from": alice, "text": "sentinel"}))
	f.Feed(batch...)
	runAdapter(t, a, h)

	// Chats are handled side by side: the messages are matched by id.
	wanted := 1 // the sentinel
	for _, tt := range tests {
		if tt.want != nil {
			wanted++
		}
	}
	byID := map[string]platform.Message{}
	for range wanted {
		m := h.Message(t)
		byID[m.ID] = m
	}
	for _, tt := range tests {
		if tt.want == nil {
			continue
		}
		w := *tt.want
		got := byID[w.ID]
		w.Target.Platform = "tg-test"
		w.Received = time.Unix(1, 0)
		if got.ID != w.ID || got.Target != w.Target || got.Text != w.Text || got.IsDM != w.IsDM ||
			got.Mentioned != w.Mentioned || got.UserID != w.UserID || got.UserName != w.UserName ||
			got.IsBot || !got.Received.Equal(w.Received) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, w)
		}
	}
	if got := byID["42:999"]; got.Text != "sentinel" {
		t.Fatalf("the sentinel did not come among the first %d messages: a filtered message reached the handler (%v)", wanted, byID)
	}
	// The offset acknowledges everything handled, once it was handed over:
	// after that a filtered message would be waiting in h.Msgs.
	for {
		c := f.Next(t, "getUpdates")
		if c.Form.Get("offset") == "2001" {
			break
		}
	}
	if len(h.Msgs) != 0 {
		t.Fatalf("a filtered message reached the handler: %+v", <-h.Msgs)
	}
}

// TestDuplicateUpdatesKeepTheirID: an update delivered again reaches the
// engine with the same message id, which its one duplicate check catches.
func TestDuplicateUpdatesKeepTheirID(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	chat := map[string]any{"id": 42, "type": "private"}
	u := update(5, map[string]any{"message_id": 1, "date": 1, "chat": chat, "from": user(7, "alice", false), "text": "once"})
	f.Feed(u, u)
	f.Feed(u)
	f.Feed(update(6, map[string]any{"message_id": 2, "date": 1, "chat": chat, "from": user(7, "alice", false), "text": "next"}))
	runAdapter(t, a, h)
	first := h.Message(t)
	if first.Text != "once" || first.ID != "42:1" {
		t.Fatalf("first message = %+v", first)
	}
	for {
		m := h.Message(t)
		if m.Text == "next" {
			break
		}
		if m.ID != first.ID {
			t.Fatalf("a copy of the update came with id %q, want %q", m.ID, first.ID)
		}
	}
}

func TestSendSplitsIntoTopic(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	var b strings.Builder
	b.WriteString("Here is **the** code:\n\n```go\n")
	for b.Len() < 9000 {
		b.WriteString("fmt.Println(\"a < b && c > d\")\n")
	}
	b.WriteString("```\nDone.")
	to := platform.Target{Platform: "tg-test", Channel: "-1001", Thread: "77"}
	got, err := a.Send(context.Background(), to, b.String())
	if err != nil {
		t.Fatal(err)
	}
	nparts := len(splitForTelegram(b.String()))
	if nparts < 3 {
		t.Fatalf("only %d parts", nparts)
	}
	var texts []string
	for len(texts) < nparts {
		c := f.Next(t, "sendMessage")
		if c.Form.Get("message_thread_id") != "77" || c.Form.Get("chat_id") != "-1001" || c.Form.Get("parse_mode") != "HTML" {
			t.Fatalf("part sent with %v", c.Form)
		}
		texts = append(texts, c.Form.Get("text"))
	}
	for i, tx := range texts {
		// Telegram's limit applies to the text after entity parsing.
		visible := html.UnescapeString(tagRE.ReplaceAllString(tx, ""))
		if n := len(utf16.Encode([]rune(visible))); n > messageLimit {
			t.Errorf("part %d is %d long", i, n)
		}
		if strings.Count(tx, "<pre") != 1 || strings.Count(tx, "</pre>") != 1 {
			t.Errorf("part %d has unbalanced pre: %q", i, tx[:100])
		}
		if i > 0 && !strings.HasPrefix(tx, `<pre><code class="language-go">`) {
			t.Errorf("part %d does not reopen the code block: %q", i, tx[:60])
		}
		if strings.Contains(tx, " < b") {
			t.Errorf("part %d is not escaped", i)
		}
	}
	if !strings.HasPrefix(texts[0], "Here is <b>the</b> code:") || !strings.HasSuffix(texts[nparts-1], "Done.") {
		t.Errorf("unexpected first/last parts: %q ... %q", texts[0][:40], texts[nparts-1])
	}
	if got.MessageID != strconv.Itoa(100+nparts) || got.Thread != "77" || got.Channel != "-1001" {
		t.Errorf("Send returned %+v, want the last part (103) in the topic", got)
	}
}

func TestSendFallsBackToPlainText(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	f.Override("sendMessage", faketelegram.Answer{Status: 400, Body: `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: unsupported start tag"}`})
	if _, err := a.Send(context.Background(), platform.Target{Channel: "42"}, "a **b** <c>"); err != nil {
		t.Fatal(err)
	}
	first, second := f.Next(t, "sendMessage"), f.Next(t, "sendMessage")
	if first.Form.Get("parse_mode") != "HTML" {
		t.Fatalf("first try not HTML: %v", first.Form)
	}
	if second.Form.Get("parse_mode") != "" || second.Form.Get("text") != "a **b** <c>" {
		t.Fatalf("fallback = %v, want the plain text without parse_mode", second.Form)
	}
}

func TestFloodControlWaitsRetryAfter(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	a.api.retryAfterUnit = 20 * time.Millisecond
	f.Override("sendMessage", faketelegram.Answer{Status: 429, Body: `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`})
	start := time.Now()
	got, err := a.Send(context.Background(), platform.Target{Channel: "42"}, "hello")
	if err != nil {
		t.Fatal(err)
	}
	f.Next(t, "sendMessage")
	f.Next(t, "sendMessage")
	if waited := time.Since(start); waited < 60*time.Millisecond {
		t.Errorf("retried after %v, before retry_after (3 units of 20ms)", waited)
	}
	if got.MessageID == "" {
		t.Error("no message id after retry")
	}

	// A cancelled context ends the wait instead of blocking.
	f.Override("sendMessage", faketelegram.Answer{Status: 429, Body: `{"ok":false,"error_code":429,"description":"Too Many Requests","parameters":{"retry_after":3600}}`})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Send(ctx, platform.Target{Channel: "42"}, "x"); errc <- err }()
	f.Next(t, "sendMessage")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send during flood wait after cancel = %v", err)
	}
}

func TestConflictIsReported(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	f.Override("getUpdates", faketelegram.Answer{Status: 409, Body: `{"ok":false,"error_code":409,"description":"Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}`})
	h := platformtest.NewHandler()
	runAdapter(t, a, h)
	f.Next(t, "getUpdates") // the refused poll
	f.Next(t, "getUpdates") // the retry, after the status was set
	if s := a.Status(); s.State != platform.Failing || !strings.Contains(s.Detail, "another process is polling this bot token") {
		t.Fatalf("status = %q", s)
	}
	// Once the other poller is gone, polling recovers.
	f.Feed(update(1, map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": 42, "type": "private"}, "from": user(7, "alice", false), "text": "back"}))
	if m := h.Message(t); m.Text != "back" {
		t.Fatalf("got %q", m.Text)
	}
	f.Next(t, "getUpdates")
	if s := a.Status(); s.State != platform.Connected {
		t.Fatalf("status after recovery = %q", s)
	}
}

func TestUnauthorizedEndsRun(t *testing.T) {
	f := faketelegram.New(t)
	cfg := Config{Name: "tg", Token: "42:wrong-secret", APIURL: f.URL()}
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), platformtest.NewHandler())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Run = %v, want ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(a.Status().String(), "wrong-secret") {
		t.Fatalf("token leaked: %v / %s", err, a.Status())
	}
}

func TestRevokedTokenEndsRun(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	f.Override("getUpdates", faketelegram.Answer{Status: 401, Body: `{"ok":false,"error_code":401,"description":"Unauthorized"}`})
	err := a.Run(context.Background(), platformtest.NewHandler())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Run = %v, want ErrUnauthorized", err)
	}
	if s := a.Status(); s.State != platform.BadCredentials {
		t.Fatalf("status = %v", s)
	}
}

func TestSendFollowsGroupMigration(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	f.Migrate(-100, -1009)
	got, err := a.Send(context.Background(), platform.Target{Channel: "-100"}, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Next(t, "sendMessage"); c.Form.Get("chat_id") != "-100" {
		t.Fatalf("first try to %v", c.Form.Get("chat_id"))
	}
	if c := f.Next(t, "sendMessage"); c.Form.Get("chat_id") != "-1009" {
		t.Fatalf("retry to %v, want the supergroup", c.Form.Get("chat_id"))
	}
	if got.Channel != "-1009" {
		t.Errorf("Send returned %+v, want the new chat", got)
	}
}

func TestTransportErrorsHideToken(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, nil)
	a.api.maxTransientRetries = 1
	f.Close()
	_, err := a.Send(context.Background(), platform.Target{Channel: "42"}, "hi")
	if err == nil {
		t.Fatal("send to a closed server succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatalf("error leaks the token: %v", err)
	}
}

func TestRunStopsOnCancel(t *testing.T) {
	f := faketelegram.New(t)
	a := newTestAdapter(t, f, func(c *Config) { c.PollTimeout = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platformtest.NewHandler()) }()
	f.Next(t, "getUpdates") // the long poll is open and would last an hour
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil on cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop while a long poll was open")
	}
	if s := a.Status(); s.State != platform.Stopped {
		t.Errorf("status = %v", s)
	}
}

func TestPermissionButtons(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runAdapter(t, a, h)
	f.Next(t, "getUpdates")

	longID := strings.Repeat("r", 80) // too long for callback_data: mapped to a short ref
	for _, reqID := range []string{"6088ef75-df8e-4e17-9492-87e166cd0d56", longID} {
		to := platform.Target{Platform: "tg-test", Channel: "-1001", Thread: "77"}
		posted, err := a.AskPermission(context.Background(), to, platform.PermissionPrompt{RequestID: reqID, Tool: "Bash", Text: "**Permission needed**: `Bash`\n```\nrm -rf <tmp>\n```"})
		if err != nil {
			t.Fatal(err)
		}
		c := f.Next(t, "sendMessage")
		if c.Form.Get("message_thread_id") != "77" || !strings.Contains(c.Form.Get("text"), "rm -rf &lt;tmp&gt;") {
			t.Fatalf("prompt sent as %v", c.Form)
		}
		var kb struct {
			InlineKeyboard [][]struct {
				Text         string `json:"text"`
				CallbackData string `json:"callback_data"`
			} `json:"inline_keyboard"`
		}
		if err := json.Unmarshal([]byte(c.Form.Get("reply_markup")), &kb); err != nil {
			t.Fatal(err)
		}
		if len(kb.InlineKeyboard) != 1 || len(kb.InlineKeyboard[0]) != 3 {
			t.Fatalf("keyboard = %+v", kb)
		}
		for _, btn := range kb.InlineKeyboard[0] {
			if len(btn.CallbackData) > maxCallbackData {
				t.Fatalf("callback_data %q too long", btn.CallbackData)
			}
		}
		msg, ok := f.Message(-1001, atoi(t, posted.MessageID))
		if !ok {
			t.Fatalf("no prompt message %s", posted.MessageID)
		}
		qid := f.Press(t, msg, kb.InlineKeyboard[0][1].Text, user(7, "alice", false))
		if ans := f.Next(t, "answerCallbackQuery"); ans.Form.Get("callback_query_id") != qid {
			t.Fatalf("answered %v", ans.Form)
		}
		var act platform.Action
		select {
		case act = <-h.Actions:
		case <-time.After(10 * time.Second):
			t.Fatal("no action")
		}
		want := platform.Action{ID: qid, Target: platform.Target{Platform: "tg-test", Channel: "-1001", Thread: "77", MessageID: posted.MessageID},
			UserID: "7", UserName: "alice", RequestID: reqID, Choice: platform.ChoiceAlwaysAllow}
		if act != want {
			t.Fatalf("action = %+v, want %+v", act, want)
		}

		if err := a.ResolvePermission(context.Background(), posted, "Always allowed by alice"); err != nil {
			t.Fatal(err)
		}
		e := f.Next(t, "editMessageText")
		if e.Form.Get("message_id") != posted.MessageID || e.Form.Get("reply_markup") != `{"inline_keyboard":[]}` ||
			!strings.Contains(e.Form.Get("text"), "Always allowed by alice") || !strings.Contains(e.Form.Get("text"), "Permission needed") {
			t.Fatalf("resolve edit = %v", e.Form)
		}
		if m, _ := f.Message(-1001, msg.MessageID); len(m.Edits) != 1 || !f.Answered(qid) {
			t.Errorf("the prompt after resolving = %+v (query answered: %v)", m, f.Answered(qid))
		}
	}
}

func TestTypingAndEdit(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	if err := a.Typing(ctx, platform.Target{Channel: "-1001", Thread: "77"}); err != nil {
		t.Fatal(err)
	}
	c := f.Next(t, "sendChatAction")
	if c.Form.Get("action") != "typing" || c.Form.Get("message_thread_id") != "77" {
		t.Fatalf("typing = %v", c.Form)
	}
	posted, err := a.Send(ctx, platform.Target{Channel: "42"}, "Starting")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, platform.Target{Channel: "42", MessageID: "42:" + posted.MessageID}, "Running: `go test`"); err != nil {
		t.Fatal(err)
	}
	e := f.Next(t, "editMessageText")
	if e.Form.Get("message_id") != posted.MessageID || e.Form.Get("text") != "Running: <code>go test</code>" {
		t.Fatalf("edit = %v", e.Form)
	}
	if m, _ := f.Message(42, atoi(t, posted.MessageID)); m.Text != "Running: go test" || len(m.Edits) != 1 {
		t.Errorf("message after the edit = %+v", m)
	}
	// Telegram refuses an edit that changes nothing; that is no error.
	if err := a.Edit(ctx, posted, "Running: `go test`"); err != nil {
		t.Fatalf("unchanged edit = %v, want nil", err)
	}
	if c := f.Calls("editMessageText"); len(c) != 2 {
		t.Errorf("%d edits sent, want the unchanged one tried", len(c))
	}
}

func TestAttachmentOpen(t *testing.T) {
	f := faketelegram.New(t)
	f.AddFile("F1", "documents/file_1.txt", "hello")
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	f.Feed(update(1, map[string]any{"message_id": 1, "date": 1, "chat": map[string]any{"id": 42, "type": "private"},
		"from": user(7, "alice", false), "caption": "look",
		"document": map[string]any{"file_id": "F1", "file_unique_id": "u1", "file_name": "notes.txt", "mime_type": "text/plain", "file_size": 5}}))
	runAdapter(t, a, h)
	m := h.Message(t)
	if m.Text != "look" || len(m.Attachments) != 1 {
		t.Fatalf("message = %+v", m)
	}
	att := m.Attachments[0]
	if att.Name != "notes.txt" || att.Size != 5 || att.Mime != "text/plain" {
		t.Fatalf("attachment = %+v", att)
	}
	rc, err := att.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body, _ := io.ReadAll(rc)
	if string(body) != "hello" {
		t.Fatalf("content = %q", body)
	}
	if c := f.Next(t, "getFile"); c.Form.Get("file_id") != "F1" {
		t.Fatalf("getFile = %v", c.Form)
	}
	// A replay after a restart fetches it again from its Ref (the
	// file_id, never the URL with the token) alone.
	if att.Ref != "F1" {
		t.Fatalf("Ref = %q, want the file_id", att.Ref)
	}
	rc2, err := a.OpenAttachment(context.Background(), platform.Attachment{Name: att.Name, Ref: att.Ref})
	if err != nil {
		t.Fatal(err)
	}
	defer rc2.Close()
	if body, _ := io.ReadAll(rc2); string(body) != "hello" {
		t.Fatalf("content again = %q", body)
	}
}

var tagRE = regexp.MustCompile(`<[^>]+>`)

func TestReactionsReplaceEachOther(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	msg := platform.Target{Channel: "42", MessageID: "42:7"}
	f.Send(map[string]any{"message_id": 7, "chat": map[string]any{"id": 42, "type": "private"}, "from": user(7, "alice", false), "text": "hi"})
	reaction := func() string {
		t.Helper()
		c := f.Next(t, "setMessageReaction")
		if c.Form.Get("chat_id") != "42" || c.Form.Get("message_id") != "7" {
			t.Fatalf("reaction on %v", c.Form)
		}
		return c.Form.Get("reaction")
	}
	if err := a.React(ctx, msg, "eyes"); err != nil {
		t.Fatal(err)
	}
	if r := reaction(); r != `[{"emoji":"👀","type":"emoji"}]` {
		t.Fatalf("reaction = %s", r)
	}
	if err := a.React(ctx, msg, "white_check_mark"); err != nil {
		t.Fatal(err)
	}
	if r := reaction(); r != `[{"emoji":"👍","type":"emoji"}]` {
		t.Fatalf("reaction = %s", r)
	}
	// 👀 was replaced by 👍: removing it must leave 👍 alone.
	if err := a.Unreact(ctx, msg, "eyes"); err != nil {
		t.Fatal(err)
	}
	if err := a.Unreact(ctx, msg, "white_check_mark"); err != nil {
		t.Fatal(err)
	}
	if r := reaction(); r != "[]" {
		t.Fatalf("unreact sent %s, want the one held reaction cleared", r)
	}
	if err := a.React(ctx, msg, "no_such_reaction"); err == nil {
		t.Fatal("an unknown reaction was accepted")
	}
}
