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
// ends, then records it with the state of its context, and fails it when
// the context ended (as the engine does when it gives up).
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
	if err := ctx.Err(); err != nil {
		return platform.Result{}, err
	}
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

// startStopping runs an adapter whose handler is h, hands it a message
// that h holds (acked at the ack deadline meanwhile) and sends three more
// behind it, and returns the env, the cancel of Run's context and Run's
// result.
func startStopping(t *testing.T, h *stopHandler, grace time.Duration) (*env, context.CancelFunc, *runResult) {
	t.Helper()
	f := fakeslack.New(t)
	a, logs, _ := newAdapter(t, testConfig(f))
	a.socket.drainGrace = grace
	// The held first message is acked at the deadline: keep it short.
	a.socket.ackWait = 20 * time.Millisecond
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
	// The first message occupies the handler and is acked at the
	// deadline; the next three, replies in its thread, wait behind it,
	// not acked.
	e.deliver("EvStop1", 0, fakeslack.MsgEvent("C1", "1700000900.000100", "U1", "m1", nil))
	<-h.started
	for i := 2; i <= 4; i++ {
		e.send(fmt.Sprintf("env-stop-%d", i), fmt.Sprintf("EvStop%d", i), fakeslack.MsgEvent("C1", fmt.Sprintf("1700000900.00010%d", i), "U1", fmt.Sprintf("m%d", i),
			map[string]any{"thread_ts": "1700000900.000100"}))
	}
	return e, cancel, run
}

// notAcked fails t when any of the three messages sent behind the held one
// was acked: Slack must deliver them again.
func notAcked(t *testing.T, e *env) {
	t.Helper()
	for i := 2; i <= 4; i++ {
		if env := fmt.Sprintf("env-stop-%d", i); e.f.Acked(env) {
			t.Errorf("%s was acked though Run stopped before handing it over", env)
		}
	}
}

// Slack does not redeliver an acknowledged event, so stopping Run must not
// cut short the handler call of a message acked at the deadline: the
// handler's context stays live (within the grace) and Run waits for it.
// What the pump had not read is not acked, and Slack delivers it again.
func TestStopHandsOverAcknowledgedMessages(t *testing.T) {
	h := newStopHandler()
	e, cancel, run := startStopping(t, h, time.Minute)
	cancel()
	h.letGo()
	run.wait(t, "after the handler was released")
	select {
	case g := <-h.got:
		if g.text != "m1" || g.cancelled {
			t.Errorf("the held message was handed over as %+v, want m1 with a live context", g)
		}
	default:
		t.Fatal("Run returned before the held message's handler did")
	}
	if extra := len(h.got); extra != 0 {
		t.Errorf("%d messages were handed over after Run was stopped", extra)
	}
	notAcked(t, e)
}

// A handler that does not finish cannot hold Run forever: after the grace
// its context is cancelled, and a message acked at the deadline and then
// not handled is reported loudly.
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
		t.Errorf("%d messages were handed over after the grace", extra)
	}
	e.logs.waitFor(t, "Slack message acknowledged but not handed over")
	notAcked(t, e)
}
