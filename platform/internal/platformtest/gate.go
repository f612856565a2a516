package platformtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// Gate is a platform.Gate the test drives: Acquire waits until the test
// grants a tenure (Grant), and the test ends it (Tenure.Lose). Offsets
// are kept in memory, as the cluster keeps them in its bucket.
type Gate struct {
	grants chan *Tenure

	mu     sync.Mutex // guards offset, closed, acquiring, changed
	offset int64
	closed bool
	// acquiring counts the Acquire calls waiting now.
	acquiring int
	changed   chan struct{}
}

var _ platform.Gate = (*Gate)(nil)

// NewGate returns a gate with no tenure granted.
func NewGate() *Gate { return &Gate{grants: make(chan *Tenure), changed: make(chan struct{})} }

func (g *Gate) notifyLocked() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// Acquire waits for a Grant.
func (g *Gate) Acquire(ctx context.Context) (platform.Tenure, error) {
	g.mu.Lock()
	g.acquiring++
	g.notifyLocked()
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.acquiring--
		g.notifyLocked()
		g.mu.Unlock()
	}()
	select {
	case t := <-g.grants:
		return t, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close notes that the adapter gave the gate up.
func (g *Gate) Close() {
	g.mu.Lock()
	g.closed = true
	g.notifyLocked()
	g.mu.Unlock()
}

// Closed reports whether Close was called.
func (g *Gate) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// WaitAcquiring waits until the adapter waits for a tenure: it holds none.
func (g *Gate) WaitAcquiring(t testing.TB) {
	t.Helper()
	deadline := time.After(wait)
	for {
		g.mu.Lock()
		n, ch := g.acquiring, g.changed
		g.mu.Unlock()
		if n > 0 {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("the adapter never waited for a tenure")
		}
	}
}

// Grant hands the waiting Acquire a tenure and returns it.
func (g *Gate) Grant(t testing.TB) *Tenure {
	t.Helper()
	tn := &Tenure{g: g, lost: make(chan struct{})}
	select {
	case g.grants <- tn:
		return tn
	case <-time.After(wait):
		t.Fatal("the adapter never asked for a tenure")
		return nil
	}
}

// Offset is the stored offset.
func (g *Gate) Offset() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.offset
}

// Tenure is one tenure of a Gate.
type Tenure struct {
	g    *Gate
	once sync.Once
	lost chan struct{}

	mu    sync.Mutex // guards saves
	saves []int64
}

var _ platform.Tenure = (*Tenure)(nil)

var errLost = errors.New("test: tenure lost")

// Lose ends the tenure.
func (t *Tenure) Lose() { t.once.Do(func() { close(t.lost) }) }

func (t *Tenure) Lost() <-chan struct{} { return t.lost }

func (t *Tenure) Check() error {
	select {
	case <-t.lost:
		return errors.Join(platform.ErrTenureLost, errLost)
	default:
		return nil
	}
}

func (t *Tenure) Offset(context.Context) (int64, error) { return t.g.Offset(), nil }

// SaveOffset stores next, refused once the tenure is lost.
func (t *Tenure) SaveOffset(_ context.Context, next int64) error {
	if err := t.Check(); err != nil {
		return err
	}
	t.mu.Lock()
	t.saves = append(t.saves, next)
	t.mu.Unlock()
	t.g.mu.Lock()
	t.g.offset = max(t.g.offset, next)
	t.g.notifyLocked()
	t.g.mu.Unlock()
	return nil
}

// Saves are the offsets this tenure stored, in order.
func (t *Tenure) Saves() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]int64(nil), t.saves...)
}

// WaitOffset waits until the stored offset is at least n.
func (g *Gate) WaitOffset(t testing.TB, n int64) {
	t.Helper()
	deadline := time.After(wait)
	for {
		g.mu.Lock()
		off, ch := g.offset, g.changed
		g.mu.Unlock()
		if off >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("the stored offset is %d, want %d", off, n)
		}
	}
}
