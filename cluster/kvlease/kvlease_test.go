package kvlease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

const key = "lease.binding.slack_C1"

func waitFence(t *testing.T, c *Claim) *Fence {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	f, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("waiting for %s: %v", c.Key(), err)
	}
	return f
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("%s did not happen", what)
	}
}

// TestLeaseLifecycle: the owner takes a free lease at once and renews it;
// when it dies, the standby plans to take it exactly one TTL (plus its
// grace) after it last saw the lease change, on its own clock, and then
// does, with a larger token.
func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	b := startHost(t, urls, "b", "state-b")

	fa := waitFence(t, a.m.Claim(key, Owner, 0))
	if err := fa.Check(); err != nil {
		t.Fatalf("fresh fence: %v", err)
	}
	if fa.Token() != fa.Revision() {
		t.Errorf("a first tenure's token %d is not its revision %d", fa.Token(), fa.Revision())
	}
	bc := b.m.Claim(key, Standby, 0)
	w, i := b.log.waitFor(t, 0, "waiting", kind(Waiting, key))
	if w.Revision != fa.Revision() {
		t.Fatalf("b waits on revision %d, a holds %d", w.Revision, fa.Revision())
	}

	// a renews: same token, new revision, later deadline; b plans anew.
	before := fa.Deadline()
	a.clock.Advance(testTTL / 3)
	r, _ := a.log.waitFor(t, 0, "renewed", kind(Renewed, key))
	if fa.Token() != w.Revision || fa.Revision() != r.Revision || !fa.Deadline().After(before) {
		t.Fatalf("after renewal: token %d (was %d), revision %d (renewed %d), deadline %v (was %v)",
			fa.Token(), w.Revision, fa.Revision(), r.Revision, fa.Deadline(), before)
	}
	w, i = b.log.waitFor(t, i+1, "waiting on the renewal", func(e Event) bool {
		return e.Kind == Waiting && e.Revision == r.Revision
	})
	if want := b.clock.Now().Add(testTTL + testTTL/5); !w.Until.Equal(want) {
		t.Errorf("b plans to take over at %v, want one TTL plus its grace after it saw the renewal (%v)", w.Until, want)
	}

	a.stop() // dies: no release
	b.clock.Advance(w.Until.Sub(b.clock.Now()))
	fb := waitFence(t, bc)
	if fb.Token() <= fa.Token() {
		t.Errorf("b's token %d is not after a's %d", fb.Token(), fa.Token())
	}
	if err := fb.Check(); err != nil {
		t.Errorf("b's new fence does not check: %v", err)
	}
}

// TestHolderFenceExpiresWhenCutOff: cut off from NATS, the
// holder's fence fails its check TTL/5 before a TTL has passed since its
// last renewal was sent, and Lost is closed; nobody else could have taken
// the lease yet.
func TestHolderFenceExpiresWhenCutOff(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	f := waitFence(t, a.m.Claim(key, Owner, 0))
	acquiredAt := a.clock.Now()
	a.nc.Close() // every renewal now fails at once

	a.clock.Advance(testTTL - testTTL/5 - time.Millisecond)
	if err := f.Check(); err != nil {
		t.Fatalf("fence failed before its deadline: %v", err)
	}
	a.clock.Advance(time.Millisecond)
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Fatalf("fence %v at %v after acquisition; want ErrFenced", err, a.clock.Now().Sub(acquiredAt))
	}
	waitClosed(t, f.Lost(), "Lost")
	a.log.waitFor(t, 0, "lost", kind(Lost, key))
}

