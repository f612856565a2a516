package kvlease

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

const testTTL = 15 * time.Second

// waitTimeout bounds every wait on an event: generous, since the machine
// may be busy; nothing waits this long when things work.
const waitTimeout = 20 * time.Second

// eventLog collects one host's lease events for tests to wait on.
type eventLog struct {
	mu      sync.Mutex // guards events, changed
	events  []Event
	changed chan struct{}
}

func newEventLog() *eventLog { return &eventLog{changed: make(chan struct{})} }

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// waitFor returns the first event after index from that matches, and its
// index; it fails the test after waitTimeout.
func (l *eventLog) waitFor(t *testing.T, from int, what string, match func(Event) bool) (Event, int) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		l.mu.Lock()
		for i := from; i < len(l.events); i++ {
			if match(l.events[i]) {
				e := l.events[i]
				l.mu.Unlock()
				return e, i
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no %s event after #%d; events: %+v", what, from, l.events)
		}
	}
}

func (l *eventLog) has(match func(Event) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if match(e) {
			return true
		}
	}
	return false
}

func kind(k EventKind, key string) func(Event) bool {
	return func(e Event) bool { return e.Kind == k && e.Key == key }
}

// testHost is one cc-connect's lease manager with its own clock and
// connection.
type testHost struct {
	name   string
	m      *Manager
	clock  *natstest.Clock
	log    *eventLog
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

// testBucket creates a fresh bucket on a fresh server.
func testBucket(t *testing.T, urls ...string) []string {
	t.Helper()
	if len(urls) == 0 {
		urls = []string{natstest.Single(t).ClientURL()}
	}
	nc := natstest.Connect(t, urls...)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := js.CreateOrUpdateKeyValue(ctx, BucketConfig("leases", len(urls))); err != nil {
		t.Fatal(err)
	}
	return urls
}

// startHost runs a manager as host name with state id stateID.
func startHost(t *testing.T, urls []string, name, stateID string) *testHost {
	t.Helper()
	nc := natstest.Connect(t, urls...)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	kv, err := js.KeyValue(ctx, "leases")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHost{name: name, clock: natstest.NewClock(), log: newEventLog(), nc: nc, done: make(chan struct{})}
	h.m = New(kv, Options{Host: name, StateID: stateID, TTL: testTTL, Clock: h.clock, Observe: h.log.add, Version: "test"})
	runCtx, runCancel := context.WithCancel(context.Background())
	h.cancel = runCancel
	go func() {
		defer close(h.done)
		_ = h.m.Run(runCtx)
	}()
	t.Cleanup(h.stop)
	return h
}

// stop ends the manager without releasing anything, as a killed process
// would leave its leases.
func (h *testHost) stop() {
	h.cancel()
	<-h.done
}

func (h *testHost) String() string { return fmt.Sprintf("host %s", h.name) }
