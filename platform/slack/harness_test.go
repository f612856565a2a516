package slack

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// logSink collects log messages so tests can wait for one.
type logSink struct {
	mu      sync.Mutex // guards lines and changed
	lines   []string
	changed chan struct{}
}

func (s *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (s *logSink) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	s.lines = append(s.lines, b.String())
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}
func (s *logSink) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *logSink) WithGroup(string) slog.Handler      { return s }

func (s *logSink) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func (s *logSink) waitFor(t *testing.T, substr string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		found := strings.Contains(strings.Join(s.lines, "\n"), substr)
		ch := s.changed
		s.mu.Unlock()
		if found {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for log %q; logs:\n%s", substr, s.all())
		}
	}
}

// env is a running adapter wired to a fake Slack.
type env struct {
	t      *testing.T
	a      *Adapter
	f      *fakeslack.Server
	rec    *platformtest.Handler
	logs   *logSink
	conn   *fakeslack.Conn
	sleeps chan time.Duration // every wait the adapter asked for
	n      int                // envelope counter
}

func testConfig(f *fakeslack.Server) Config {
	return Config{
		Name:           "slack-test",
		BotToken:       fakeslack.BotToken,
		AppToken:       fakeslack.AppToken,
		APIURL:         f.APIURL(),
		EditsPerMinute: 60000,
		EditBurst:      100,
		EditInterval:   time.Microsecond,
		ReconnectMin:   time.Millisecond,
		ReconnectMax:   10 * time.Millisecond,
	}
}

// newAdapter builds an adapter whose waits are recorded and shortened a
// thousandfold, so a one-second Retry-After costs a millisecond.
func newAdapter(t *testing.T, cfg Config) (*Adapter, *logSink, chan time.Duration) {
	t.Helper()
	logs := &logSink{changed: make(chan struct{})}
	a, err := New(cfg, slog.New(logs))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	sleeps := make(chan time.Duration, 1000)
	a.wire.sleep = func(ctx context.Context, d time.Duration) error {
		select {
		case sleeps <- d:
		default:
		}
		return backoff.Sleep(ctx, d/1000)
	}
	return a, logs, sleeps
}

// startEnv runs an adapter against a fresh fake and waits for the socket.
func startEnv(t *testing.T) *env {
	t.Helper()
	f := fakeslack.New(t)
	return startEnvWith(t, f, testConfig(f))
}

func startEnvWith(t *testing.T, f *fakeslack.Server, cfg Config) *env {
	t.Helper()
	a, logs, sleeps := newAdapter(t, cfg)
	e := &env{t: t, a: a, f: f, rec: platformtest.NewHandler(), logs: logs, sleeps: sleeps}
	// Cleanups run last first: this one runs once Run below has returned.
	t.Cleanup(func() {
		if got := a.Status(); got.State != platform.Stopped {
			t.Errorf("Status after stop = %q, want stopped", got)
		}
	})
	platformtest.Run(t, 10*time.Second, func(ctx context.Context) error { return a.Run(ctx, e.rec) })
	e.conn = f.WaitConn(t, 1)
	logs.waitFor(t, "Slack connected")
	return e
}

// deliver sends an event over the current socket and waits for its ack.
func (e *env) deliver(eventID string, retry int, event map[string]any) {
	e.t.Helper()
	e.n++
	envID := "env-" + eventID + "-" + string(rune('a'+e.n%26)) + strings.Repeat("x", e.n/26)
	if err := e.conn.Send(fakeslack.EventEnvelope(envID, eventID, retry, event)); err != nil {
		e.t.Fatalf("sending envelope: %v", err)
	}
	e.f.WaitAck(e.t, envID)
}

// sentinel delivers a plain message and returns it, proving that anything
// delivered before it and not yet received was dropped (delivery is in
// order).
func (e *env) sentinel(ts string) {
	e.t.Helper()
	e.deliver("EvSentinel"+ts, 0, fakeslack.MsgEvent("CSENT", ts, "U1", "sentinel", nil))
	m := e.rec.Message(e.t)
	if m.Text != "sentinel" || m.Target.Channel != "CSENT" {
		e.t.Fatalf("got unexpected message before the sentinel: %+v", m)
	}
}
