package kvlease

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/names"
)

// Snapshot is the bucket as one reader saw it: every lease and heartbeat,
// with ages measured on the server's clock (the time of the last write
// against the time the server answered), so that a reader on any host,
// whatever its own clock, sees the same ages.
type Snapshot struct {
	// At is the server's time when the bucket was read.
	At      time.Time
	Leases  []LeaseRecord
	Members []MemberRecord
}

// LeaseRecord is one lease key.
type LeaseRecord struct {
	Key      string
	Value    Value
	Revision uint64
	// Written is when the server stored the last write (acquisition,
	// renewal or release).
	Written time.Time
	// Age is At − Written: how long ago it was last renewed.
	Age time.Duration
}

// Token is the lease's fencing token.
func (r LeaseRecord) Token() uint64 { return r.Value.tenureAt(r.Revision) }

// Expired says whether the holder has missed its renewals for a TTL, as
// far as the server's clock tells. (The hosts decide takeovers on their
// own clocks; this is for people.)
func (r LeaseRecord) Expired() bool {
	return r.Value.Holder == "" || r.Age > time.Duration(r.Value.TTLMillis)*time.Millisecond
}

// MemberRecord is one host's heartbeat record.
type MemberRecord struct {
	Member  Member
	Written time.Time
	Age     time.Duration
}

// Up says whether the host wrote its heartbeat within one TTL.
func (r MemberRecord) Up() bool { return r.Age <= time.Duration(r.Member.TTLMillis)*time.Millisecond }

// ReadSnapshot reads every lease and heartbeat of the bucket. js is the
// same JetStream context the bucket came from: the server's clock is read
// from the bucket's stream.
func ReadSnapshot(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue) (Snapshot, error) {
	var s Snapshot
	w, err := kv.WatchFiltered(ctx, []string{names.LeasePrefix + ">", names.MemberPrefix + ">"}, jetstream.IgnoreDeletes())
	if err != nil {
		return s, fmt.Errorf("reading the cluster bucket: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var entries []jetstream.KeyValueEntry
read:
	for {
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("reading the cluster bucket: %w", ctx.Err())
		case e, ok := <-w.Updates():
			if !ok || e == nil {
				break read // nil: every current value has been delivered
			}
			entries = append(entries, e)
		}
	}
	info, err := js.Stream(ctx, "KV_"+kv.Bucket())
	if err != nil {
		return s, fmt.Errorf("reading the cluster bucket's stream: %w", err)
	}
	si, err := info.Info(ctx)
	if err != nil {
		return s, fmt.Errorf("reading the cluster bucket's stream: %w", err)
	}
	s.At = si.TimeStamp
	for _, e := range entries {
		age := max(s.At.Sub(e.Created()), 0)
		switch {
		case strings.HasPrefix(e.Key(), names.LeasePrefix):
			v := entryValue(e)
			if v == nil {
				continue
			}
			s.Leases = append(s.Leases, LeaseRecord{Key: e.Key(), Value: *v, Revision: e.Revision(), Written: e.Created(), Age: age})
		case strings.HasPrefix(e.Key(), names.MemberPrefix):
			var m Member
			if json.Unmarshal(e.Value(), &m) != nil {
				continue
			}
			s.Members = append(s.Members, MemberRecord{Member: m, Written: e.Created(), Age: age})
		}
	}
	sort.Slice(s.Leases, func(i, j int) bool { return s.Leases[i].Key < s.Leases[j].Key })
	sort.Slice(s.Members, func(i, j int) bool { return s.Members[i].Member.Host < s.Members[j].Member.Host })
	return s, nil
}
