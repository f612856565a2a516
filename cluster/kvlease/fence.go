package kvlease

import (
	"fmt"
	"sync"
	"time"
)

// Fence stands for one tenure of a lease on this host. Callers check it
// right before every write made on the lease's strength (a journal entry
// from the stream, an ack, a turn's start, a poller offset) and stop when
// Lost is closed. Its token orders tenures: a later tenure of the same key,
// on any host, has a larger one.
type Fence struct {
	key   string
	token uint64
	clock Clock
	took  Took // what the key held when taken; set before the fence is shared

	mu       sync.Mutex // guards the fields below
	rev      uint64     // the key's revision as last written by us
	deadline time.Time  // on our clock: past it, the lease is not trusted
	lost     bool
	why      string
	lostCh   chan struct{}
}

func newFence(key string, token, rev uint64, deadline time.Time, clock Clock) *Fence {
	return &Fence{key: key, token: token, rev: rev, deadline: deadline, clock: clock, lostCh: make(chan struct{})}
}

// Key is the lease key.
func (f *Fence) Key() string { return f.key }

// Token is the fencing token: the revision at which this host's unbroken
// possession of the lease began. A restart that takes its own lease back
// keeps the token, so what it journaled before stays its own.
func (f *Fence) Token() uint64 { return f.token }

// Revision is the key's revision as this host last wrote it.
func (f *Fence) Revision() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rev
}

// Check returns nil while the lease is held and fresh, and an error
// wrapping ErrFenced once it is not (also before Lost is closed: past the
// deadline it fails at once, even if the renewing goroutine is late).
func (f *Fence) Check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost {
		return fmt.Errorf("%w: %s (%s)", ErrFenced, f.key, f.why)
	}
	if !f.clock.Now().Before(f.deadline) {
		return fmt.Errorf("%w: %s (not renewed in time)", ErrFenced, f.key)
	}
	return nil
}

// Lost is closed when the tenure ends.
func (f *Fence) Lost() <-chan struct{} { return f.lostCh }

// Deadline is when, on this host's clock, the lease stops being trusted
// unless renewed.
func (f *Fence) Deadline() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadline
}

func (f *Fence) renewed(rev uint64, deadline time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost {
		return
	}
	f.rev = rev
	if deadline.After(f.deadline) {
		f.deadline = deadline
	}
}

// lose ends the tenure; it reports whether this call ended it.
func (f *Fence) lose(why string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost {
		return false
	}
	f.lost, f.why = true, why
	close(f.lostCh)
	return true
}
