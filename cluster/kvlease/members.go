package kvlease

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
)

// Member is a host's heartbeat record, rewritten every TTL/3 while it runs:
// how `cluster status` tells which hosts are up, and what they run.
type Member struct {
	V           int    `json:"v"`
	Host        string `json:"host"`
	StateID     string `json:"state_id"`
	Incarnation string `json:"incarnation"`
	Version     string `json:"version,omitempty"`
	ConfigHash  string `json:"config_hash,omitempty"`
	// Format is the format (package format) the host writes: a host that
	// reads only older ones does not join while this one is up.
	Format    int       `json:"format,omitempty"`
	TTLMillis int64     `json:"ttl_ms"`
	Started   time.Time `json:"started"`   // the host's wall clock
	Heartbeat time.Time `json:"heartbeat"` // the host's wall clock
}

// heartbeat writes this host's record until ctx ends. A record of the same
// host name written by another incarnation between two of ours means two
// cc-connects run with one cluster.host: leases stay safe (they tell
// holders apart by state dir and incarnation), but status cannot tell the
// two apart, so it is logged as an error.
func (m *Manager) heartbeat(ctx context.Context) {
	key := names.Member(m.o.Host)
	started := m.clock.Now()
	var (
		rev    uint64
		known  bool
		warned time.Time
	)
	for {
		v := Member{V: valueVersion, Host: m.o.Host, StateID: m.me.stateID, Incarnation: m.me.incarnation,
			Version: m.o.Version, ConfigHash: m.o.ConfigHash, Format: format.Written(), TTLMillis: m.o.TTL.Milliseconds(),
			Started: started, Heartbeat: m.clock.Now()}
		data, _ := json.Marshal(v)
		rctx, cancel := context.WithTimeout(ctx, max(m.o.TTL/3, 100*time.Millisecond))
		if !known {
			e, err := m.kv.Get(rctx, key)
			switch {
			case errors.Is(err, jetstream.ErrKeyNotFound):
				rev, known = 0, true
			case err == nil:
				rev, known = e.Revision(), true
			}
		}
		if known {
			var err error
			var nrev uint64
			if rev == 0 {
				nrev, err = m.kv.Create(rctx, key, data)
			} else {
				nrev, err = m.kv.Update(rctx, key, data, rev)
			}
			switch {
			case err == nil:
				rev = nrev
			case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
				known = false
				if e, gerr := m.kv.Get(rctx, key); gerr == nil {
					var other Member
					if json.Unmarshal(e.Value(), &other) == nil && other.Incarnation != m.me.incarnation &&
						(warned.IsZero() || m.clock.Now().Sub(warned) > 4*m.o.TTL) && rev != 0 {
						warned = m.clock.Now()
						m.log.Error("Another cc-connect runs with this cluster.host: give each host its own name",
							"host", m.o.Host, "other_state_id", other.StateID)
					}
					rev, known = e.Revision(), true
				}
			default:
				m.log.Debug("Writing the heartbeat failed; retrying", "error", err)
			}
		}
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-m.clock.At(m.clock.Now().Add(m.o.TTL / 3)):
		}
	}
}
