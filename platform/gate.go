package platform

import (
	"context"
	"errors"
)

// ErrTenureLost: the tenure an adapter received under is over (another
// host may be the receiver now). The adapter stops receiving at once and
// waits for the next tenure.
var ErrTenureLost = errors.New("no longer this platform's receiver")

// Gate says when this host may receive a platform's events, where the
// platform allows only one receiver among the hosts of a cluster:
// Telegram's getUpdates poller (one per bot token) and a Discord gateway
// shard (every connection of a shard gets every event, so two would
// answer everything twice). An adapter without a Gate receives always, as
// a host alone does. The cluster implements it with a lease; adapters
// know nothing of how.
type Gate interface {
	// Acquire blocks until this host is the receiver and returns that
	// tenure. It fails only when ctx ends or the cluster stopped.
	Acquire(ctx context.Context) (Tenure, error)
	// Close gives the gate up for good: a tenure held is released, so
	// that another host takes over at once instead of after it expires.
	// The adapter calls it when its Run returns.
	Close()
}

// Tenure is one unbroken stretch of this host being the receiver.
type Tenure interface {
	// Lost is closed when the tenure ends: stop receiving at once.
	Lost() <-chan struct{}
	// Check returns nil while the tenure holds, an error wrapping
	// ErrTenureLost once it does not. Checked right before each step
	// taken on its strength (a poll, handing an event on).
	Check() error
	// Offset is where the platform's poller stands: the first update no
	// receiver has handed on yet, as the last SaveOffset of any tenure
	// stored it; 0 when none was stored.
	Offset(ctx context.Context) (int64, error)
	// SaveOffset stores next once every update before it was handed on.
	// It never moves the offset back. An error wrapping ErrTenureLost
	// means a later tenure has written it: stop. Another error is a
	// passing one (the store unreachable): the offset stays behind, so the
	// next receiver reads a few updates again, which the ingress stream
	// drops as duplicates.
	SaveOffset(ctx context.Context, next int64) error
}
