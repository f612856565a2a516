package kvlease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errDropped ends a claim's contention: Drop was called.
var errDropped = errors.New("claim dropped")

// ErrStopped: the manager stopped (its Run returned), so the claim will
// never be held again.
var ErrStopped = errors.New("lease manager stopped")

// Claim is this host's interest in one lease key. Its goroutine (run by
// the Manager) contends for the key while it is not held and renews it
// while it is.
type Claim struct {
	m    *Manager
	key  string
	role Role
	rank int

	wake     chan struct{} // the key's observation changed (cap 1)
	dropCh   chan struct{} // closed by Drop
	dropOnce sync.Once
	handOver atomic.Bool   // the release Drop makes is a hand-over (HandOver)
	done     chan struct{} // closed when run returns
	started  bool          // guarded by m.mu
	cancel   context.CancelFunc

	mu      sync.Mutex    // guards cur and changed
	cur     *Fence        // the tenure held now, or nil
	changed chan struct{} // closed and replaced whenever cur changes
}

func newClaim(m *Manager, key string, role Role, rank int) *Claim {
	return &Claim{m: m, key: key, role: role, rank: rank, wake: make(chan struct{}, 1),
		dropCh: make(chan struct{}), done: make(chan struct{}), changed: make(chan struct{})}
}

// Key is the lease key.
func (c *Claim) Key() string { return c.key }

// Wait blocks until this host holds the lease and returns the tenure's
// fence. After the fence is lost, Wait blocks again until the next tenure.
func (c *Claim) Wait(ctx context.Context) (*Fence, error) {
	for {
		c.mu.Lock()
		f, ch := c.cur, c.changed
		c.mu.Unlock()
		if f != nil && f.Check() == nil {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.dropCh:
			return nil, errDropped
		case <-c.done:
			return nil, ErrStopped
		case <-f.lostOrNil():
		case <-ch:
		}
	}
}

func (f *Fence) lostOrNil() <-chan struct{} {
	if f == nil {
		return nil
	}
	return f.lostCh
}

// Current is the fence held now, or nil.
func (c *Claim) Current() *Fence {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.cur.Check() == nil {
		return c.cur
	}
	return nil
}