// TestReturningOwnerDoesNotStealBack: while the standby that took over
// keeps renewing, the configured owner, back again, only watches.
func TestReturningOwnerDoesNotStealBack(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	b := startHost(t, urls, "b", "state-b")
	fb := waitFence(t, b.m.Claim(key, Candidate, 0)) // b holds it, as after a failover
	a := startHost(t, urls, "a", "state-a")
	ac := a.m.Claim(key, Owner, 0)
	_, i := a.log.waitFor(t, 0, "waiting", kind(Waiting, key))
	bi := -1
	for range 8 { // 8 × TTL/2 on a's clock: four TTLs
		b.clock.Advance(testTTL / 3)
		var r Event
		r, bi = b.log.waitFor(t, bi+1, "renewed", kind(Renewed, key))
		_, i = a.log.waitFor(t, i+1, "a waiting on b's renewal", func(e Event) bool {
			return e.Kind == Waiting && e.Revision == r.Revision
		})
		a.clock.Advance(testTTL / 2)
	}
	if ac.Current() != nil || a.log.has(kind(Acquired, key)) {
		t.Fatal("the returning owner took the lease from the standby that renews it")
	}
	if err := fb.Check(); err != nil {
		t.Fatalf("the standby lost its lease: %v", err)
	}
}

// TestRestartReclaimsOwnLeaseAtOnce: a restart of the same cc-connect
// (same host, same state dir) takes its lease back without waiting, with
// the same token, and a standby watching gets nothing; the same host name
// with another state dir must wait like anyone else.
func TestRestartReclaimsOwnLeaseAtOnce(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	f1 := waitFence(t, a.m.Claim(key, Owner, 0))
	a.stop()

	impostor := startHost(t, urls, "a", "state-other")
	impostor.m.Claim(key, Owner, 0)
	impostor.log.waitFor(t, 0, "impostor waiting", kind(Waiting, key))

	a2 := startHost(t, urls, "a", "state-a")
	f2 := waitFence(t, a2.m.Claim(key, Owner, 0))
	if f2.Token() != f1.Token() {
		t.Errorf("token after restart %d, want the unbroken tenure's %d", f2.Token(), f1.Token())
	}
	if f2.Revision() <= f1.Revision() {
		t.Errorf("the restart did not write the key: revision %d, was %d", f2.Revision(), f1.Revision())
	}
	if impostor.log.has(kind(Acquired, key)) {
		t.Error("a host of the same name but another state dir took the lease without waiting")
	}
}

// TestDropReleasesForTheNextOwner: dropping a held claim writes the key
// free, and a host that may own it takes it at once.
func TestDropReleasesForTheNextOwner(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	ca := a.m.Claim(key, Owner, 0)
	fa := waitFence(t, ca)
	c := startHost(t, urls, "c", "state-c")
	cc := c.m.Claim(key, Owner, 0)
	c.log.waitFor(t, 0, "c waiting", kind(Waiting, key))

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := ca.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := fa.Check(); !errors.Is(err, ErrFenced) {
		t.Errorf("a's fence after release: %v", err)
	}
	fc := waitFence(t, cc) // no clock moved
	if fc.Token() <= fa.Token() {
		t.Errorf("c's token %d is not after a's %d", fc.Token(), fa.Token())
	}
}

