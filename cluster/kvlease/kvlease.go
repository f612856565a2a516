// Package kvlease elects one holder per key among the hosts of a cc-connect
// cluster, through a NATS JetStream key-value bucket: the owner of a
// binding, Telegram's one poller, the holder of a Discord shard. A lease is
// written with a compare-and-set on the key's revision, renewed by a
// heartbeat, and lost when it cannot be renewed within the lease TTL. It
// also keeps each host's heartbeat record and reads the bucket for
// `cc-connect cluster status`. It decides who holds what; it knows nothing
// of chats, consumers or the engine.
//
// Expiry is judged on each host's own monotonic clock, never by comparing
// timestamps written by another host: a host takes over a key only once it
// has seen the same revision unchanged for a whole TTL, and the holder
// stops trusting its lease TTL/5 before a TTL has passed since it sent its
// last successful renewal. Since nobody can see a revision before it is
// written, the holder has always stopped before anybody else may start,
// whatever the hosts' wall clocks say. (A per-key TTL in the bucket would
// need the server's message TTLs, which the pinned nats-server 2.15 has, but
// it runs on the stream leader's wall clock, and an expired key would be
// deleted, losing who held it: the revision-watching scheme needs neither.)
package kvlease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrFenced: the lease this fence stood for is not held any more (or can no
// longer be trusted to be). The caller must not write anything on its
// strength: no journal entry, no ack, no turn, no offset.
var ErrFenced = errors.New("lease lost")

// Role says when a host may take a lease.
type Role int

const (
	// Owner is the binding's configured host: it takes a free lease at
	// once, and an expired one like anybody else.
	Owner Role = iota
	// Standby takes a lease only once it has stayed expired or free for a
	// whole TTL, plus (rank+1) × TTL/5 so that standbys do not race each
	// other and the owner comes first.
	Standby
	// Candidate is any member, for a lease with no preferred holder (a
	// poller, a shard): it takes a free lease at once.
	Candidate
)

func (r Role) String() string {
	switch r {
	case Owner:
		return "owner"
	case Standby:
		return "standby"
	}
	return "candidate"
}

// Options configure a Manager.
type Options struct {
	// Host is this cc-connect's name in the cluster.
	Host string
	// StateID identifies this host's state dir. A lease last held with
	// the same Host and StateID was held by an earlier run of this very
	// cc-connect, which is dead (the state dir is locked while one runs):
	// a restart takes such a lease back at once instead of waiting for it
	// to expire.
	StateID string
	// TTL is how long a lease lives without renewal (cluster.lease_ttl).
	TTL time.Duration
	// Version and ConfigHash are published in the heartbeat record, for
	// status (hosts that read different configs route differently).
	Version    string
	ConfigHash string
	Log        *slog.Logger
	// Clock is time for this host; nil is the real clock.
	Clock Clock
	// Observe, when set, is told of every lease event (tests wait on it).
	Observe func(Event)
}

// EventKind names what happened to a lease on this host.
type EventKind string

// Lease events.
const (
	Observed EventKind = "observed" // a new revision of the key was seen
	Acquired EventKind = "acquired"
	Renewed  EventKind = "renewed"
	Lost     EventKind = "lost"
	Released EventKind = "released"
	// Waiting: not held, and this host will not try to take it before
	// Until (on its clock) unless the key changes.
	Waiting EventKind = "waiting"
)

// Event is one lease event on this host.
type Event struct {
	Key      string
	Kind     EventKind
	Revision uint64
	Holder   string    // for Observed: who holds it now ("" free)
	Until    time.Time // for Waiting
	Took     Took      // for Acquired: what the key held when taken
}

// Took says what a lease key held when this host took it: whether the
// host waited for another's lease to expire, or was handed it.
type Took string

// What a key held when it was taken.
const (
	TookNew        Took = "new"         // nothing: never written, or deleted
	TookOwn        Took = "own"         // this host's own earlier tenure
	TookHandedOver Took = "handed_over" // released on purpose for the next holder (HandOver)
	TookReleased   Took = "released"    // released without a hand-over
	TookExpired    Took = "expired"     // another host's, unchanged for a whole TTL
)

// Manager takes part in the elections of one host. Claims register the
// keys it contends for; Run does the work.
type Manager struct {
	kv    jetstream.KeyValue
	o     Options
	me    identity
	clock Clock
	log   *slog.Logger

	mu     sync.Mutex // guards claims, obs, runCtx
	claims map[string]*Claim
	obs    map[string]observation
	runCtx context.Context
	wg     sync.WaitGroup
}

// identity is who writes a lease.
type identity struct {
	host, stateID, incarnation string
}

// New returns a manager; nothing happens until Run.
func New(kv jetstream.KeyValue, o Options) *Manager {
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Manager{kv: kv, o: o, clock: o.Clock, log: o.Log,
		me:     identity{host: o.Host, stateID: o.StateID, incarnation: randomID()},
		claims: map[string]*Claim{}, obs: map[string]observation{}}
}

func randomID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Incarnation is this run's random id, written with every lease and
// heartbeat.
func (m *Manager) Incarnation() string { return m.me.incarnation }

// TTL is the lease TTL.
func (m *Manager) TTL() time.Duration { return m.o.TTL }

// Run watches the leases, writes this host's heartbeat and runs every
// claim until ctx ends. Held leases are not released when it returns: a
// restart takes them back at once, and otherwise they expire.
func (m *Manager) Run(ctx context.Context) error {
	if m.o.TTL <= 0 || m.o.Host == "" {
		return fmt.Errorf("lease manager: a host and a TTL are required")
	}
	m.mu.Lock()
	m.runCtx = ctx
	for _, c := range m.claims {
		m.startLocked(c)
	}
	m.mu.Unlock()

	m.wg.Add(2)
	go func() {
		defer m.wg.Done()
		m.watch(ctx)
	}()
	go func() {
		defer m.wg.Done()
		m.heartbeat(ctx)
	}()
	<-ctx.Done()
	m.wg.Wait()
	return ctx.Err()
}

// watch feeds the lease keys' changes into the cache, watching again when
// a watcher ends. The cache only speeds things up: every decision is a
// compare-and-set on the revision seen, so a stale cache costs time, never
// safety.
func (m *Manager) watch(ctx context.Context) {
	wait := m.o.TTL / 10
	for ctx.Err() == nil {
		w, err := m.kv.Watch(ctx, "lease.>")
		if err != nil {
			m.log.Debug("Watching the leases failed; retrying", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			continue
		}
		m.drain(ctx, w)
		if ctx.Err() != nil {
			// The host stops, and closes its connection next, which ends
			// the watcher's subscription; the server drops its consumer.
			// Stop would ask the server to delete it and, cut off from
			// NATS, wait 5 s for an answer that cannot come.
			return
		}
		_ = w.Stop()
	}
}

func (m *Manager) drain(ctx context.Context, w jetstream.KeyWatcher) {
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				m.learn(e.Key(), e.Revision(), entryValue(e))
			}
		}
	}
}

