package faketelegram

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func bot(t *testing.T, s *Server) *tgbotapi.BotAPI {
	t.Helper()
	b, err := tgbotapi.NewBotAPIWithAPIEndpoint(Token, s.URL()+"/bot%s/%s")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// description is Telegram's description of a refusal.
func description(err error) string {
	var e *tgbotapi.Error
	if errors.As(err, &e) {
		return e.Message
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestSendLimitsAndHTML(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: 42, Type: "private"})
	b := bot(t, s)
	tests := []struct {
		name, text, mode string
		want             string // "" = sent
		visible          string
	}{
		{"4,096 characters", strings.Repeat("a", 4096), "", "", ""},
		{"4,097 characters", strings.Repeat("a", 4097), "", "Bad Request: message is too long", ""},
		{"2,049 emoji are 4,098 UTF-16 units", strings.Repeat("😀", 2049), "", "Bad Request: message is too long", ""},
		{"tags do not count", "<b>" + strings.Repeat("a", 4096) + "</b>", "HTML", "", ""},
		{"entities count once", strings.Repeat("&lt;", 4096), "HTML", "", ""},
		{"nested code", `<pre><code class="language-go">a &lt; b</code></pre> and <i>x</i>`, "HTML", "", "a < b and x"},
		{"unsupported tag", "a <div>b</div>", "HTML", `Bad Request: can't parse entities: Unsupported start tag "div" at byte offset 2`, ""},
		{"unclosed tag", "<b>bold", "HTML", `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`, ""},
		{"crossed tags", "<b><i>x</b></i>", "HTML", `Bad Request: can't parse entities: Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`, ""},
		{"bare less-than", "a < b", "HTML", `Bad Request: can't parse entities: Unsupported start tag "" at byte offset 2`, ""},
		{"the same text as plain text", "a < b", "", "", "a < b"},
		{"empty", "  ", "", "Bad Request: message text is empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := tgbotapi.NewMessage(42, tt.text)
			m.ParseMode = tt.mode
			sent, err := b.Send(m)
			if got := description(err); got != tt.want {
				t.Fatalf("send error %q, want %q", got, tt.want)
			}
			if tt.want == "" && tt.visible != "" {
				if got, _ := s.Message(42, sent.MessageID); got.Text != tt.visible {
					t.Errorf("visible text %q, want %q", got.Text, tt.visible)
				}
			}
		})
	}
	if _, err := b.Send(tgbotapi.NewMessage(7, "x")); description(err) != "Bad Request: chat not found" {
		t.Errorf("send to an unknown chat = %v", err)
	}
}

func TestEditsReactionsAndKeyboards(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: 42, Type: "private"})
	b := bot(t, s)
	m := tgbotapi.NewMessage(42, "allow?")
	m.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Allow", strings.Repeat("d", 64))))
	sent, err := b.Send(m)
	if err != nil {
		t.Fatal(err)
	}
	tooLong := tgbotapi.NewMessage(42, "x")
	tooLong.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Allow", strings.Repeat("d", 65))))
	if _, err := b.Send(tooLong); description(err) != "Bad Request: BUTTON_DATA_INVALID" {
		t.Errorf("65 bytes of callback_data = %v", err)
	}
	edit := tgbotapi.NewEditMessageText(42, sent.MessageID, "allowed")
	if _, err := b.Send(edit); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Send(edit); !strings.HasPrefix(description(err), "Bad Request: message is not modified") {
		t.Errorf("the same edit again = %v", err)
	}
	if _, err := b.Send(tgbotapi.NewEditMessageText(42, 9999, "x")); description(err) != "Bad Request: message to edit not found" {
		t.Errorf("edit of a missing message = %v", err)
	}
	react := func(emoji string) error {
		_, err := b.MakeRequest("setMessageReaction", tgbotapi.Params{"chat_id": "42", "message_id": "101",
			"reaction": `[{"type":"emoji","emoji":"` + emoji + `"}]`})
		return err
	}
	if err := react("👀"); err != nil {
		t.Fatal(err)
	}
	if err := react("✅"); description(err) != "Bad Request: REACTION_INVALID" {
		t.Errorf("✅ = %v, want REACTION_INVALID (not in Telegram's set)", err)
	}
	got, _ := s.Message(42, sent.MessageID)
	if got.Text != "allowed" || len(got.Edits) != 1 || len(got.Reactions) != 1 || got.Reactions[0] != "👀" {
		t.Errorf("message = %+v", got)
	}
}

