package telegram

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// tenureTestHandler hands messages to msgs, holding the first one whose text
// is hold until release is closed.
type tenureTestHandler struct {
	msgs    chan string
	hold    string
	release chan struct{}
	once    sync.Once
}

func (h *tenureTestHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.msgs <- m.Text
	if m.Text == h.hold {
		held := false
		h.once.Do(func() { held = true })
		if held {
			<-h.release
		}
	}
	return platform.Result{Status: platform.Queued}, nil
}

func (h *tenureTestHandler) HandleAction(context.Context, platform.Action) error { return nil }

func (h *tenureTestHandler) next(t *testing.T) string {
	t.Helper()
	select {
	case m := <-h.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message reached the handler")
		return ""
	}
}

// TestGatedPollingFollowsTheTenure: with a gate the adapter sends at any
// time but polls only within a tenure, from the stored offset; it stores
// the offset of the first update not handed over before each poll; when
// the tenure ends it stops polling, and the next tenure reads again what
// was not handed over.
func TestGatedPollingFollowsTheTenure(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	g := platformtest.NewGate()
	a.SetGate(g)
	h := &tenureTestHandler{msgs: make(chan string, 100), hold: "m3", release: make(chan struct{})}
	runAdapter(t, a, h)
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "42"}
	say := func(text string) {
		f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": user(7, "alice", false), "text": text})
	}

	g.WaitAcquiring(t)
	if _, err := a.Send(ctx, to, "before"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("getUpdates")); n != 0 {
		t.Fatalf("%d polls without a tenure", n)
	}
	if s := a.Status(); s != (platform.ConnStatus{State: platform.Standby, Detail: "another host polls"}) {
		t.Errorf("status %q without a tenure", s)
	}

	t1 := g.Grant(t)
	for _, text := range []string{"m1", "m2"} {
		say(text)
	}
	for _, want := range []string{"m1", "m2", "m3"} {
		if want == "m3" {
			// Sent once m1 and m2 were handed over, m3 comes in a poll
			// of its own, from an offset stored before it.
			say(want)
		}
		if got := h.next(t); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	// m3 is in the handler: the offset stops at it (the fake numbers
	// updates from 1001).
	const m3 = 1003
	g.WaitOffset(t, m3)
	t1.Lose()
	close(h.release)
	g.WaitAcquiring(t)
	polls := len(f.Calls("getUpdates"))
	say("m4")
	if _, err := a.Send(ctx, to, "between"); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-h.msgs:
		t.Errorf("%q handed over without a tenure", m)
	default:
	}
	if got := g.Offset(); got != m3 {
		t.Errorf("stored offset %d after the tenure, want %d", got, m3)
	}
	for _, off := range t1.Saves() {
		if off > m3 {
			t.Errorf("the first tenure stored %v: past m3, which it had not handed over", t1.Saves())
		}
	}

	// The next tenure starts from m3: handed over but not stored past,
	// comes again (the cluster's stream drops the copy), then m4.
	g.Grant(t)
	for _, want := range []string{"m3", "m4"} {
		if got := h.next(t); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	g.WaitOffset(t, m3+2)
	for _, c := range f.Calls("getUpdates")[:polls] {
		if off := atoi(t, c.Form.Get("offset")); off > m3 {
			t.Errorf("the first tenure polled with offset %d, confirming m3, which it had not handed over", off)
		}
	}
}

// TestNoteSeenFillsHistoryOnAHostThatDoesNotPoll: an owner that is not
// the poller learns the chat's messages from the stream (NoteSeen) and
// shows them in History with its own replies, each once.
func TestNoteSeenFillsHistoryOnAHostThatDoesNotPoll(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	conv := platform.Target{Platform: "tg-test", Channel: "42"}
	m := platform.Message{ID: "42:5", Target: platform.Target{Platform: "tg-test", Channel: "42", MessageID: "5"},
		UserID: "7", UserName: "alice", Text: "fix the build", IsDM: true}
	a.NoteSeen(m)
	a.NoteSeen(m) // redelivered: noted once
	if _, err := a.Send(ctx, conv, "On it."); err != nil {
		t.Fatal(err)
	}
	all, err := a.History(ctx, conv, platform.HistoryQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Text != "fix the build" || all[0].UserName != "alice" || !all[1].FromSelf {
		t.Errorf("history %+v", all)
	}
}
