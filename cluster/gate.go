package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/cluster/offsets"
	"github.com/cc-connect/cc-connect/platform"
)

// Gate elects this platform's one receiver among the cluster's hosts by a
// lease in the bucket: Telegram's poller (PollerGate, with the stored
// offset) or a Discord gateway shard (ShardGate). Any member may hold it
// (kvlease.Candidate). It is the platform.Gate an adapter is given, so
// that the adapters import no NATS.
type Gate struct {
	n       *Node
	key     string
	offsets *offsets.Store // nil for a shard

	mu    sync.Mutex // guards claim
	claim *kvlease.Claim
}

var _ platform.Gate = (*Gate)(nil)

// PollerGate is the gate of platform instance p's one poller
// (names.PollerLease), with its offset (names.Offset).
func (n *Node) PollerGate(p string) *Gate {
	return &Gate{n: n, key: names.PollerLease(p), offsets: n.Offsets(p)}
}

// ShardGate is the gate of gateway shard shard of platform instance p
// (names.ShardLease).
func (n *Node) ShardGate(p string, shard int) *Gate {
	return &Gate{n: n, key: names.ShardLease(p, shard)}
}

// Key is the lease key.
func (g *Gate) Key() string { return g.key }

// Acquire waits until this host holds the lease. A host outside
// cluster.receivers never contends: it waits until ctx ends.
func (g *Gate) Acquire(ctx context.Context) (platform.Tenure, error) {
	if !g.n.s.Receives(g.n.s.Host) {
		g.n.log.Info("Not receiving: this host is not in cluster.receivers", "lease", g.key)
		<-ctx.Done()
		return nil, fmt.Errorf("waiting for the lease %s: %w", g.key, ctx.Err())
	}
	g.mu.Lock()
	if g.claim == nil {
		g.claim = g.n.leases.Claim(g.key, kvlease.Candidate, 0)
	}
	c := g.claim
	g.mu.Unlock()
	f, err := c.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("waiting for the lease %s: %w", g.key, err)
	}
	return &tenure{f: f, offsets: g.offsets}, nil
}

// Close stops contending and releases the lease if held, so that another
// host takes it at once: a receiver that stops (a shutdown, a platform
// removed) hands over without the gap of an expiry. Unlike a binding's
// lease, nobody prefers to get a poller or a shard back after a restart,
// and for Discord a gap loses the events sent meanwhile.
func (g *Gate) Close() {
	g.mu.Lock()
	c := g.claim
	g.claim = nil
	g.mu.Unlock()
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(g.n.s.LeaseTTL, minCloseWait))
	defer cancel()
	if err := c.Drop(ctx); err != nil {
		g.n.log.Warn("Releasing a lease failed; it expires instead", "lease", g.key, "error", err)
	}
}

// minCloseWait bounds the wait for a release at the least.
const minCloseWait = time.Second

// tenure is one fence of the gate's lease.
type tenure struct {
	f       *kvlease.Fence
	offsets *offsets.Store
}

func (t *tenure) Lost() <-chan struct{} { return t.f.Lost() }

func (t *tenure) Check() error { return tenureErr(t.f.Check()) }

func (t *tenure) Offset(ctx context.Context) (int64, error) {
	if t.offsets == nil {
		return 0, nil
	}
	return t.offsets.Load(ctx)
}

func (t *tenure) SaveOffset(ctx context.Context, next int64) error {
	if t.offsets == nil {
		return errors.New("this lease keeps no offset")
	}
	return tenureErr(t.offsets.Save(ctx, t.f, next))
}

// tenureErr marks the errors that mean the tenure is over as
// platform.ErrTenureLost, keeping the cause.
func tenureErr(err error) error {
	if errors.Is(err, kvlease.ErrFenced) || errors.Is(err, offsets.ErrStale) {
		return fmt.Errorf("%w: %w", platform.ErrTenureLost, err)
	}
	return err
}
