package engine

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// losingFence is a lease held for its first n checks and lost from then
// on: a tenure that ends while an event is on its way through the accept
// path, after the ingress looked at the fence and before the journal
// write.
type losingFence struct {
	n      int32
	checks atomic.Int32
}

var errLeaseLost = errors.New("lease lost (test)")

func (f *losingFence) Check() error {
	if f.checks.Add(1) > f.n {
		return errLeaseLost
	}
	return nil
}

func (f *losingFence) Token() uint64 { return 7 }

// fenceDelivery is a stream delivery under a losingFence.
type fenceDelivery struct{ f *losingFence }

func (d fenceDelivery) Fence() Fence                 { return d.f }
func (d fenceDelivery) Seq() uint64                  { return 1 }
func (d fenceDelivery) Deliveries() int              { return 1 }
func (d fenceDelivery) Done()                        {}
func (d fenceDelivery) Settle(context.Context) error { return nil }

// TestClusterFenceCheckedRightBeforeTheJournalWrite: a journal entry made
// on a lease's strength is written only while the lease is held at the
// moment of the write (docs/cluster.md, "the lease's fence checked right
// before the journal write"). The lease here is lost after the ingress's
// first look at it, while the event goes through dedupe, the allow list
// and the journal's lock: the event must be refused (the stream delivers
// it again, to the lease's next holder) and nothing journaled, nor run.
func TestClusterFenceCheckedRightBeforeTheJournalWrite(t *testing.T) {
	h := newHarness(t, nil)
	h.stop() // JoinCluster must precede Run: a fresh engine on its options
	e, err := New(h.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.spawn, e.tx = h.fa.spawn, h.ft
	e.AddAdapter(richPlatform{newFakePlatform("fake")})
	ci := e.JoinCluster(ClusterOptions{Host: "a", Clustered: func(p string) bool { return p == "fake" },
		InStream: func(context.Context, uint64) (bool, error) { return true, nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	m := platform.Message{ID: "ev1", Target: platform.Target{Platform: "fake", Channel: "C1", Thread: "T1", MessageID: "in-ev1"},
		UserID: "alice", UserName: "alice", Text: "hello", Received: time.Now()}
	f := &losingFence{n: 1}
	actx, acancel := context.WithTimeout(context.Background(), waitLimit)
	defer acancel()
	out, err := ci.Accept(actx, ClusterEvent{Binding: binding.Key{Platform: "fake", Channel: "*"}, Message: &m}, fenceDelivery{f})
	if !errors.Is(err, errLeaseLost) {
		t.Fatalf("Accept with the lease lost before the write = %v, %v; want the fence's error", out, err)
	}
	if n := f.checks.Load(); n < 2 {
		t.Errorf("the fence was checked %d times; want once more right before the write", n)
	}
	path := conv.InboxPath(h.opts.StateDir, conv.Key(m.Target))
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		t.Errorf("the journal holds an entry written without the lease:\n%s", b)
	}
	if n := len(h.fa.spawnsSnapshot()); n != 0 {
		t.Errorf("%d processes started for an event refused by its fence", n)
	}
}
