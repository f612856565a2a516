package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// recorder is a platform.Handler that hands every message to the test.
// Unlike platformtest.Handler it can refuse messages (err) and refuses
// button presses, as the engine does for a terminal, which has none.
type recorder struct {
	msgs chan platform.Message
	err  error // returned by HandleMessage
}

func newRecorder() *recorder { return &recorder{msgs: make(chan platform.Message, 16)} }

func (r *recorder) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	r.msgs <- m
	if r.err != nil {
		return platform.Result{}, r.err
	}
	return platform.Result{Status: platform.Queued}, nil
}

func (r *recorder) HandleAction(ctx context.Context, a platform.Action) error {
	return errors.New("the terminal has no buttons")
}

func (r *recorder) next(t *testing.T) platform.Message {
	t.Helper()
	select {
	case m := <-r.msgs:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message handled")
		return platform.Message{}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type harness struct {
	a      *Adapter
	in     *io.PipeWriter
	rec    *recorder
	status *syncBuffer
	eof    chan struct{}
	cancel context.CancelFunc
	done   chan error
}

func start(t *testing.T, out io.Writer, onEOF func(context.Context)) *harness {
	t.Helper()
	inR, inW := io.Pipe()
	h := &harness{in: inW, rec: newRecorder(), status: &syncBuffer{}, eof: make(chan struct{}), done: make(chan error, 1)}
	clock := time.Unix(1700000000, 42)
	a, err := New(Config{
		Name:        "tty",
		In:          inR,
		Out:         out,
		Status:      h.status,
		User:        "alice",
		Interactive: true,
		Now:         func() time.Time { return clock },
		OnEOF: func(ctx context.Context) {
			close(h.eof)
			if onEOF != nil {
				onEOF(ctx)
			}
		},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.a = a
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- a.Run(ctx, h.rec) }()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		<-h.done
	})
	return h
}

func (h *harness) write(t *testing.T, s string) {
	t.Helper()
	if _, err := io.WriteString(h.in, s); err != nil {
		t.Fatal(err)
	}
}

func TestLinesBecomeMessages(t *testing.T) {
	t.Parallel()
	h := start(t, io.Discard, nil)
	h.write(t, "hello there\n\n   \n  !status  \r\nfirst \\\nsecond\\\n\nthird\n")
	want := []string{"hello there", "!status", "first \nsecond\n", "third"}
	ids := map[string]bool{}
	for i, text := range want {
		m := h.rec.next(t)
		if m.Text != strings.TrimSpace(text) {
			t.Errorf("message %d text = %q, want %q", i, m.Text, strings.TrimSpace(text))
		}
		wantTarget := platform.Target{Platform: "tty", Channel: "local", MessageID: m.ID}
		if m.Target != wantTarget || m.UserID != "alice" || m.UserName != "alice" ||
			!m.IsDM || !m.Mentioned || m.IsBot || m.Received.IsZero() {
			t.Errorf("message %d = %+v", i, m)
		}
		if !strings.HasPrefix(m.ID, "local-1700000000000000042-") {
			t.Errorf("message %d id = %q, want local-<start nanos>-<n>", i, m.ID)
		}
		if ids[m.ID] {
			t.Errorf("message id %q repeated", m.ID)
		}
		ids[m.ID] = true
	}
	if got := h.a.Status(); got.State != platform.Connected {
		t.Errorf("Status() = %v", got)
	}
	if !strings.Contains(h.status.String(), "Ctrl-D to finish") {
		t.Errorf("no usage hint on the status writer: %q", h.status.String())
	}
}

func TestMessageIDsAreMonotonic(t *testing.T) {
	t.Parallel()
	h := start(t, io.Discard, nil)
	h.write(t, "a\nb\nc\n")
	var ids []string
	for range 3 {
		ids = append(ids, h.rec.next(t).ID)
	}
	want := []string{"local-1700000000000000042-1", "local-1700000000000000042-2", "local-1700000000000000042-3"}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("ids = %q, want %q", ids, want)
			break
		}
	}
}

func TestEOFCallsHookThenWaitsForCancel(t *testing.T) {
	t.Parallel()
	hookCtx := make(chan context.Context, 1)
	h := start(t, io.Discard, func(ctx context.Context) { hookCtx <- ctx })
	h.write(t, "last words") // no newline before EOF
	h.in.Close()
	if m := h.rec.next(t); m.Text != "last words" {
		t.Errorf("text = %q", m.Text)
	}
	select {
	case <-h.eof:
	case <-time.After(10 * time.Second):
		t.Fatal("OnEOF not called at end of input")
	}
	if ctx := <-hookCtx; ctx == nil || ctx.Err() != nil {
		t.Error("OnEOF got no live context")
	}
	select {
	case err := <-h.done:
		t.Fatalf("Run returned before its context ended: %v", err)
	default:
	}
	if got := h.a.Status(); got != (platform.ConnStatus{State: platform.Stopped, Detail: "input closed"}) {
		t.Errorf("Status() = %v, want stopped: input closed", got)
	}
	h.cancel()
	if err := <-h.done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	h.done <- nil // for Cleanup
}

