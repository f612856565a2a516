package ingress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/platform"
)

// TestOrderPerConversationSlowOneBlocksNoOther: events of each
// conversation are accepted in the order they were published, and a
// conversation whose handler is stuck holds up only itself.
func TestOrderPerConversationSlowOneBlocksNoOther(t *testing.T) {
	t.Parallel()
	url := setup(t)
	js := jsFor(t, natstest.Connect(t, url))
	p := NewPublisher(js, testNames, "h1")
	release := make(chan struct{})
	r := newRecorder()
	r.answer = func(a accepted) (Result, error) {
		if a.conv == "slow" && a.text == "slow0" {
			<-release
		}
		return Settled, nil
	}
	serve(t, js, newFence(1), r, 5*time.Second)
	const per = 20
	for i := range per {
		for _, conv := range []string{"a", "b", "slow"} {
			publish(t, p, message(t, conv, fmt.Sprintf("%s-%d", conv, i), fmt.Sprintf("%s%d", conv, i)))
		}
	}
	r.waitN(t, 2*per) // a and b complete while slow0 is stuck
	for _, conv := range []string{"a", "b"} {
		if got := r.texts(conv); !slices.Equal(got, texts(per, conv)) {
			t.Errorf("conversation %s accepted %v", conv, got)
		}
	}
	if got := r.texts("slow"); len(got) != 0 {
		t.Fatalf("the stuck conversation went on: %v", got)
	}
	close(release)
	r.waitN(t, 3*per)
	if got := r.texts("slow"); !slices.Equal(got, texts(per, "slow")) {
		t.Errorf("the slow conversation accepted %v", got)
	}
}

// TestSameIDFromTwoHostsIsStoredOnce: Slack redelivers an envelope to
// another connection; both hosts publish it; the stream keeps one.
func TestSameIDFromTwoHostsIsStoredOnce(t *testing.T) {
	t.Parallel()
	url := setup(t)
	p1 := NewPublisher(jsFor(t, natstest.Connect(t, url)), testNames, "h1")
	p2 := NewPublisher(jsFor(t, natstest.Connect(t, url)), testNames, "h2")
	first := publish(t, p1, message(t, "x", "C1:1700.1", "hello"))
	second := publish(t, p2, message(t, "x", "C1:1700.1", "hello"))
	if first.Duplicate || !second.Duplicate || second.Seq != first.Seq {
		t.Fatalf("first %+v, second %+v: want the second to be a duplicate of the first", first, second)
	}
	publish(t, p2, message(t, "x", "C1:1700.2", "next"))
	r := newRecorder()
	serve(t, jsFor(t, natstest.Connect(t, url)), newFence(1), r, 5*time.Second)
	r.waitN(t, 2)
	if got := r.texts(""); !slices.Equal(got, []string{"hello", "next"}) {
		t.Fatalf("accepted %v, want hello once then next", got)
	}
}

// TestKilledBeforeAckRedeliversInOrder: a host journals two events and dies
// before their turns end; the next holder gets them again, before an event
// published after the death, in order.
func TestKilledBeforeAckRedeliversInOrder(t *testing.T) {
	t.Parallel()
	url := setup(t)
	pub := NewPublisher(jsFor(t, natstest.Connect(t, url)), testNames, "h0")
	const ackWait = time.Second

	nc1 := natstest.Connect(t, url)
	r1 := newRecorder()
	r1.answer = func(accepted) (Result, error) { return Journaled, nil } // never Done: dies mid-turn
	stop1 := serve(t, jsFor(t, nc1), newFence(1), r1, ackWait)
	publish(t, pub, message(t, "x", "1", "one"))
	publish(t, pub, message(t, "x", "2", "two"))
	r1.waitN(t, 2)
	nc1.Close() // kill: nothing more reaches the server from this host
	_ = stop1()

	r2 := newRecorder()
	serve(t, jsFor(t, natstest.Connect(t, url)), newFence(2), r2, ackWait)
	// Delivered at once, while one and two come back only after their
	// ack wait: the consumer must hold it back.
	publish(t, pub, message(t, "x", "3", "three"))
	got := r2.waitN(t, 3)
	if txt := r2.texts(""); !slices.Equal(txt, []string{"one", "two", "three"}) {
		t.Fatalf("the next holder accepted %v, want one, two, three", txt)
	}
	if got[0].n < 2 || got[1].n < 2 {
		t.Errorf("delivery counts %d, %d: want the first two redelivered", got[0].n, got[1].n)
	}
}

