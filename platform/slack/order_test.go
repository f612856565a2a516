package slack

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// send sends an event's envelope without waiting for its ack.
func (e *env) send(envID, eventID string, event map[string]any) {
	e.t.Helper()
	if err := e.conn.Send(fakeslack.EventEnvelope(envID, eventID, 0, event)); err != nil {
		e.t.Fatalf("sending envelope: %v", err)
	}
}

// overlapHandler records each message and counts the calls that began
// while another was still running.
type overlapHandler struct {
	*platformtest.Handler
	running, overlaps atomic.Int32
}

func (h *overlapHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if h.running.Add(1) > 1 {
		h.overlaps.Add(1)
	}
	defer h.running.Add(-1)
	return h.Handler.HandleMessage(ctx, m)
}

// TestMessagesReachTheHandlerInOrder: the messages of many conversations,
// interleaved, reach the handler one at a time and in the order Slack sent
// them, each acked.
func TestMessagesReachTheHandlerInOrder(t *testing.T) {
	f := fakeslack.New(t)
	a, logs, _ := newAdapter(t, testConfig(f))
	h := &overlapHandler{Handler: platformtest.NewHandler()}
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	e := &env{t: t, a: a, f: f, rec: h.Handler, logs: logs, conn: f.WaitConn(t, 1)}
	logs.waitFor(t, "Slack connected")
	const root = "1700000001.000100"
	const n = 40
	var want []string
	for i := range n {
		ev := fakeslack.MsgEvent("C1", fmt.Sprintf("1700000002.%06d", i), "U1", fmt.Sprintf("t%d", i), map[string]any{"thread_ts": root})
		e.send(fmt.Sprintf("envT%d", i), fmt.Sprintf("EvT%d", i), ev)
		e.send(fmt.Sprintf("envO%d", i), fmt.Sprintf("EvO%d", i), fakeslack.MsgEvent(fmt.Sprintf("C%d", 100+i), "1700000003.000100", "U1", fmt.Sprintf("o%d", i), nil))
		want = append(want, fmt.Sprintf("t%d", i), fmt.Sprintf("o%d", i))
	}
	for i, w := range want {
		if m := e.rec.Message(t); m.Text != w {
			t.Fatalf("message %d reached the handler as %q, want %q (the order Slack sent them)", i, m.Text, w)
		}
	}
	for i := range n {
		f.WaitAck(t, fmt.Sprintf("envT%d", i))
		f.WaitAck(t, fmt.Sprintf("envO%d", i))
	}
	if o := h.overlaps.Load(); o != 0 {
		t.Errorf("%d handler calls began while another ran", o)
	}
}
