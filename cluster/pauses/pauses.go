// Package pauses keeps the pauses of schedules (`!schedules pause`) in the
// cluster's key-value bucket. A schedule fires on whichever host holds its
// binding's lease, so a pause kept on the disk of the host that served the
// command would be forgotten when the lease moves: the next holder would
// fire a schedule an admin had paused, and catch up what passed while it
// was. Kept here, every host reads the same pause. It owns those keys
// (names.SchedulePause) and nothing else.
package pauses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/schedule"
)

// Store is the cluster's pauses; it implements schedule.Pauses.
type Store struct {
	kv jetstream.KeyValue
}

// New returns the pauses kept in kv (the cluster's bucket).
func New(kv jetstream.KeyValue) *Store { return &Store{kv: kv} }

var _ schedule.Pauses = (*Store)(nil)

// Get returns name's pause; the zero Pause when it was never paused.
func (s *Store) Get(ctx context.Context, name string) (schedule.Pause, error) {
	p, _, err := s.read(ctx, name)
	return p, err
}

// read returns name's pause and its revision (0: none stored).
func (s *Store) read(ctx context.Context, name string) (schedule.Pause, uint64, error) {
	e, err := s.kv.Get(ctx, names.SchedulePause(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return schedule.Pause{}, 0, nil
	}
	if err != nil {
		return schedule.Pause{}, 0, fmt.Errorf("reading the pause of schedule %s: %w", name, err)
	}
	var p schedule.Pause
	if err := json.Unmarshal(e.Value(), &p); err != nil {
		return schedule.Pause{}, 0, fmt.Errorf("reading the pause of schedule %s: %w", name, err)
	}
	return p, e.Revision(), nil
}

// Pause pauses name (by whom, when), reporting whether it ran before: a
// pause already there (another admin's, made on any host) stays as it is.
func (s *Store) Pause(ctx context.Context, name, by string, at time.Time) (bool, error) {
	return s.change(ctx, name, func(p *schedule.Pause) bool {
		if p.Paused {
			return false
		}
		p.Paused, p.By, p.At = true, by, at
		return true
	})
}

// Resume lifts name's pause at at, reporting whether it was paused. The
// stored value keeps at, so that a host whose ledger is behind does not
// catch up what passed while it was paused.
func (s *Store) Resume(ctx context.Context, name string, at time.Time) (bool, error) {
	return s.change(ctx, name, func(p *schedule.Pause) bool {
		if !p.Paused {
			return false
		}
		*p = schedule.Pause{Resumed: at}
		return true
	})
}

// change applies f to name's pause as a compare-and-set on the revision
// read, again on a conflict (another host changed it meanwhile), and
// reports whether f changed it.
func (s *Store) change(ctx context.Context, name string, f func(*schedule.Pause) bool) (bool, error) {
	key := names.SchedulePause(name)
	for {
		p, rev, err := s.read(ctx, name)
		if err != nil {
			return false, err
		}
		if !f(&p) {
			return false, nil
		}
		data, err := json.Marshal(p)
		if err != nil {
			return false, err
		}
		if rev == 0 {
			_, err = s.kv.Create(ctx, key, data)
		} else {
			_, err = s.kv.Update(ctx, key, data, rev)
		}
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue
		default:
			return false, fmt.Errorf("writing the pause of schedule %s: %w", name, err)
		}
	}
}
