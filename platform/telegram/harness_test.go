package telegram

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// newTestAdapter builds an adapter against f with fast retries.
func newTestAdapter(t *testing.T, f *faketelegram.Server, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{Name: "tg-test", Token: faketelegram.Token, APIURL: f.URL(), PollTimeout: 5 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a.api.retryAfterUnit = time.Millisecond
	a.api.backoffMin = time.Millisecond
	a.api.backoffMax = 5 * time.Millisecond
	a.api.requestTimeout = 10 * time.Second
	return a
}

// runAdapter runs a until the test ends and checks that Run returns nil.
func runAdapter(t *testing.T, a *Adapter, h platform.Handler) {
	t.Helper()
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
}

var (
	update = faketelegram.Update
	user   = faketelegram.User
)

// The chats the tests send to.
var (
	privateChat = faketelegram.Chat{ID: 42, Type: "private"}
	groupChat   = faketelegram.Chat{ID: -100, Type: "group"}
	forumChat   = faketelegram.Chat{ID: -1001, Type: "supergroup", IsForum: true}
)

func addChats(f *faketelegram.Server) {
	for _, c := range []faketelegram.Chat{privateChat, groupChat, forumChat} {
		f.AddChat(c)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
