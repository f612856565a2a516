package faketelegram

import (
	"errors"
	"fmt"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// The standing limit refuses an edit in a chat sooner than its kind
// allows, with Telegram's 429 and a whole-second retry_after, changes
// nothing, and keeps chats apart.
func TestEditLimitByKindOfChat(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: 42, Type: "private"})
	s.AddChat(Chat{ID: -100, Type: "supergroup"})
	s.AddChat(Chat{ID: 43, Type: "private"})
	b := bot(t, s)
	ids := map[int64]int{}
	for _, chat := range []int64{42, -100, 43} {
		m, err := b.Send(tgbotapi.NewMessage(chat, "start"))
		if err != nil {
			t.Fatal(err)
		}
		ids[chat] = m.MessageID
	}
	s.SetEditLimit(time.Hour, 3*time.Hour)
	edit := func(chat int64, text string) error {
		_, err := b.Send(tgbotapi.NewEditMessageText(chat, ids[chat], text))
		return err
	}
	tests := []struct {
		chat      int64
		text      string
		wantRetry int // 0: accepted
	}{
		{42, "one", 0},
		{42, "two", 3600},
		{-100, "one", 0},
		{-100, "two", 3 * 3600},
		{43, "other chat", 0},
	}
	for _, tt := range tests {
		err := edit(tt.chat, tt.text)
		var te *tgbotapi.Error
		switch {
		case tt.wantRetry == 0 && err != nil:
			t.Errorf("edit %q in %d: %v", tt.text, tt.chat, err)
		case tt.wantRetry != 0 && (!errors.As(err, &te) || te.Code != 429 || te.RetryAfter != tt.wantRetry ||
			te.Message != fmt.Sprintf("Too Many Requests: retry after %d", tt.wantRetry)):
			t.Errorf("edit %q in %d = %v, want 429 retry after %d", tt.text, tt.chat, err, tt.wantRetry)
		}
	}
	if got, _ := s.Message(42, ids[42]); got.Text != "one" {
		t.Errorf("a refused edit changed the message to %q", got.Text)
	}
	if n := s.FloodRefused("editMessageText"); n != 2 {
		t.Errorf("FloodRefused = %d, want 2", n)
	}
	s.SetEditLimit(0, 0)
	if err := edit(42, "free"); err != nil {
		t.Errorf("an edit with the limit lifted: %v", err)
	}
}

func TestDeleteMessage(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: 42, Type: "private"})
	b := bot(t, s)
	m, err := b.Send(tgbotapi.NewMessage(42, "gone soon"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Request(tgbotapi.NewDeleteMessage(42, m.MessageID)); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Message(42, m.MessageID); !got.Deleted {
		t.Errorf("not marked deleted: %+v", got)
	}
	if _, err := b.Request(tgbotapi.NewDeleteMessage(42, m.MessageID)); description(err) != "Bad Request: message to delete not found" {
		t.Errorf("second delete = %v", err)
	}
	if _, err := b.Send(tgbotapi.NewEditMessageText(42, m.MessageID, "x")); description(err) != "Bad Request: message to edit not found" {
		t.Errorf("edit of a deleted message = %v", err)
	}
	user := s.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": User(7, "ann", false), "text": "mine"})
	if _, err := b.Request(tgbotapi.NewDeleteMessage(42, user)); description(err) != "Bad Request: message can't be deleted" {
		t.Errorf("deleting a user's message = %v", err)
	}
}
