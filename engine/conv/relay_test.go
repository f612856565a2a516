package conv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/cc-connect/cc-connect/platform"
)

// chatCalls is an adapter that records what is posted and edited; with
// edits set it is a platform.Editor.
type chatCalls struct {
	mu    sync.Mutex
	calls []chatCall
}

type chatCall struct {
	kind string // send or edit
	To   platform.Target
	Text string
}

func (c *chatCalls) Name() string                                      { return "fake" }
func (c *chatCalls) Run(ctx context.Context, _ platform.Handler) error { <-ctx.Done(); return nil }

func (c *chatCalls) Send(_ context.Context, to platform.Target, text string) (platform.Target, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, chatCall{kind: "send", To: to, Text: text})
	to.MessageID = fmt.Sprintf("p%d", len(c.calls))
	return to, nil
}

func (c *chatCalls) kinds(kind string) []chatCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []chatCall
	for _, x := range c.calls {
		if kind == "" || x.kind == kind {
			out = append(out, x)
		}
	}
	return out
}

// editingChat is chatCalls with edits.
type editingChat struct{ *chatCalls }

func (c editingChat) Edit(_ context.Context, msg platform.Target, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, chatCall{kind: "edit", To: msg, Text: text})
	return nil
}

func TestProgressEditsAreThrottled(t *testing.T) {
	rec := &chatCalls{}
	none := func(string) (platform.Adapter, bool) { return nil, false }
	r := &relay{to: platform.Target{Platform: "fake", Channel: "C1"}, original: editingChat{rec}, current: none,
		bg: context.Background(), log: slog.New(slog.DiscardHandler), metrics: noMetrics{}}
	p := &progress{}
	r.showProgress(p, "Running: Bash `one`")
	r.showProgress(p, "Running: Bash `two`")
	r.showProgress(p, "Running: Bash `three`")
	if sends, edits := len(rec.kinds("send")), len(rec.kinds("edit")); sends != 1 || edits != 0 {
		t.Fatalf("%d sends and %d edits within a second, want 1 and 0", sends, edits)
	}
	if p.timer == nil {
		t.Fatal("no flush scheduled for the throttled update")
	}
	<-p.timer.C
	r.flushProgress(p)
	edits := rec.kinds("edit")
	if len(edits) != 1 || edits[0].Text != "Running: Bash `three`" || edits[0].To.MessageID == "" {
		t.Errorf("edits = %+v, want one edit of the posted status to the latest text", edits)
	}
	// Without an editor, progress is skipped rather than flooding the chat.
	plain := &chatCalls{}
	r.original = plain
	r.showProgress(&progress{}, "Running: Bash `x`")
	if n := len(plain.kinds("")); n != 0 {
		t.Errorf("%d calls on a platform without edits, want 0", n)
	}
}

// statusLineChat is chatCalls with a status line of its own.
type statusLineChat struct{ *chatCalls }

func (c statusLineChat) ShowStatus(_ context.Context, to platform.Target, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, chatCall{kind: "status", To: to, Text: text})
	return nil
}

func (c statusLineChat) Edit(context.Context, platform.Target, string) error {
	panic("a platform with a status line gets no status message to edit")
}

// A platform with a status line of its own gets every status at once, in
// place of a status message posted and edited.
func TestProgressOnAStatusLine(t *testing.T) {
	rec := &chatCalls{}
	none := func(string) (platform.Adapter, bool) { return nil, false }
	r := &relay{to: platform.Target{Platform: "fake", Channel: "C1"}, original: statusLineChat{rec}, current: none,
		bg: context.Background(), log: slog.New(slog.DiscardHandler), metrics: noMetrics{}}
	p := &progress{}
	for _, s := range []string{"Running: Bash `one`", "Running: Bash `two`"} {
		r.showProgress(p, s)
	}
	got := rec.kinds("")
	if len(got) != 2 || got[0].kind != "status" || got[1].Text != "Running: Bash `two`" || got[1].To.Channel != "C1" {
		t.Errorf("calls = %+v, want the two statuses on the status line", got)
	}
	if p.timer != nil || p.posted {
		t.Error("a status line was paced or posted like a status message")
	}
}
