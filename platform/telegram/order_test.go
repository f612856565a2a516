package telegram

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// offsetHandler checks, in each call, that no getUpdates so far asked for
// an offset past the update being handed over (which would have confirmed
// it before the handler returned), and counts the calls that began while
// another was running. It holds the message with text hold until release
// is closed.
type offsetHandler struct {
	*platformtest.Handler
	f       *faketelegram.Server
	hold    string
	release chan struct{}

	running, overlaps atomic.Int32
	mu                sync.Mutex     // guards ids and early
	ids               map[string]int // message text -> its update's id
	early             []string
}

func (h *offsetHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if h.running.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	defer h.running.Add(-1)
	h.Msgs <- m
	h.mu.Lock()
	id := h.ids[m.Text]
	h.mu.Unlock()
	check := func() {
		for _, c := range h.f.Calls("getUpdates") {
			if off, _ := strconv.Atoi(c.Form.Get("offset")); off > id {
				h.mu.Lock()
				h.early = append(h.early, fmt.Sprintf("offset %d while update %d (%q) was in the handler", off, id, m.Text))
				h.mu.Unlock()
				return
			}
		}
	}
	check()
	if m.Text == h.hold {
		<-h.release
		check()
	}
	return platform.Result{Status: platform.Queued}, nil
}

// TestUpdatesReachTheHandlerInOrderAndAreConfirmedAfter: the updates of a
// group and a private chat, interleaved, reach the handler one at a time
// in the order Telegram sent them; while the handler holds one, more
// updates come in, and getUpdates never asks for an offset past the held
// update (a crash would then lose nothing); once each was handed over,
// all are confirmed, none handed over twice.
func TestUpdatesReachTheHandlerInOrderAndAreConfirmedAfter(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	h := &offsetHandler{Handler: platformtest.NewHandler(), f: f, hold: "g3", release: make(chan struct{}), ids: map[string]int{}}
	group := map[string]any{"id": groupChat.ID, "type": "group"}
	private := map[string]any{"id": privateChat.ID, "type": "private"}
	alice := user(7, "alice", false)
	id := 10
	var want []string
	feed := func(n int) {
		for range n {
			chat, text := group, fmt.Sprintf("g%d", id-9)
			if id%2 == 1 {
				chat, text = private, fmt.Sprintf("p%d", id-9)
			}
			h.mu.Lock()
			h.ids[text] = id
			h.mu.Unlock()
			f.Feed(update(id, map[string]any{"message_id": id, "date": 1, "chat": chat, "from": alice, "text": text}))
			want = append(want, text)
			id++
		}
	}
	feed(4) // g1 p2 g3 p4
	runAdapter(t, a, h)
	for _, w := range want[:3] {
		if m := h.Message(t); m.Text != w {
			t.Fatalf("the handler got %q, want %q", m.Text, w)
		}
	}
	// g3 is held: updates fed now wait behind it.
	feed(6)
	close(h.release)
	for _, w := range want[3:] {
		if m := h.Message(t); m.Text != w {
			t.Fatalf("the handler got %q, want %q (the order Telegram sent them)", m.Text, w)
		}
	}
	f.Wait(t, "the offset past every update", func() bool {
		c := f.Calls("getUpdates")
		off, _ := strconv.Atoi(c[len(c)-1].Form.Get("offset"))
		return off == id
	})
	if len(h.Msgs) != 0 {
		t.Errorf("an update was handed over twice: %+v", <-h.Msgs)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.early) > 0 {
		t.Errorf("getUpdates confirmed updates still in the handler: %q", h.early)
	}
	if o := h.overlaps.Load(); o != 0 {
		t.Errorf("%d handler calls began while another ran", o)
	}
}

// failOnceHandler fails the first HandleMessage of text fail, as an engine
// that could not take a message (it must then be handed over again).
type failOnceHandler struct {
	*platformtest.Handler
	fail   string
	failed atomic.Bool
}

func (h *failOnceHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if m.Text == h.fail && !h.failed.Swap(true) {
		return platform.Result{}, fmt.Errorf("not now")
	}
	h.Msgs <- m
	return platform.Result{Status: platform.Queued}, nil
}

// TestUpdateNotTakenIsHandedOverAgain: an update the engine did not take
// is not confirmed, comes back with the next poll and is handed over
// again; the update after it, in another chat, waits for it.
func TestUpdateNotTakenIsHandedOverAgain(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	a.poller.retryPause = 5 * time.Millisecond
	h := &failOnceHandler{Handler: platformtest.NewHandler(), fail: "first"}
	private := map[string]any{"id": privateChat.ID, "type": "private"}
	group := map[string]any{"id": groupChat.ID, "type": "group"}
	alice := user(7, "alice", false)
	f.Feed(update(10, map[string]any{"message_id": 1, "date": 1, "chat": private, "from": alice, "text": "first"}),
		update(11, map[string]any{"message_id": 2, "date": 1, "chat": group, "from": alice, "text": "second"}))
	runAdapter(t, a, h)
	for _, want := range []string{"first", "second"} {
		if m := h.Message(t); m.Text != want {
			t.Fatalf("got %q, want %q (the failed update handed over again, then the next)", m.Text, want)
		}
	}
	f.Wait(t, "both updates confirmed", func() bool {
		c := f.Calls("getUpdates")
		return c[len(c)-1].Form.Get("offset") == "12"
	})
	if len(h.Msgs) != 0 {
		t.Errorf("an update was handed over twice: %+v", <-h.Msgs)
	}
}