// TestHandOverIsTakenByTheStandbysInRank: a lease released by Drop makes
// a standby wait a whole TTL, as for a lease never held; one handed over
// (HandOver) is taken by the first standby at once, no clock moved, and a
// second standby, later in rank, leaves it to the first.
func TestHandOverIsTakenByTheStandbysInRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		handOver bool
	}{{"dropped", false}, {"handed over", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			urls := testBucket(t)
			a := startHost(t, urls, "a", "state-a")
			ca := a.m.Claim(key, Owner, 0)
			waitFence(t, ca)
			b := startHost(t, urls, "b", "state-b")
			c := startHost(t, urls, "c", "state-c")
			cb, cc := b.m.Claim(key, Standby, 0), c.m.Claim(key, Standby, 1)
			b.log.waitFor(t, 0, "b waiting", kind(Waiting, key))
			c.log.waitFor(t, 0, "c waiting", kind(Waiting, key))
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			drop := ca.Drop
			if tc.handOver {
				drop = ca.HandOver
			}
			if err := drop(ctx); err != nil {
				t.Fatal(err)
			}
			released := func(e Event) bool { return e.Kind == Waiting && e.Holder == "nobody (released or deleted)" }
			if !tc.handOver {
				// Seen free, a standby waits out a TTL on its own clock.
				b.log.waitFor(t, 0, "b waiting on the released lease", released)
				if cb.Current() != nil {
					t.Fatal("a standby took a lease released without a hand-over at once")
				}
				return
			}
			fb := waitFence(t, cb) // no clock moved
			if fb.Check() != nil {
				t.Fatal("b's fence does not hold")
			}
			// The take says it was handed over (a host's log tells a
			// hand-over from a takeover after an expiry by it).
			if e, _ := b.log.waitFor(t, 0, "b acquired", kind(Acquired, key)); e.Took != TookHandedOver {
				t.Errorf("b took the handed-over lease as %q, want %q", e.Took, TookHandedOver)
			}
			if cc.Current() != nil {
				t.Error("the second standby holds the lease too")
			}
		})
	}
}

// TestStandbysRaceOneWins: when two standbys both find the lease expired,
// the compare-and-set lets exactly one take it.
func TestStandbysRaceOneWins(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	fa := waitFence(t, a.m.Claim(key, Owner, 0))
	b := startHost(t, urls, "b", "state-b")
	c := startHost(t, urls, "c", "state-c")
	bc, cc := b.m.Claim(key, Standby, 0), c.m.Claim(key, Standby, 0) // same rank: they race
	b.log.waitFor(t, 0, "b waiting", kind(Waiting, key))
	c.log.waitFor(t, 0, "c waiting", kind(Waiting, key))
	a.stop()
	b.clock.Advance(2 * testTTL)
	c.clock.Advance(2 * testTTL)

	decided := func(e Event) bool { return e.Kind == Acquired || e.Kind == Waiting && e.Revision > fa.Revision() }
	b.log.waitFor(t, 0, "b decided", decided)
	c.log.waitFor(t, 0, "c decided", decided)
	won := 0
	for i, cl := range []*Claim{bc, cc} {
		if cl.Current() != nil {
			won++
			if e, _ := []*testHost{b, c}[i].log.waitFor(t, 0, "acquired", kind(Acquired, key)); e.Took != TookExpired {
				t.Errorf("the winner took the expired lease as %q, want %q", e.Took, TookExpired)
			}
		}
	}
	if won != 1 {
		t.Fatalf("%d standbys hold the lease, want exactly 1", won)
	}
}

// TestOverwriteEndsTenure: a holder that sees its key written by someone
// else (an admin forcing a move) stops at once.
func TestOverwriteEndsTenure(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	a := startHost(t, urls, "a", "state-a")
	f := waitFence(t, a.m.Claim(key, Owner, 0))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	js, _ := jetstream.New(a.nc)
	kv, err := js.KeyValue(ctx, "leases")
	if err != nil {
		t.Fatal(err)
	}
	v := Value{V: valueVersion, Holder: "admin", StateID: "x", Incarnation: "y"}
	if _, err := kv.Put(ctx, key, v.marshal()); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, f.Lost(), "Lost after an overwrite")
	if err := f.Check(); !errors.Is(err, ErrFenced) {
		t.Errorf("fence after an overwrite: %v", err)
	}
}

// TestWaitEndsWhenTheManagerStops: nobody waits forever on a lease that a
// stopped manager can no longer take.
func TestWaitEndsWhenTheManagerStops(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	b := startHost(t, urls, "b", "state-b")
	waitFence(t, b.m.Claim(key, Owner, 0))
	a := startHost(t, urls, "a", "state-a")
	c := a.m.Claim(key, Standby, 0)
	a.log.waitFor(t, 0, "waiting", kind(Waiting, key))
	a.stop()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := c.Wait(ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Wait after the manager stopped: %v", err)
	}
}
