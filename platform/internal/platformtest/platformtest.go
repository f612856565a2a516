// Package platformtest holds the engine side of the chat adapters' tests:
// a platform.Handler that records what an adapter hands over, and a way to
// run an adapter for the length of a test. The fakes of the platforms'
// servers are internal/fakeslack, internal/fakediscord and
// internal/faketelegram; nothing here knows a wire format.
package platformtest

import (
	"context"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// wait bounds how long a test waits for an adapter: generous, since the
// adapters' tests run with -race on a shared machine.
const wait = 10 * time.Second

// Handler records the messages and button presses an adapter hands to
// the engine. Tests read Msgs and Actions directly or wait with Message and
// Action. Each channel holds 100 items; an adapter blocks past that.
type Handler struct {
	Msgs    chan platform.Message
	Actions chan platform.Action
}

var _ platform.Handler = (*Handler)(nil)

// NewHandler returns an empty Handler.
func NewHandler() *Handler {
	return &Handler{Msgs: make(chan platform.Message, 100), Actions: make(chan platform.Action, 100)}
}

// HandleMessage records m; it queues every message, as an engine that
// dedupes nothing would.
func (h *Handler) HandleMessage(_ context.Context, m platform.Message) (platform.Result, error) {
	h.Msgs <- m
	return platform.Result{Status: platform.Queued}, nil
}

// HandleAction records a.
func (h *Handler) HandleAction(_ context.Context, a platform.Action) error {
	h.Actions <- a
	return nil
}

// Message waits for the next message, failing t if none comes.
func (h *Handler) Message(t testing.TB) platform.Message {
	t.Helper()
	select {
	case m := <-h.Msgs:
		return m
	case <-time.After(wait):
		t.Fatal("no message reached the handler")
		return platform.Message{}
	}
}

// Action waits for the next button press, failing t if none comes.
func (h *Handler) Action(t testing.TB) platform.Action {
	t.Helper()
	select {
	case a := <-h.Actions:
		return a
	case <-time.After(wait):
		t.Fatal("no action reached the handler")
		return platform.Action{}
	}
}

// Run runs run in a goroutine until the test ends; then it cancels run's
// context and fails t unless run returns nil within stop.
func Run(t testing.TB, stop time.Duration, run func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after cancel", err)
			}
		case <-time.After(stop):
			t.Error("Run did not return after cancel")
		}
	})
}
