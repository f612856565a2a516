package kvlease

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

// sameNameError is what a host logs when another cc-connect runs with its
// cluster.host.
const sameNameError = "Another cc-connect runs with this cluster.host: give each host its own name"

// logWatch is a log that closes seen once sameNameError was written.
type logWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	seen chan struct{}
	once sync.Once
}

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), sameNameError) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// TestTwoHostsWithOneNameEachLogAnError: two running cc-connects given one
// cluster.host (another state dir each) both log the error that names the
// mistake (docs/cluster.md, "Two running cc-connects with one
// cluster.host each log an error"), once their heartbeats meet.
func TestTwoHostsWithOneNameEachLogAnError(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	type run struct {
		clock *natstest.Clock
		log   *logWatch
	}
	var runs []run
	for _, state := range []string{"state-1", "state-2"} {
		nc := natstest.Connect(t, urls...)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		kv, err := js.KeyValue(ctx, "leases")
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		r := run{clock: natstest.NewClock(), log: &logWatch{seen: make(chan struct{})}}
		m := New(kv, Options{Host: "a", StateID: state, TTL: testTTL, Clock: r.clock, Version: "test",
			Log: slog.New(slog.NewJSONHandler(r.log, nil))})
		rctx, rcancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = m.Run(rctx)
		}()
		t.Cleanup(func() { rcancel(); <-done })
		runs = append(runs, r)
	}
	// Heartbeats come every TTL/3 of each host's own clock, which moves
	// only when the test moves it: the clocks are moved on until both
	// hosts have seen the other's record between two of their own.
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i, r := range runs {
		for waiting := true; waiting; {
			select {
			case <-r.log.seen:
				waiting = false
			case <-tick.C:
				for _, x := range runs {
					x.clock.Advance(testTTL / 3)
				}
			case <-deadline:
				r.log.mu.Lock()
				text := r.log.buf.String()
				r.log.mu.Unlock()
				t.Fatalf("host %d never logged %q; its log:\n%s", i+1, sameNameError, text)
			}
		}
	}
}