func (c *Claim) set(f *Fence) {
	c.mu.Lock()
	c.cur = f
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// Drop stops contending for the key and releases it if held, so that the
// next eligible host takes it at once (moving a binding by hand). It
// returns once the claim has stopped, or ctx ends.
func (c *Claim) Drop(ctx context.Context) error {
	c.dropOnce.Do(func() { close(c.dropCh) })
	c.m.mu.Lock()
	started := c.started
	if c.m.claims[c.key] == c {
		delete(c.m.claims, c.key)
	}
	c.m.mu.Unlock()
	if !started {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HandOver is Drop for a holder that stops or is drained on purpose: the
// key is written free and marked handed over, so that its standbys take
// it at once (the first at once, each later one TTL/5 after the one
// before) instead of after a TTL, and the owner, as always, at once.
func (c *Claim) HandOver(ctx context.Context) error {
	c.handOver.Store(true)
	return c.Drop(ctx)
}

func (c *Claim) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Claim) run(ctx context.Context) {
	defer close(c.done)
	for {
		f, err := c.contend(ctx)
		if err != nil {
			return
		}
		c.set(f)
		c.m.event(Event{Key: c.key, Kind: Acquired, Revision: f.Revision(), Holder: c.m.me.host, Took: f.took})
		how := c.hold(ctx, f)
		c.set(nil)
		switch how {
		case holdReleased:
			c.release(f)
			return
		case holdStopped:
			return
		}
	}
}

// margin is how long before a TTL has passed since its last renewal the
// holder stops trusting its lease: the time a caller may take between
// Fence.Check and the write it guards.
func (c *Claim) margin() time.Duration { return c.m.o.TTL / 5 }

func (c *Claim) retryDelay() time.Duration { return c.m.o.TTL / 10 }

// rpcTimeout bounds one write of the key.
func (c *Claim) rpcTimeout() time.Duration { return max(c.m.o.TTL/3, 100*time.Millisecond) }

// readyAt says when this host may take the key as observed (never in the
// past means now).
func (c *Claim) readyAt(o observation) time.Time {
	ttl := c.m.o.TTL
	grace := time.Duration(0)
	if c.role == Standby {
		grace = time.Duration(c.rank+1) * ttl / 5
	}
	switch {
	case o.val.heldBy(c.m.me):
		// An earlier run of this cc-connect (dead: the state dir is
		// locked while one runs), or this run's own tenure that lapsed
		// without anybody writing since: the compare-and-set below fails
		// if anybody did.
		return time.Time{}
	case o.val.free() && c.role != Standby:
		return time.Time{}
	case o.val != nil && o.val.free() && o.val.HandOver:
		// Handed over on purpose: nobody holds it, and nobody needs
		// waiting out; the standbys come in their rank's order.
		return o.seenAt.Add(time.Duration(c.rank) * ttl / 5)
	}
	// Held by another host (or free, for a standby): only once this
	// revision has stood unchanged for a whole TTL on our clock.
	return o.seenAt.Add(ttl + grace)
}

func (c *Claim) contend(ctx context.Context) (*Fence, error) {
	m := c.m
	for {
		o := m.observed(c.key)
		if !o.known {
			if err := m.refresh(ctx, c.key); err != nil {
				if werr := c.sleepUntil(ctx, m.clock.Now().Add(c.retryDelay())); werr != nil {
					return nil, werr
				}
			}
			continue
		}
		now := m.clock.Now()
		if at := c.readyAt(o); at.After(now) {
			m.event(Event{Key: c.key, Kind: Waiting, Revision: o.rev, Holder: holderName(o.val), Until: at})
			if err := c.sleepUntil(ctx, at); err != nil {
				return nil, err
			}
			continue
		}
		f, err := c.acquire(ctx, o)
		switch {
		case f != nil:
			return f, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			// Somebody wrote it since we looked: look again.
			if rerr := m.refresh(ctx, c.key); rerr == nil {
				continue
			}
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		m.log.Debug("Taking a lease failed; retrying", "lease", c.key, "error", err)
		if err := c.sleepUntil(ctx, m.clock.Now().Add(c.retryDelay())); err != nil {
			return nil, err
		}
	}
}

// sleepUntil waits until at on the host's clock, or until the key changes.
func (c *Claim) sleepUntil(ctx context.Context, at time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-c.dropCh:
		return errDropped
	case <-c.wake:
		return nil
	case <-c.m.clock.At(at):
		return nil
	}
}

func (c *Claim) value(tenure uint64) *Value {
	now := c.m.clock.Now()
	return &Value{V: valueVersion, Holder: c.m.me.host, StateID: c.m.me.stateID, Incarnation: c.m.me.incarnation,
		Tenure: tenure, TTLMillis: c.m.o.TTL.Milliseconds(), Acquired: now, Renewed: now}
}

func (c *Claim) acquire(ctx context.Context, o observation) (*Fence, error) {
	m := c.m
	var tenure uint64
	if o.val.heldBy(m.me) {
		tenure = o.val.tenureAt(o.rev) // unbroken: nobody else held it since
	}
	v := c.value(tenure)
	sent := m.clock.Now()
	rctx, cancel := context.WithTimeout(ctx, c.rpcTimeout())
	defer cancel()
	var (
		rev uint64
		err error
	)
	if o.val == nil {
		rev, err = m.kv.Create(rctx, c.key, v.marshal())
	} else {
		rev, err = m.kv.Update(rctx, c.key, v.marshal(), o.rev)
	}
	if err != nil {
		return nil, err
	}
	m.learn(c.key, rev, v)
	f := newFence(c.key, v.tenureAt(rev), rev, sent.Add(m.o.TTL-c.margin()), m.clock)
	f.took = took(o.val, m.me)
	m.log.Info("Lease acquired", "lease", c.key, "role", c.role.String(), "token", f.Token(), "revision", rev,
		"took", string(f.took))
	return f, nil
}

// took says what the key held, v as observed, when this host (me) took
// it: the log tells a hand-over from a takeover after an expiry.
func took(v *Value, me identity) Took {
	switch {
	case v == nil:
		return TookNew
	case v.heldBy(me):
		return TookOwn
	case v.free() && v.HandOver:
		return TookHandedOver
	case v.free():
		return TookReleased
	}
	return TookExpired
}

type holdEnd int

const (
	holdLost holdEnd = iota
	holdReleased
	holdStopped
)

// hold renews f every TTL/3 until it is lost, dropped, or ctx ends.
func (c *Claim) hold(ctx context.Context, f *Fence) holdEnd {
	m := c.m
	ttl := m.o.TTL
	// Renew a third of a TTL after the acquiring write was sent (its
	// deadline tells when), however late this goroutine got here.
	next := f.Deadline().Add(-(ttl - c.margin())).Add(ttl / 3)
	var unconfirmed time.Time // the oldest renewal sent but not confirmed
	lose := func(why string) holdEnd {
		if f.lose(why) {
			m.log.Warn("Lease lost", "lease", c.key, "token", f.Token(), "why", why)
			m.event(Event{Key: c.key, Kind: Lost, Revision: f.Revision()})
		}
		return holdLost
	}
	for {
		wakeAt := next
		if dl := f.Deadline(); dl.Before(wakeAt) {
			wakeAt = dl
		}
		select {
		case <-ctx.Done():
			return holdStopped
		case <-c.dropCh:
			return holdReleased
		case <-c.wake:
			o := m.observed(c.key)
			if o.rev > f.Revision() && !o.val.sameRun(m.me) {
				return lose("written by " + holderName(o.val))
			}
			continue
		case <-m.clock.At(wakeAt):
		}
		now := m.clock.Now()
		if !now.Before(f.Deadline()) {
			return lose("not renewed in time")
		}
		if now.Before(next) {
			continue
		}
		if unconfirmed.IsZero() {
			unconfirmed = now
		}
		v := c.value(f.Token())
		timeout := min(c.rpcTimeout(), f.Deadline().Sub(now))
		rctx, cancel := context.WithTimeout(ctx, timeout)
		rev, err := m.kv.Update(rctx, c.key, v.marshal(), f.Revision())
		cancel()
		switch {
		case err == nil:
			f.renewed(rev, now.Add(ttl-c.margin()))
			m.learn(c.key, rev, v)
			unconfirmed, next = time.Time{}, now.Add(ttl/3)
			m.event(Event{Key: c.key, Kind: Renewed, Revision: rev, Holder: m.me.host})
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			// Perhaps an earlier renewal of ours landed and its answer was
			// lost; if so, it was sent no earlier than unconfirmed.
			if rerr := m.refresh(ctx, c.key); rerr != nil {
				next = now.Add(c.retryDelay())
				continue
			}
			o := m.observed(c.key)
			if !o.val.sameRun(m.me) || o.val.tenureAt(o.rev) != f.Token() {
				return lose("written by " + holderName(o.val))
			}
			f.renewed(o.rev, unconfirmed.Add(ttl-c.margin()))
			unconfirmed, next = time.Time{}, now.Add(ttl/3)
		case ctx.Err() != nil:
			return holdStopped
		default:
			m.log.Debug("Renewing a lease failed; retrying", "lease", c.key, "error", err)
			next = now.Add(c.retryDelay())
		}
	}
}

func holderName(v *Value) string {
	if v == nil || v.Holder == "" {
		return "nobody (released or deleted)"
	}
	return v.Holder
}

// release writes the key free, so that the next eligible host takes it
// without waiting for it to expire.
func (c *Claim) release(f *Fence) {
	m := c.m
	f.lose("released")
	v := &Value{V: valueVersion, ReleasedBy: m.me.host, TTLMillis: m.o.TTL.Milliseconds(), HandOver: c.handOver.Load()}
	ctx, cancel := context.WithTimeout(context.Background(), c.rpcTimeout())
	defer cancel()
	rev, err := m.kv.Update(ctx, c.key, v.marshal(), f.Revision())
	if err != nil {
		m.log.Warn("Releasing a lease failed; it expires instead", "lease", c.key, "error", err)
		return
	}
	m.learn(c.key, rev, v)
	m.log.Info("Lease released", "lease", c.key, "token", f.Token(), "hand_over", v.HandOver)
	m.event(Event{Key: c.key, Kind: Released, Revision: rev})
}

// ReleaseIfMine writes key free if an earlier run of this cc-connect (same
// host, same state dir) holds it: for a lease this host no longer
// contends for (a binding moved to another host), so that its new owner
// need not wait for it to expire. It must not be called for a key this
// run claims. It reports whether it released the key.
func (m *Manager) ReleaseIfMine(ctx context.Context, key string) (bool, error) {
	e, err := m.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if v := entryValue(e); !v.heldBy(m.me) {
		return false, nil
	}
	v := &Value{V: valueVersion, ReleasedBy: m.me.host, TTLMillis: m.o.TTL.Milliseconds()}
	if _, err := m.kv.Update(ctx, key, v.marshal(), e.Revision()); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, nil // written meanwhile: not ours to release any more
		}
		return false, err
	}
	m.log.Info("Released a lease this host no longer serves", "lease", key)
	return true, nil
}
