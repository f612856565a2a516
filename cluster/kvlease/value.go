package kvlease

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// valueVersion is the version of the lease value this build writes. A
// reader treats a value it cannot decode as held by somebody else, so an
// unknown writer is waited out, never overwritten early.
const valueVersion = 1

// Value is what a lease key holds.
type Value struct {
	V int `json:"v"`
	// Holder is the host holding the lease; "" when it was released.
	Holder      string `json:"holder,omitempty"`
	StateID     string `json:"state_id,omitempty"`
	Incarnation string `json:"incarnation,omitempty"`
	// Tenure is the revision at which Holder's unbroken possession began:
	// the fencing token. 0 means the revision of this very write (the
	// acquiring write cannot know its own revision).
	Tenure uint64 `json:"tenure,omitempty"`
	// TTLMillis is the holder's lease TTL.
	TTLMillis int64 `json:"ttl_ms,omitempty"`
	// Acquired and Renewed are the holder's wall clock, for people only:
	// no decision reads them.
	Acquired time.Time `json:"acquired,omitzero"`
	Renewed  time.Time `json:"renewed,omitzero"`
	// ReleasedBy names the host that released it (Holder "").
	ReleasedBy string `json:"released_by,omitempty"`
	// HandOver: released by a holder that stopped or was drained on
	// purpose, for its standbys to take at once (by rank) rather than
	// after a TTL. An older reader ignores it and waits the TTL.
	HandOver bool `json:"hand_over,omitempty"`
}

// tenureAt is the value's fencing token when it is at revision rev.
func (v *Value) tenureAt(rev uint64) uint64 {
	if v.Tenure == 0 {
		return rev
	}
	return v.Tenure
}

func (v *Value) free() bool { return v == nil || v.Holder == "" }

func (v *Value) heldBy(id identity) bool {
	return v != nil && v.Holder == id.host && v.StateID == id.stateID && id.stateID != ""
}

func (v *Value) sameRun(id identity) bool { return v.heldBy(id) && v.Incarnation == id.incarnation }

func (v *Value) marshal() []byte {
	b, _ := json.Marshal(v) // plain fields: cannot fail
	return b
}

// entryValue decodes a lease entry; a delete or purge is nil. A value that
// does not decode is taken as held by an unknown host.
func entryValue(e jetstream.KeyValueEntry) *Value {
	if e.Operation() != jetstream.KeyValuePut {
		return nil
	}
	var v Value
	if err := json.Unmarshal(e.Value(), &v); err != nil || v.V < 1 {
		return &Value{V: 0, Holder: "(unreadable)"}
	}
	return &v
}
