package clustertest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
)

// Clock is a lease clock that moves only when the test moves it
// (natstest.Clock): give one to every host of a test (cluster.Options.Clock)
// and a lease expires when the test says so, never because a busy machine
// starved a renewal.
type Clock = natstest.Clock

// NewClock returns a clock standing at a fixed instant.
func NewClock() *Clock { return natstest.NewClock() }

// waitLimit bounds a wait on a host's lease events: nothing waits this long
// when things work.
const waitLimit = 45 * time.Second

// Leases collects one host's lease events (cluster.Options.Observe) for a
// test to wait on.
type Leases struct {
	mu      sync.Mutex // guards events, changed
	events  []kvlease.Event
	changed chan struct{}
}

// NewLeases returns an empty log.
func NewLeases() *Leases { return &Leases{changed: make(chan struct{})} }

// Observe records e; it is the host's cluster.Options.Observe.
func (l *Leases) Observe(e kvlease.Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// Has says whether an event matches.
func (l *Leases) Has(match func(kvlease.Event) bool) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if match(e) {
			return true
		}
	}
	return false
}

// Last waits for an event that matches and returns the latest that does.
func (l *Leases) Last(t testing.TB, what string, match func(kvlease.Event) bool) kvlease.Event {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		l.mu.Lock()
		for i := len(l.events) - 1; i >= 0; i-- {
			if match(l.events[i]) {
				e := l.events[i]
				l.mu.Unlock()
				return e
			}
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("no %s; lease events: %+v", what, l.events)
		}
	}
}

// Acquired waits for this host to take lease key and returns its latest
// acquisition.
func (l *Leases) Acquired(t testing.TB, key string) kvlease.Event {
	t.Helper()
	return l.Last(t, "acquisition of "+key, func(e kvlease.Event) bool { return e.Kind == kvlease.Acquired && e.Key == key })
}

// ExpireFor moves clock on to when this host may take the lease another
// host acquired (held, that host's Acquired event) and has not renewed
// since (on a clock that stood still, or cut off from NATS): it waits
// until this host saw that write and said when it would try, and advances
// the clock to that moment. The caller then waits for what the take-over
// does.
func (l *Leases) ExpireFor(t testing.TB, clock *Clock, held kvlease.Event) {
	t.Helper()
	w := l.Last(t, fmt.Sprintf("plan to take %s after revision %d", held.Key, held.Revision), func(e kvlease.Event) bool {
		return e.Kind == kvlease.Waiting && e.Key == held.Key && e.Revision >= held.Revision
	})
	clock.AdvanceTo(w.Until)
}
