// Package offsets keeps a poller's position in the cluster's key-value
// bucket, so that when the poller lease moves (Telegram allows one
// getUpdates poller per token), the next poller continues from where the
// last one stopped: no update skipped, and none handled twice (the ones it
// re-reads were already published, and the ingress stream drops them as
// duplicates). It owns that one value and nothing else.
package offsets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrStale: a later tenure of the poller lease has written the offset; the
// caller's fence is stale and it must stop polling.
var ErrStale = errors.New("offset written by a later poller")

// Fence is the poller lease as this package needs it.
type Fence interface {
	Check() error
	Token() uint64
}

// value is what the key holds.
type value struct {
	// Next is the first update not yet handled (Telegram's offset).
	Next int64 `json:"next"`
	// Token is the poller lease tenure that wrote it.
	Token uint64 `json:"token"`
}

// Store is one poller's offset.
type Store struct {
	kv  jetstream.KeyValue
	key string
}

// New returns the store of key (names.Offset(platform)).
func New(kv jetstream.KeyValue, key string) *Store { return &Store{kv: kv, key: key} }

// Load returns the stored offset: 0 when none was stored (start from what
// Telegram still holds).
func (s *Store) Load(ctx context.Context) (int64, error) {
	v, _, err := s.read(ctx)
	return v.Next, err
}

func (s *Store) read(ctx context.Context) (value, uint64, error) {
	e, err := s.kv.Get(ctx, s.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return value{}, 0, nil
	}
	if err != nil {
		return value{}, 0, fmt.Errorf("reading the offset %s: %w", s.key, err)
	}
	var v value
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return value{}, 0, fmt.Errorf("reading the offset %s: %w", s.key, err)
	}
	return v, e.Revision(), nil
}

// Save stores next as the first update not yet handled, after the updates
// before it were published. It writes only while f checks, never moves the
// offset back (a late write of a lost poller cannot rewind it), and fails
// with ErrStale when a later tenure wrote it: every write is a
// compare-and-set on the revision read, carrying the fencing token.
func (s *Store) Save(ctx context.Context, f Fence, next int64) error {
	for {
		if err := f.Check(); err != nil {
			return err
		}
		cur, rev, err := s.read(ctx)
		if err != nil {
			return err
		}
		if cur.Token > f.Token() {
			return fmt.Errorf("%w: %s has token %d, ours is %d", ErrStale, s.key, cur.Token, f.Token())
		}
		if cur.Next >= next && cur.Token == f.Token() {
			return nil
		}
		data, _ := json.Marshal(value{Next: max(next, cur.Next), Token: f.Token()})
		if rev == 0 {
			_, err = s.kv.Create(ctx, s.key, data)
		} else {
			_, err = s.kv.Update(ctx, s.key, data, rev)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue // written meanwhile: read again
		default:
			return fmt.Errorf("storing the offset %s: %w", s.key, err)
		}
	}
}
