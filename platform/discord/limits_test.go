package discord

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
)

// TestSendFitsDiscordsCount: Discord counts content in UTF-16 units, so a
// reply of emoji (two units each) must be cut by that count; the fake
// refuses any part over 2,000 with 50035.
func TestSendFitsDiscordsCount(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	text := strings.Repeat("😀", 1500) + "\n" + strings.Repeat("ü", 2500)
	if _, err := a.Send(context.Background(), platform.Target{Channel: "C1"}, text); err != nil {
		t.Fatalf("Send = %v", err)
	}
	var got strings.Builder
	for _, p := range f.Posts() {
		got.WriteString(p.Content)
	}
	if strings.Count(got.String(), "😀") != 1500 || strings.Count(got.String(), "ü") != 2500 {
		t.Errorf("the parts posted do not add up to the reply")
	}
	for _, c := range f.Calls() {
		if c.Status != 200 {
			t.Errorf("%s %s answered %d", c.Method, c.Path, c.Status)
		}
	}
}

// TestRateLimitEndsWithTheCaller: Discord's 429 names how long the route
// is closed (retry_after, and X-RateLimit-Reset-After for the bucket). A
// caller that stops waiting must leave nothing behind that makes the next
// caller wait past its own context: the library would otherwise sleep out
// the reset on the next request, holding the bucket, with no way to cancel.
func TestRateLimitEndsWithTheCaller(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	waiting := make(chan struct{}, 1)
	a.wire.log = slog.New(logSignal{msg: "Discord rate limit, waiting", c: waiting})
	f.RateLimit("POST /channels/C1/messages", 3600)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := a.Send(ctx, platform.Target{Channel: "C1"}, "first"); errc <- err }()
	// Once the adapter waits, the library has read the 429 and its headers.
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the adapter never waited out the rate limit")
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send during a rate limit after cancel = %v", err)
	}

	// The next reply reaches Discord (here: answered, the limit having
	// passed) rather than sleeping out the hour inside the library.
	done := make(chan error, 1)
	go func() { _, err := a.Send(context.Background(), platform.Target{Channel: "C1"}, "next"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the next Send = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the next Send is still held by the previous rate limit")
	}
	if c := f.Next(t, "POST", "/channels/C1/messages"); c.Status != 429 || c.Body["content"] != "first" {
		t.Errorf("first call = %+v", c)
	}
	if c := f.Next(t, "POST", "/channels/C1/messages"); c.Status != 200 || c.Body["content"] != "next" {
		t.Errorf("next call = %+v", c)
	}
}

// logSignal is a slog handler that signals c whenever a record with
// message msg is logged.
type logSignal struct {
	msg string
	c   chan struct{}
}

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == l.msg {
		select {
		case l.c <- struct{}{}:
		default:
		}
	}
	return nil
}
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l logSignal) WithGroup(string) slog.Handler      { return l }
