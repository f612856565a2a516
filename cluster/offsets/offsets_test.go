package offsets

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

type fence struct {
	token uint64
	err   error
}

func (f *fence) Check() error  { return f.err }
func (f *fence) Token() uint64 { return f.token }

var errLost = errors.New("lost")

func TestOffsetsFollowThePollerLease(t *testing.T) {
	t.Parallel()
	nc := natstest.Connect(t, natstest.Single(t).ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(kv, "offset.telegram")
	if got, err := s.Load(ctx); err != nil || got != 0 {
		t.Fatalf("Load of nothing = %d, %v", got, err)
	}
	first := &fence{token: 10}
	for _, next := range []int64{101, 105} {
		if err := s.Save(ctx, first, next); err != nil {
			t.Fatal(err)
		}
	}
	// The poller moves: the next one continues from the stored offset.
	second := &fence{token: 20}
	if got, _ := New(kv, "offset.telegram").Load(ctx); got != 105 {
		t.Fatalf("the next poller starts at %d, want 105", got)
	}
	if err := s.Save(ctx, second, 103); err != nil { // re-read updates: never rewinds
		t.Fatal(err)
	}
	if got, _ := s.Load(ctx); got != 105 {
		t.Errorf("a smaller offset moved it back to %d", got)
	}
	if err := s.Save(ctx, second, 110); err != nil {
		t.Fatal(err)
	}
	// The first poller, cut off, writes late: refused, nothing changes.
	if err := s.Save(ctx, first, 200); !errors.Is(err, ErrStale) {
		t.Errorf("a stale poller's write: %v, want ErrStale", err)
	}
	first.err = errLost
	if err := s.Save(ctx, first, 300); !errors.Is(err, errLost) {
		t.Errorf("a write with a lost fence: %v, want its fence's error", err)
	}
	if got, _ := s.Load(ctx); got != 110 {
		t.Errorf("offset %d after stale writes, want 110", got)
	}
}
