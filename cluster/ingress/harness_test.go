package ingress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/platform"
)

const waitTimeout = 30 * time.Second

var (
	testNames   = names.Names{Prefix: "t"}
	testBinding = Binding{Platform: "slack", Channel: "*"}
)

// testFence is a lease the test ends by hand.
type testFence struct {
	token uint64
	once  sync.Once
	lost  chan struct{}
}

func newFence(token uint64) *testFence { return &testFence{token: token, lost: make(chan struct{})} }

var errTestFenced = errors.New("test fence lost")

func (f *testFence) Check() error {
	select {
	case <-f.lost:
		return errTestFenced
	default:
		return nil
	}
}
func (f *testFence) Lost() <-chan struct{} { return f.lost }
func (f *testFence) Token() uint64         { return f.token }
func (f *testFence) lose()                 { f.once.Do(func() { close(f.lost) }) }

// setup creates the ingress stream on a fresh server and returns its URL.
func setup(t testing.TB) string {
	t.Helper()
	url := natstest.Single(t).ClientURL()
	js := jsFor(t, natstest.Connect(t, url))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := js.CreateOrUpdateStream(ctx, StreamConfig(testNames, 1)); err != nil {
		t.Fatal(err)
	}
	return url
}

func jsFor(t testing.TB, nc *nats.Conn) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// message is the event of text in conversation (channel C1, thread conv).
func message(t testing.TB, conv, id, text string) Event {
	t.Helper()
	ev, err := NewMessage(testBinding, platform.Message{ID: id, UserID: "U1", Text: text,
		Target: platform.Target{Platform: "slack", Channel: "C1", Thread: conv}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func publish(t testing.TB, p *Publisher, ev Event) Published {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	pub, err := p.Publish(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// accepted is one Accept call the recorder saw.
type accepted struct {
	conv, text string
	seq, n     uint64
	d          *Delivery
}

// recorder is a Handler that journals in memory: it records each event
// and answers per a test's rule.
type recorder struct {
	mu      sync.Mutex // guards got, changed
	got     []accepted
	changed chan struct{}
	// answer decides each Accept; nil settles everything.
	answer func(a accepted) (Result, error)
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{})} }

func (r *recorder) Accept(ctx context.Context, d *Delivery) (Result, error) {
	a := accepted{conv: d.Event.Message.Target.Thread, text: d.Event.Message.Text, seq: d.Seq, n: d.NumDelivered, d: d}
	res, err := Settled, error(nil)
	if r.answer != nil {
		res, err = r.answer(a)
	}
	if err == nil {
		r.mu.Lock()
		r.got = append(r.got, a)
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}
	return res, err
}

// waitN waits until n events were accepted and returns them.
func (r *recorder) waitN(t testing.TB, n int) []accepted {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		got, ch := append([]accepted(nil), r.got...), r.changed
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d events accepted, want %d: %+v", len(got), n, got)
		}
	}
}

func (r *recorder) texts(conv string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.got {
		if conv == "" || a.conv == conv {
			out = append(out, a.text)
		}
	}
	return out
}

// serve runs a consumer until the returned stop is called; stop returns
// Serve's error.
func serve(t testing.TB, js jetstream.JetStream, f Fence, h Handler, ackWait time.Duration) (stop func() error) {
	t.Helper()
	return serveWith(t, js, f, h, ConsumerOptions{AckWait: ackWait})
}

// serveWith is serve with more options (names and binding are the
// tests').
func serveWith(t testing.TB, js jetstream.JetStream, f Fence, h Handler, o ConsumerOptions) (stop func() error) {
	t.Helper()
	o.Names, o.Binding = testNames, testBinding.Names()
	c := NewConsumer(js, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx, f, h) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitTimeout):
				err = fmt.Errorf("Serve did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func texts(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
