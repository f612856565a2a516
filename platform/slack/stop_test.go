package slack

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// handedOver is one message as a stopHandler saw it.
type handedOver struct {
	text      string
	cancelled bool // the handler's context was already cancelled
}

// stopHandler holds each message until release is closed or its context
// ends, then records it with the state of its context.
type stopHandler struct {
	*platformtest.Handler
	started chan struct{} // one value per message that reached the handler
	release chan struct{}
	let     sync.Once // closes release
	got     chan handedOver
}

func newStopHandler() *stopHandler {
	return &stopHandler{Handler: platformtest.NewHandler(), started: make(chan struct{}, 100),
		release: make(chan struct{}), got: make(chan handedOver, 100)}
}

// letGo releases every held message.
func (s *stopHandler) letGo() { s.let.Do(func() { close(s.release) }) }

func (s *stopHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	s.started <- struct{}{}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.got <- handedOver{text: m.Text, cancelled: ctx.Err() != nil}
	return platform.Result{Status: platform.Queued}, nil
}

// runResult is closed when Run has returned, with what it returned.
type runResult struct {
	done chan struct{}
	err  error
}

// wait waits for Run to return and fails t if it does not or returns an
// error.
func (r *runResult) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("Run = %v", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Run did not return %s", what)
	}
}

// startStopping runs an adapter whose handler is h and returns the env,
// the cancel of Run's context and Run's result.
func startStopping(t *testing.T, h *stopHandler, grace time.Duration) (*env, context.CancelFunc, *runResult) {
	t.Helper()
	f := fakeslack.New(t)
	a, logs, _ := newAdapter(t, testConfig(f))
	a.drainGrace = grace
	// The held first message keeps the rest from being accepted, so their
	// acks come at the deadline: keep it short.
	a.ackWait = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	run := &runResult{done: make(chan struct{})}
	go func() {
		run.err = a.Run(ctx, h)
		close(run.done)
	}()
	t.Cleanup(func() {
		cancel()
		h.letGo()
		run.wait(t, "at the end of the test")
	})
	e := &env{t: t, a: a, f: f, rec: h.Handler, logs: logs, conn: f.WaitConn(t, 1)}
	// The first message occupies the handler; the next three, replies in
	// its thread, wait behind it on its conversation's lane, already
	// acknowledged to Slack.
	e.deliver("EvStop1", 0, fakeslack.MsgEvent("C1", "1700000900.000100", "U1", "m1", nil))
	<-h.started
	for i := 2; i <= 4; i++ {
		e.deliver(fmt.Sprintf("EvStop%d", i), 0, fakeslack.MsgEvent("C1", fmt.Sprintf("1700000900.00010%d", i), "U1", fmt.Sprintf("m%d", i),
			map[string]any{"thread_ts": "1700000900.000100"}))
	}
	return e, cancel, run
}

// Slack does not redeliver an acknowledged event, so stopping Run must
// still hand every queued one to the handler, with a context that lets the
// engine answer or journal it.
func TestStopHandsOverAcknowledgedMessages(t *testing.T) {
	h := newStopHandler()
	_, cancel, run := startStopping(t, h, time.Minute)
	cancel()
	h.letGo()
	run.wait(t, "after the handler was released")
	for i := 1; i <= 4; i++ {
		select {
		case g := <-h.got:
			if want := fmt.Sprintf("m%d", i); g.text != want || g.cancelled {
				t.Errorf("message %d handed over as %+v, want %q with a live context", i, g, want)
			}
		default:
			t.Fatalf("Run returned before message m%d reached the handler", i)
		}
	}
}

// A handler that does not finish cannot hold Run forever: after the grace
// its context is cancelled and what is still queued is given up, loudly.
func TestStopGivesUpAfterTheGrace(t *testing.T) {
	h := newStopHandler()
	e, cancel, run := startStopping(t, h, 20*time.Millisecond)
	cancel()
	run.wait(t, "after the grace")
	select {
	case g := <-h.got:
		if g.text != "m1" || !g.cancelled {
			t.Errorf("held message handed over as %+v, want m1 with a cancelled context", g)
		}
	default:
		t.Fatal("the held message's handler did not return")
	}
	if extra := len(h.got); extra != 0 {
		t.Errorf("%d queued messages were handed over after the grace", extra)
	}
	e.logs.waitFor(t, "not handed over before stopping dropped=3")
}
