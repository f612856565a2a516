package pauses

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/schedule"
)

// TestPausesAreSharedByHosts: two hosts' stores on one real JetStream
// bucket (two connections) see one pause: made on one, kept against the
// other's, lifted on the other with the instant it was lifted.
func TestPausesAreSharedByHosts(t *testing.T) {
	t.Parallel()
	srv := natstest.Single(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b := New(bucket(ctx, t, srv.ClientURL())), New(bucket(ctx, t, srv.ClientURL()))
	at := time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC)

	if p, err := a.Get(ctx, "noon"); err != nil || p != (schedule.Pause{}) {
		t.Fatalf("Get of a schedule never paused = %+v, %v", p, err)
	}
	if was, err := b.Resume(ctx, "noon", at); err != nil || was {
		t.Errorf("Resume of a schedule never paused = %t, %v; want false", was, err)
	}
	if was, err := a.Pause(ctx, "noon", "7", at); err != nil || !was {
		t.Fatalf("Pause = %t, %v", was, err)
	}
	if was, err := b.Pause(ctx, "noon", "8", at.Add(time.Minute)); err != nil || was {
		t.Errorf("Pause on the other host = %t, %v; want false, the first pause kept", was, err)
	}
	p, err := b.Get(ctx, "noon")
	if err != nil || !p.Paused || p.By != "7" || !p.At.Equal(at) {
		t.Errorf("the other host reads %+v, %v; want paused by 7 at %s", p, err, at)
	}
	if p, _ := b.Get(ctx, "other"); p.Paused {
		t.Error("a pause of noon pauses another schedule")
	}

	lifted := at.Add(time.Hour)
	if was, err := b.Resume(ctx, "noon", lifted); err != nil || !was {
		t.Fatalf("Resume on the other host = %t, %v", was, err)
	}
	if p, err := a.Get(ctx, "noon"); err != nil || p.Paused || !p.Resumed.Equal(lifted) {
		t.Errorf("after the resume the first host reads %+v, %v; want running, resumed at %s", p, err, lifted)
	}
	if was, err := a.Resume(ctx, "noon", lifted.Add(time.Minute)); err != nil || was {
		t.Errorf("a second Resume = %t, %v; want false", was, err)
	}
	// Paused again over a value that exists (the resumed one).
	if was, err := a.Pause(ctx, "noon", "9", lifted.Add(time.Hour)); err != nil || !was {
		t.Fatalf("Pause after a resume = %t, %v", was, err)
	}
	if p, _ := b.Get(ctx, "noon"); !p.Paused || p.By != "9" {
		t.Errorf("after pausing again: %+v, want paused by 9", p)
	}
}

// TestConcurrentPausesOneWins: hosts pausing at once, on a bucket whose
// value each read may be stale by the time it writes: exactly one reports
// that it paused (the compare-and-set retries the rest against the newer
// value), and the pause stored is that one's.
func TestConcurrentPausesOneWins(t *testing.T) {
	t.Parallel()
	srv := natstest.Single(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	kv := bucket(ctx, t, srv.ClientURL())
	const n = 8
	at := time.Date(2026, 3, 10, 11, 0, 0, 0, time.UTC)
	type answer struct {
		by  string
		was bool
		err error
	}
	got := make(chan answer, n)
	for i := range n {
		s := New(kv)
		by := string(rune('a' + i))
		go func() {
			was, err := s.Pause(ctx, "noon", by, at)
			got <- answer{by, was, err}
		}()
	}
	winner := ""
	for range n {
		a := <-got
		if a.err != nil {
			t.Fatalf("Pause by %s: %v", a.by, a.err)
		}
		if a.was {
			if winner != "" {
				t.Errorf("both %s and %s report they paused", winner, a.by)
			}
			winner = a.by
		}
	}
	if p, err := New(kv).Get(ctx, "noon"); err != nil || !p.Paused || p.By != winner {
		t.Errorf("stored %+v, %v; want paused by %q", p, err, winner)
	}
}

// bucket is the key-value bucket "b" on the server at url, over a
// connection of its own (a host's).
func bucket(ctx context.Context, t *testing.T, url string) jetstream.KeyValue {
	t.Helper()
	js, err := jetstream.New(natstest.Connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b"})
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