// Claim registers interest in key with role; rank orders standbys (0
// first). Calling it again for the same key returns the same claim.
func (m *Manager) Claim(key string, role Role, rank int) *Claim {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.claims[key]; ok {
		return c
	}
	c := newClaim(m, key, role, rank)
	m.claims[key] = c
	if m.runCtx != nil {
		m.startLocked(c)
	}
	return c
}

func (m *Manager) startLocked(c *Claim) {
	if c.started {
		return
	}
	c.started = true
	ctx, cancel := context.WithCancel(m.runCtx)
	c.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		c.run(ctx)
	}()
}

// observation is what this host last saw of a key, and since when (on its
// own clock).
type observation struct {
	rev    uint64
	val    *Value // nil: absent or deleted
	seenAt time.Time
	known  bool
}

// learn records a revision of key and wakes its claim. Older revisions
// than the one known are ignored: the watcher and a claim's own reads race.
func (m *Manager) learn(key string, rev uint64, v *Value) {
	m.mu.Lock()
	o := m.obs[key]
	if o.known && rev <= o.rev {
		m.mu.Unlock()
		return
	}
	m.obs[key] = observation{rev: rev, val: v, seenAt: m.clock.Now(), known: true}
	c := m.claims[key]
	m.mu.Unlock()
	holder := ""
	if v != nil {
		holder = v.Holder
	}
	m.event(Event{Key: key, Kind: Observed, Revision: rev, Holder: holder})
	if c != nil {
		c.poke()
	}
}

func (m *Manager) observed(key string) observation {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.obs[key]
}

func (m *Manager) event(e Event) {
	if m.o.Observe != nil {
		m.o.Observe(e)
	}
}

// refresh reads key and records what it holds.
func (m *Manager) refresh(ctx context.Context, key string) error {
	e, err := m.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// Absent, or deleted: Get says not found for both. Revision 0
		// never beats a known one, so record absence only if nothing is
		// known yet.
		m.mu.Lock()
		if !m.obs[key].known {
			m.obs[key] = observation{seenAt: m.clock.Now(), known: true}
		}
		m.mu.Unlock()
		return nil
	case err != nil:
		return err
	}
	m.learn(key, e.Revision(), entryValue(e))
	return nil
}

// BucketConfig is the configuration of the cluster's key-value bucket:
// one value per key (history is no use to a lease), on file storage.
func BucketConfig(bucket string, replicas int) jetstream.KeyValueConfig {
	return jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "cc-connect cluster: leases, host heartbeats, poller offsets, answered messages",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// A lease or heartbeat is a few hundred bytes.
		MaxValueSize: 64 << 10,
		// Records that a message was answered expire on their own (a
		// per-key TTL, which this turns on); what their expiry leaves
		// behind goes a minute later.
		LimitMarkerTTL: time.Minute,
	}
}