func TestCancelStopsReading(t *testing.T) {
	t.Parallel()
	h := start(t, io.Discard, nil)
	h.write(t, "one\n")
	h.rec.next(t)
	h.cancel()
	if err := <-h.done; err != nil {
		t.Errorf("Run = %v, want nil", err)
	}
	h.done <- nil // for Cleanup
	// The reader stays blocked in Read until the next line or EOF; that
	// line must not reach the handler now that Run has returned.
	h.write(t, "too late\n")
	select {
	case <-h.a.readDone:
	case <-time.After(10 * time.Second):
		t.Fatal("reader goroutine did not end after the next line")
	}
	select {
	case m := <-h.rec.msgs:
		t.Errorf("message handled after cancel: %q", m.Text)
	default:
	}
	select {
	case <-h.eof:
		t.Error("OnEOF called after cancel")
	default:
	}
}

func TestHandlerErrorGoesToStatus(t *testing.T) {
	t.Parallel()
	h := start(t, io.Discard, nil)
	h.rec.err = errors.New("engine stopped")
	h.write(t, "hi\n")
	h.rec.next(t)
	h.write(t, "again\n") // handled after the first returned
	h.rec.next(t)
	if !strings.Contains(h.status.String(), "message not accepted: engine stopped") {
		t.Errorf("status = %q", h.status.String())
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	outR, outW := io.Pipe()
	h := start(t, outW, nil)
	to := platform.Target{Platform: "tty", Channel: "local"}
	replies := []string{"one line", "line 1\nline 2\n\n```go\nx := 1\n```", "trailing newline\n"}
	got := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(outR))
		got <- string(b)
	}()
	var last platform.Target
	for _, r := range replies {
		posted, err := h.a.Send(context.Background(), to, r)
		if err != nil {
			t.Fatal(err)
		}
		if posted.MessageID == "" || posted.MessageID == last.MessageID || posted.Channel != "local" || posted.Platform != "tty" {
			t.Errorf("Send returned %+v", posted)
		}
		last = posted
	}
	outW.Close()
	// Piped: the Markdown's marks go, code is indented, no escape code.
	want := "one line\n\nline 1\nline 2\n\n    x := 1\n\ntrailing newline\n\n"
	if s := <-got; s != want {
		t.Errorf("stdout = %q, want %q", s, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.a.Send(ctx, to, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("Send with a cancelled context = %v", err)
	}
}

func TestConcurrentSendsDoNotInterleave(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	h := start(t, out, nil)
	var wg sync.WaitGroup
	reply := strings.Repeat("x", 1000) + "\n" + strings.Repeat("y", 1000)
	for range 20 {
		wg.Go(func() {
			if _, err := h.a.Send(context.Background(), platform.Target{Channel: "local"}, reply); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, want := out.String(), strings.Repeat(reply+"\n\n", 20); got != want {
		t.Error("concurrent replies interleaved")
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no name", Config{In: strings.NewReader(""), Out: io.Discard}},
		{"no input", Config{Name: "x", Out: io.Discard}},
		{"no output", Config{Name: "x", In: strings.NewReader("")}},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg, nil); err == nil {
			t.Errorf("%s: New succeeded", tt.name)
		}
	}
	a, err := New(Config{Name: "x", In: strings.NewReader(""), Out: io.Discard}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "x" || a.cfg.User != "local" || a.Status().State != platform.NotStarted {
		t.Errorf("defaults: name %q user %q status %v", a.Name(), a.cfg.User, a.Status())
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	h := start(t, io.Discard, nil)
	// Wait until the first Run is reading.
	h.write(t, "x\n")
	h.rec.next(t)
	if err := h.a.Run(context.Background(), h.rec); err == nil {
		t.Error("second Run succeeded")
	}
}

// The terminal has no buttons: the engine asks questions as a numbered
// list. Piped output is not streamed (a reply is printed once, whole); a
// terminal streams it. Reactions are how the adapter learns a turn's start
// and end (the status line, the exit code).
func TestCapabilities(t *testing.T) {
	for _, terminal := range []bool{false, true} {
		a, err := New(Config{Name: "local", In: strings.NewReader(""), Out: io.Discard, Terminal: terminal}, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := platform.CapabilitiesOf(a)
		want := platform.Capabilities{MessageLimit: c.MessageLimit, EditInterval: c.EditInterval, History: true, Files: true,
			Reacts: true, Edits: terminal}
		if c != want || c.MessageLimit < 4000 {
			t.Errorf("terminal %v: capabilities = %+v", terminal, c)
		}
	}
}