// TestLostFenceStopsWithoutAck: once the lease is lost, Serve returns, the
// handler gets nothing more, and what it had journaled goes to the next
// holder; a Done after that still acknowledges.
func TestLostFenceStopsWithoutAck(t *testing.T) {
	t.Parallel()
	url := setup(t)
	js := jsFor(t, natstest.Connect(t, url))
	pub := NewPublisher(js, testNames, "h0")
	f1 := newFence(1)
	r1 := newRecorder()
	r1.answer = func(accepted) (Result, error) { return Journaled, nil }
	c := NewConsumer(js, ConsumerOptions{Names: testNames, Binding: testBinding.Names(), AckWait: time.Second})
	done := make(chan error, 1)
	go func() { done <- c.Serve(context.Background(), f1, r1) }()
	publish(t, pub, message(t, "x", "1", "one"))
	publish(t, pub, message(t, "y", "2", "two"))
	got := r1.waitN(t, 2)
	f1.lose()
	select {
	case err := <-done:
		if !errors.Is(err, errTestFenced) {
			t.Fatalf("Serve after the fence was lost: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("Serve did not stop when the fence was lost")
	}
	publish(t, pub, message(t, "x", "3", "three"))
	// "two" finished on the old holder after all: acknowledged.
	for _, a := range got {
		if a.text == "two" {
			a.d.Done()
		}
	}
	r2 := newRecorder()
	serve(t, js, newFence(2), r2, time.Second)
	r2.waitN(t, 2)
	if txt := r2.texts(""); !slices.Equal(txt, []string{"one", "three"}) {
		t.Fatalf("the next holder accepted %v, want one (redelivered) and three", txt)
	}
	if txt := r1.texts(""); len(txt) != 2 {
		t.Errorf("the fenced handler got %v after losing its lease", txt)
	}
}

// TestPoisonAndPassingFailures: an event that does not decode is dropped
// (terminated), one the handler can never take is dropped, and a passing
// failure is retried in place before the conversation goes on.
func TestPoisonAndPassingFailures(t *testing.T) {
	t.Parallel()
	url := setup(t)
	nc := natstest.Connect(t, url)
	js := jsFor(t, nc)
	pub := NewPublisher(js, testNames, "h0")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	subj := testNames.In(testBinding.Names(), message(t, "x", "0", "").Conversation(), "h0")
	if _, err := js.Publish(ctx, subj, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	publish(t, pub, message(t, "x", "1", "bad"))
	publish(t, pub, message(t, "x", "2", "flaky"))
	publish(t, pub, message(t, "x", "3", "fine"))
	tries := 0
	r := newRecorder()
	r.answer = func(a accepted) (Result, error) {
		switch a.text {
		case "bad":
			return 0, fmt.Errorf("no such thing: %w", ErrPoison)
		case "flaky":
			if tries++; tries < 3 {
				return 0, errors.New("disk busy")
			}
		}
		return Settled, nil
	}
	serve(t, js, newFence(1), r, 5*time.Second)
	r.waitN(t, 2)
	if txt := r.texts(""); !slices.Equal(txt, []string{"flaky", "fine"}) {
		t.Fatalf("accepted %v, want flaky (after retries) then fine", txt)
	}
	if tries != 3 {
		t.Errorf("flaky tried %d times, want 3", tries)
	}
	cons, err := js.Consumer(ctx, testNames.Stream(), testNames.Consumer(testBinding.Names()))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "everything acknowledged or terminated", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
}

// TestNewerFormatIsLeftForAHostThatReadsIt: an event of a newer format
// than this build reads is not handed on and not terminated: Serve stops
// with ErrNewerVersion (wrapping format.ErrNewer), and the event stays in
// the stream with what follows it, for a host that reads it.
func TestNewerFormatIsLeftForAHostThatReadsIt(t *testing.T) {
	t.Parallel()
	url := setup(t)
	js := jsFor(t, natstest.Connect(t, url))
	pub := NewPublisher(js, testNames, "h0")
	publish(t, pub, message(t, "x", "1", "before"))
	ev := message(t, "x", "2", "from a newer build")
	ev.V, ev.Origin = format.Written()+1, "h0"
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := js.Publish(ctx, testNames.In(testBinding.Names(), ev.Conversation(), "h0"), data); err != nil {
		t.Fatal(err)
	}
	publish(t, pub, message(t, "x", "3", "after"))
	r := newRecorder()
	c := NewConsumer(js, ConsumerOptions{Names: testNames, Binding: testBinding.Names(), AckWait: time.Second})
	err = c.Serve(ctx, newFence(1), r)
	if !errors.Is(err, ErrNewerVersion) || !errors.Is(err, format.ErrNewer) {
		t.Fatalf("Serve returned %v, want ErrNewerVersion", err)
	}
	if !strings.Contains(err.Error(), "upgrade this host") {
		t.Errorf("the error does not say what to do: %v", err)
	}
	if txt := r.texts(""); !slices.Equal(txt, []string{"before"}) {
		t.Errorf("handed on %v, want only the event before the newer one", txt)
	}
	st, err := js.Stream(ctx, testNames.Stream())
	if err != nil {
		t.Fatal(err)
	}
	// The event before was acknowledged without waiting for the server
	// (Settled, not Settle), and the server applies an acknowledgement
	// apart from answering a stream info request: wait until it did.
	var msgs uint64
	waitFor(t, "the event before removed from the stream", func() bool {
		info, err := st.Info(ctx)
		if err == nil {
			msgs = info.State.Msgs
		}
		return err == nil && info.State.FirstSeq >= 2
	})
	if msgs != 2 {
		t.Errorf("the stream holds %d events, want the newer one and the one after it", msgs)
	}
	for seq, want := range map[uint64]string{2: "from a newer build", 3: "after"} {
		raw, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("event %d (%q) is gone: %v", seq, want, err)
		}
		if !strings.Contains(string(raw.Data), want) {
			t.Errorf("event %d holds %s, want %q", seq, raw.Data, want)
		}
	}
}

// TestQuietGivesBackAtOnce: once Quiet is closed nothing more is handed
// on; what is in hand (a journaled event not finished, one the handler
// refused because the host stops) is given back when ctx ends, and the
// next holder gets it at once, far within the ack wait; a settle of a
// given-back event fails.
func TestQuietGivesBackAtOnce(t *testing.T) {
	t.Parallel()
	url := setup(t)
	js := jsFor(t, natstest.Connect(t, url))
	pub := NewPublisher(js, testNames, "h0")
	quiet := make(chan struct{})
	refusing := make(chan struct{})
	var refuseOnce sync.Once
	r1 := newRecorder()
	r1.answer = func(a accepted) (Result, error) {
		if a.text == "running" {
			return Journaled, nil
		}
		// The engine refuses what comes while it stops, until the
		// consumer stops asking.
		refuseOnce.Do(func() { close(refusing) })
		<-quiet
		return 0, errors.New("shutting down")
	}
	const ackWait = time.Minute
	stop := serveWith(t, js, newFence(1), r1, ConsumerOptions{AckWait: ackWait, Quiet: quiet})
	publish(t, pub, message(t, "x", "1", "running"))
	r1.waitN(t, 1)
	publish(t, pub, message(t, "y", "2", "refused while stopping"))
	<-refusing
	close(quiet)
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Serve returned %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	r1.mu.Lock()
	first := r1.got[0].d
	r1.mu.Unlock()
	if err := first.Settle(ctx); !errors.Is(err, ErrGivenBack) {
		t.Errorf("settling a given-back event returned %v, want ErrGivenBack", err)
	}
	began := time.Now()
	r2 := newRecorder()
	serve(t, js, newFence(2), r2, ackWait)
	r2.waitN(t, 2)
	if waited := time.Since(began); waited > ackWait/2 {
		t.Errorf("the next holder got them after %v: not given back", waited)
	}
	if txt := r2.texts(""); !slices.Contains(txt, "running") || !slices.Contains(txt, "refused while stopping") {
		t.Errorf("the next holder got %v", txt)
	}
}

// TestForgedEventsAreDropped: the owner hands on only what its publisher
// may send. An event whose body names another publisher than its subject
// (which the server's permissions tie to the publisher's user), another
// binding than the one consumed, or that Allow refuses, is terminated;
// one of an older cc-connect, whose subject names no publisher, is taken
// with Publisher "".
func TestForgedEventsAreDropped(t *testing.T) {
	t.Parallel()
	url := setup(t)
	js := jsFor(t, natstest.Connect(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	raw := func(subject string, ev Event) {
		t.Helper()
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
	}
	conv := message(t, "x", "0", "").Conversation()
	ev := func(id, text, origin string) Event {
		e := message(t, "x", id, text)
		e.Origin = origin
		return e
	}
	raw(testNames.In(testBinding.Names(), conv, "h1"), ev("1", "another origin in the body", "h2"))
	other, err := NewMessage(Binding{Platform: "slack", Channel: "C9"}, platform.Message{ID: "2", UserID: "U1", Text: "another binding",
		Target: platform.Target{Platform: "slack", Channel: "C9", Thread: "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	other.Origin = "h1"
	raw(testNames.In(testBinding.Names(), conv, "h1"), other)
	raw(testNames.In(testBinding.Names(), conv, "h3"), ev("3", "a publisher Allow refuses", "h3"))
	raw(testNames.Prefix+".in."+testBinding.Names().Token()+"."+conv, ev("4", "an older cc-connect's", "h1"))
	publish(t, NewPublisher(js, testNames, "h1"), message(t, "x", "5", "fine"))

	r := newRecorder()
	serveWith(t, js, newFence(1), r, ConsumerOptions{AckWait: 5 * time.Second, Allow: func(ev Event, publisher string) error {
		if publisher == "h3" {
			return errors.New("h3 may not publish here")
		}
		return nil
	}})
	got := r.waitN(t, 2)
	if txt := r.texts(""); !slices.Equal(txt, []string{"an older cc-connect's", "fine"}) {
		t.Fatalf("accepted %q, want the older event and the fine one only", txt)
	}
	if got[0].d.Publisher != "" || got[1].d.Publisher != "h1" {
		t.Errorf("publishers %q, %q; want \"\" (not named) and h1", got[0].d.Publisher, got[1].d.Publisher)
	}
	cons, err := js.Consumer(ctx, testNames.Stream(), testNames.Consumer(testBinding.Names()))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the forged events terminated", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
}

// waitFor polls a server-side condition (the server offers no event for
// it) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, waitTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ jetstream.Msg // the consumer hands jetstream.Msg values to the tracker
