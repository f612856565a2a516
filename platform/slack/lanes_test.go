package slack

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// slowHandler does inside HandleMessage what a slow accept path does: it
// posts a notice into the message's conversation and reads its files
// before it returns (and so before the envelope's ack). Each message is
// recorded when it arrives and again, as done, when its work is over.
type slowHandler struct {
	*platformtest.Handler
	a    *Adapter
	done chan platform.Message
}

func (h slowHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	h.Msgs <- m
	if _, err := h.a.Send(ctx, m.Target, "Queued: "+m.Text); err != nil {
		return platform.Result{}, err
	}
	for _, at := range m.Attachments {
		r, err := at.Open(ctx)
		if err != nil {
			return platform.Result{}, err
		}
		_, err = io.Copy(io.Discard, r)
		r.Close()
		if err != nil {
			return platform.Result{}, err
		}
	}
	h.done <- m
	return platform.Result{Status: platform.Queued}, nil
}

// startSlow runs an adapter with a slowHandler and no ack deadline: an
// envelope is acked only when its message was handled.
func startSlow(t *testing.T) (*env, slowHandler) {
	t.Helper()
	f := fakeslack.New(t)
	a, logs, _ := newAdapter(t, testConfig(f))
	a.ackWait = time.Hour
	h := slowHandler{Handler: platformtest.NewHandler(), a: a, done: make(chan platform.Message, 100)}
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, h) })
	e := &env{t: t, a: a, f: f, rec: h.Handler, logs: logs, conn: f.WaitConn(t, 1)}
	logs.waitFor(t, "Slack connected")
	return e, h
}

// send sends an event's envelope without waiting for its ack.
func (e *env) send(envID, eventID string, event map[string]any) {
	e.t.Helper()
	if err := e.conn.Send(fakeslack.EventEnvelope(envID, eventID, 0, event)); err != nil {
		e.t.Fatalf("sending envelope: %v", err)
	}
}

// TestSlowConversationHoldsUpOnlyItself is the head-of-line case: Slack
// holds chat.postMessage for channel CA, and a file's download in channel
// CD hangs. Messages in CB are handled, answered and acknowledged
// meanwhile, while CA's and CD's envelopes stay unacknowledged (Slack
// would deliver them again) and their conversations' later messages wait
// their turn, in order.
func TestSlowConversationHoldsUpOnlyItself(t *testing.T) {
	e, h := startSlow(t)
	f := e.f
	releasePost := f.HoldWhere("chat.postMessage", func(form map[string]string) bool { return form["channel"] == "CA" })
	defer releasePost()
	file := f.AddFile("F1", "big.log", "text/plain", "log lines")
	releaseDownload := f.HoldWhere(fakeslack.Download, nil)
	defer releaseDownload()

	e.send("envA1", "EvA1", fakeslack.MsgEvent("CA", "1700000001.000100", "U1", "a1", nil))
	f.WaitHeld(t, "chat.postMessage", 1)
	e.send("envD1", "EvD1", fakeslack.MsgEvent("CD", "1700000002.000100", "U1", "d1", map[string]any{"files": []any{file.Object()}}))
	f.WaitHeld(t, fakeslack.Download, 1)
	// Replies in the held threads queue behind their roots.
	e.send("envA2", "EvA2", fakeslack.MsgEvent("CA", "1700000003.000100", "U1", "a2", map[string]any{"thread_ts": "1700000001.000100"}))
	e.send("envD2", "EvD2", fakeslack.MsgEvent("CD", "1700000004.000100", "U1", "d2", map[string]any{"thread_ts": "1700000002.000100"}))

	for i := range 3 {
		env := fmt.Sprintf("envB%d", i)
		e.send(env, "EvB"+env, fakeslack.MsgEvent("CB", fmt.Sprintf("1700000005.00010%d", i), "U1", fmt.Sprintf("b%d", i), nil))
		f.WaitAck(t, env)
		f.WaitPost(t, "the answer in CB", func(m fakeslack.Message) bool {
			return m.Channel == "CB" && m.Text == fmt.Sprintf("Queued: b%d", i)
		})
	}
	for _, env := range []string{"envA1", "envA2", "envD1", "envD2"} {
		if f.Acked(env) {
			t.Errorf("%s was acked while its conversation was held", env)
		}
	}

	// Only the held messages began; their replies wait.
	began := map[string]bool{}
	for range 5 {
		began[e.rec.Message(t).Text] = true
	}
	if len(e.rec.Msgs) != 0 || began["a2"] || began["d2"] || !began["a1"] || !began["d1"] {
		t.Fatalf("began %v (and %d more) while CA and CD were held; want a1, d1 and CB's", began, len(e.rec.Msgs))
	}

	releasePost()
	releaseDownload()
	for _, env := range []string{"envA1", "envA2", "envD1", "envD2"} {
		f.WaitAck(t, env)
	}
	// Each held conversation kept its order.
	var order []string
	for range 7 {
		m := <-h.done
		if m.Target.Channel != "CB" {
			order = append(order, m.Text)
		}
	}
	if a, d := indexOf(order, "a1") < indexOf(order, "a2"), indexOf(order, "d1") < indexOf(order, "d2"); !a || !d {
		t.Errorf("done in order %q: a conversation's messages were reordered", order)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// TestOneConversationKeepsItsOrder: many messages of one thread reach the
// handler in the order Slack sent them, however many other conversations
// run beside it.
func TestOneConversationKeepsItsOrder(t *testing.T) {
	e := startEnv(t)
	const root = "1700000001.000100"
	const n = 40
	for i := range n {
		ev := fakeslack.MsgEvent("C1", fmt.Sprintf("1700000002.%06d", i), "U1", fmt.Sprintf("t%d", i), map[string]any{"thread_ts": root})
		e.send(fmt.Sprintf("envT%d", i), fmt.Sprintf("EvT%d", i), ev)
		e.send(fmt.Sprintf("envO%d", i), fmt.Sprintf("EvO%d", i), fakeslack.MsgEvent(fmt.Sprintf("C%d", 100+i), "1700000003.000100", "U1", "other", nil))
	}
	next := 0
	for range 2 * n {
		m := e.rec.Message(t)
		if m.Target.Channel != "C1" {
			continue
		}
		if want := fmt.Sprintf("t%d", next); m.Text != want {
			t.Fatalf("thread message %q came where %q was due", m.Text, want)
		}
		next++
	}
	if next != n {
		t.Errorf("%d thread messages, want %d", next, n)
	}
}