func TestPollsOffsetsConflictAndFlood(t *testing.T) {
	s := New(t)
	b := bot(t, s)
	alice := User(7, "alice", false)
	id := s.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": alice, "text": "hi"})
	ups, err := b.GetUpdates(tgbotapi.UpdateConfig{Timeout: 5})
	if err != nil || len(ups) != 1 || ups[0].Message.MessageID != id || ups[0].Message.Text != "hi" {
		t.Fatalf("updates = %+v, %v", ups, err)
	}
	// The offset confirms it: the next poll waits for new updates.
	next := make(chan []tgbotapi.Update, 1)
	go func() {
		ups, _ := b.GetUpdates(tgbotapi.UpdateConfig{Offset: ups[0].UpdateID + 1, Timeout: 10})
		next <- ups
	}()
	s.Wait(t, "the second poll", func() bool { return len(s.Calls("getUpdates")) >= 2 })
	s.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": alice, "text": "again"})
	if ups := <-next; len(ups) != 1 || ups[0].Message.Text != "again" {
		t.Fatalf("second poll = %+v", ups)
	}

	// A second poller ends the first with 409.
	var wg sync.WaitGroup
	var first error
	wg.Go(func() { _, first = b.GetUpdates(tgbotapi.UpdateConfig{Offset: 99999, Timeout: 10}) })
	s.Wait(t, "the first poller", func() bool { return len(s.Calls("getUpdates")) >= 3 })
	go func() { _, _ = b.GetUpdates(tgbotapi.UpdateConfig{Offset: 99999, Timeout: 1}) }()
	wg.Wait()
	if !strings.HasPrefix(description(first), "Conflict: terminated by other getUpdates request") {
		t.Errorf("first poller = %v", first)
	}

	s.FloodWait("sendMessage", 3)
	s.AddChat(Chat{ID: 42, Type: "private"})
	_, err = b.Send(tgbotapi.NewMessage(42, "x"))
	var e *tgbotapi.Error
	if !errors.As(err, &e) || e.Code != 429 || e.RetryAfter != 3 {
		t.Errorf("flood wait = %v", err)
	}
}

