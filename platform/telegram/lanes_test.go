package telegram

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// holdingHandler holds every message of chat until release is closed, as
// a slow accept path would (a notice posted, a download); the others pass.
type holdingHandler struct {
	*platformtest.Handler
	chat    string
	release chan struct{}
}

func (h holdingHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.Msgs <- m
	if m.Target.Channel == h.chat {
		select {
		case <-h.release:
		case <-ctx.Done():
			return platform.Result{}, ctx.Err()
		}
	}
	return platform.Result{Status: platform.Queued}, nil
}

// TestSlowChatHoldsUpOnlyItself: while the engine holds a message of the
// group chat, the private chat's messages reach it; the group's next
// message waits behind the held one; and getUpdates never confirms the
// held update (its offset stays at or below it) until it was handed over,
// so a crash meanwhile would have it delivered again.
func TestSlowChatHoldsUpOnlyItself(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	a.stuckPoll = 5 * time.Millisecond
	h := holdingHandler{Handler: platformtest.NewHandler(), chat: strconv.FormatInt(groupChat.ID, 10), release: make(chan struct{})}
	group := map[string]any{"id": groupChat.ID, "type": "group"}
	private := map[string]any{"id": privateChat.ID, "type": "private"}
	alice := user(7, "alice", false)
	f.Feed(update(10, map[string]any{"message_id": 1, "date": 1, "chat": group, "from": alice, "text": "g1"}))
	runAdapter(t, a, h)
	if m := h.Message(t); m.Text != "g1" {
		t.Fatalf("first message = %q", m.Text)
	}
	f.Feed(update(11, map[string]any{"message_id": 2, "date": 1, "chat": group, "from": alice, "text": "g2"}))
	for i := range 3 {
		f.Feed(update(12+i, map[string]any{"message_id": 3 + i, "date": 1, "chat": private, "from": alice, "text": "p" + strconv.Itoa(i)}))
		if m := h.Message(t); m.Text != "p"+strconv.Itoa(i) {
			t.Fatalf("while the group is held the handler got %q, want p%d", m.Text, i)
		}
	}
	for _, c := range f.Calls("getUpdates") {
		if off, _ := strconv.Atoi(c.Form.Get("offset")); off > 10 {
			t.Fatalf("getUpdates offset %d confirmed the held update 10", off)
		}
	}
	close(h.release)
	if m := h.Message(t); m.Text != "g2" {
		t.Fatalf("after the release the handler got %q, want g2", m.Text)
	}
	// Everything is confirmed once handed over.
	f.Wait(t, "the offset past every update", func() bool {
		c := f.Calls("getUpdates")
		off, _ := strconv.Atoi(c[len(c)-1].Form.Get("offset"))
		return off == 15
	})
	if len(h.Msgs) != 0 {
		t.Errorf("an update was handed over twice: %+v", <-h.Msgs)
	}
}

// failOnceHandler fails the first HandleMessage of each text, as an engine
// that could not take a message (it must then be handed over again).
type failOnceHandler struct {
	*platformtest.Handler
	mu     *sync.Mutex
	failed map[string]bool
}

func (h failOnceHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.mu.Lock()
	first := !h.failed[m.Text]
	h.failed[m.Text] = true
	h.mu.Unlock()
	if first {
		return platform.Result{}, errors.New("not now")
	}
	h.Msgs <- m
	return platform.Result{Status: platform.Queued}, nil
}

// TestUpdateNotTakenIsHandedOverAgain: an update the engine did not take
// is not confirmed, comes back with the next poll and is handed over
// again; the chat's next message waits for it.
func TestUpdateNotTakenIsHandedOverAgain(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	a.stuckPoll = 5 * time.Millisecond
	h := failOnceHandler{Handler: platformtest.NewHandler(), mu: &sync.Mutex{}, failed: map[string]bool{}}
	private := map[string]any{"id": privateChat.ID, "type": "private"}
	alice := user(7, "alice", false)
	f.Feed(update(10, map[string]any{"message_id": 1, "date": 1, "chat": private, "from": alice, "text": "first"}))
	runAdapter(t, a, h)
	if m := h.Message(t); m.Text != "first" {
		t.Fatalf("got %q, want the first message handed over again", m.Text)
	}
	f.Wait(t, "the update confirmed", func() bool {
		c := f.Calls("getUpdates")
		return c[len(c)-1].Form.Get("offset") == "11"
	})
}