func TestCallbackQueriesAndFiles(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: -1001, Type: "supergroup", IsForum: true})
	b := bot(t, s)
	m := tgbotapi.NewMessage(-1001, "allow?")
	m.ReplyMarkup = tgbotapi.NewInlineKeyboardMarkup(tgbotapi.NewInlineKeyboardRow(
		tgbotapi.NewInlineKeyboardButtonData("Allow", "a:1"), tgbotapi.NewInlineKeyboardButtonData("Deny", "d:1")))
	sent, err := b.Send(m)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := s.Message(-1001, sent.MessageID)
	qid := s.Press(t, msg, "Deny", User(7, "alice", false))
	ups, err := b.GetUpdates(tgbotapi.UpdateConfig{Timeout: 5})
	if err != nil || len(ups) != 1 || ups[0].CallbackQuery == nil {
		t.Fatalf("updates = %+v, %v", ups, err)
	}
	cq := ups[0].CallbackQuery
	if cq.ID != qid || cq.Data != "d:1" || cq.From.ID != 7 || cq.Message.MessageID != sent.MessageID {
		t.Errorf("callback query = %+v", cq)
	}
	if _, err := b.Request(tgbotapi.NewCallback(qid, "")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Request(tgbotapi.NewCallback(qid, "")); !strings.Contains(description(err), "query is too old") {
		t.Errorf("second answer = %v", err)
	}
	if !s.Answered(qid) {
		t.Error("the query is not answered")
	}

	s.AddFile("F1", "documents/file_1.txt", "hello")
	f, err := b.GetFile(tgbotapi.FileConfig{FileID: "F1"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(s.URL() + "/file/bot" + Token + "/" + f.FilePath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "hello" {
		t.Errorf("file = %q", body)
	}
	if _, err := b.GetFile(tgbotapi.FileConfig{FileID: "nope"}); description(err) != "Bad Request: invalid file_id" {
		t.Errorf("unknown file = %v", err)
	}
}

// Telegram decodes every numeric character reference and four named ones;
// it finds @usernames in any text but code, and a tg://user link is a text
// mention.
func TestParse(t *testing.T) {
	tests := []struct {
		name, text, mode string
		shown            string
		mentions         string // joined by spaces
	}{
		{"plain mention", "ask @alice, or @bob_2", "", "ask @alice, or @bob_2", "@alice @bob_2"},
		{"email is no mention", "a@b.co and @@x", "", "a@b.co and @@x", ""},
		{"plain text keeps tags", "<code>@alice</code>", "", "<code>@alice</code>", "@alice"},
		{"mention in bold", "<b>@alice</b> <i>x</i>", "HTML", "@alice x", "@alice"},
		{"mention in code", "<code>@alice</code> <pre><code class=\"language-sh\">npm i @types/node</code></pre>", "HTML", "@alice npm i @types/node", ""},
		{"mention split by a tag", "@<b>alice</b>", "HTML", "@alice", "@alice"},
		{"half in code", "@<code>alice</code>", "HTML", "@alice", ""},
		{"after code", "<code>x</code> @bob", "HTML", "x @bob", "@bob"},
		{"word joiner", "@\u2060alice", "HTML", "@\u2060alice", ""},
		{"entity makes an @", "&#64;alice &#x40;bob", "HTML", "@alice @bob", "@alice @bob"},
		{"text mention", `<a href="tg://user?id=42">Ann</a> <a href='TG://user?id=7'>B</a>`, "HTML", "Ann B", "tg://user?id=42 TG://user?id=7"},
		{"text mention with entities", `<a href="tg&#58;//user?id=42">Ann</a>`, "HTML", "Ann", "tg://user?id=42"},
		{"web link is none", `<a href="https://t.me/alice">alice</a>`, "HTML", "alice", ""},
		{"the four named entities", "&lt;&gt;&amp;&quot; &lt", "HTML", `<>&" <`, ""},
		{"other names stay", "&nbsp; &copy; AT&T &", "HTML", "&nbsp; &copy; AT&T &", ""},
		{"bad numbers stay", "&#0; &#xd800; &#1114112;", "HTML", "&#0; &#xd800; &#1114112;", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shown, mentions, err := Parse(tt.text, tt.mode)
			if err != nil {
				t.Fatal(err)
			}
			if shown != tt.shown || strings.Join(mentions, " ") != tt.mentions {
				t.Errorf("Parse(%q) = %q, mentions %q; want %q, %q", tt.text, shown, mentions, tt.shown, tt.mentions)
			}
		})
	}
	if _, _, err := Parse("<div>", "HTML"); err == nil || err.Error() != `can't parse entities: Unsupported start tag "div" at byte offset 0` {
		t.Errorf("Parse(<div>) error = %v", err)
	}
	if _, _, err := Parse("x", "MarkdownV3"); err == nil || err.Error() != "unsupported parse_mode" {
		t.Errorf("an unknown parse mode = %v", err)
	}
}

// The bot's messages and edits carry whom they notify.
func TestMentionsOfSentAndEdited(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: 42, Type: "private"})
	b := bot(t, s)
	m := tgbotapi.NewMessage(42, `hi @alice, <a href="tg://user?id=7">Bob</a>`)
	m.ParseMode = "HTML"
	sent, err := b.Send(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Message(42, sent.MessageID); strings.Join(got.Mentions, " ") != "tg://user?id=7 @alice" {
		t.Errorf("mentions = %q", got.Mentions)
	}
	if _, err := b.Send(tgbotapi.NewEditMessageText(42, sent.MessageID, "now <b>@bob</b>")); err != nil {
		t.Fatal(err)
	}
	// Without parse_mode the tags are text; the mention is still found.
	got, _ := s.Message(42, sent.MessageID)
	if len(got.Edits) != 1 || strings.Join(got.Edits[0].Mentions, " ") != "@bob" || strings.Join(got.Mentions, " ") != "@bob" {
		t.Errorf("after the edit: %+v", got)
	}
}
