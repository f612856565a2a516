package kvlease

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
)

// TestStopCutOffAsksTheServerNothing: a host cut off from NATS stops
// without waiting on the server. Its lease watcher is a consumer on the
// server; asking the server to delete it when stopping cannot be answered
// while cut off, and used to hold the stop for the client's 5 s request
// timeout. The connection's close, right after, ends the subscription, and
// the server drops the consumer by itself.
//
// The test sees the request rather than timing the stop: the client's
// trace hook holds any consumer delete until the test ends, so a manager
// that waited on one would not stop at all, and the test fails as soon
// as the request is made instead of comparing durations with 5 s.
func TestStopCutOffAsksTheServerNothing(t *testing.T) {
	t.Parallel()
	urls := testBucket(t)
	proxy := natstest.NewProxy(t, strings.TrimPrefix(urls[0], "nats://"))
	nc := natstest.Connect(t, proxy.URL())
	deleting := make(chan string, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before nc closes (cleanups run last first)
	js, err := jetstream.New(nc, jetstream.WithClientTrace(&jetstream.ClientTrace{
		RequestSent: func(subj string, _ []byte) {
			if !strings.HasPrefix(subj, "$JS.API.CONSUMER.DELETE.") || !calledByManager() {
				return // nats.go's own, on goroutines nobody waits for
			}
			select {
			case deleting <- subj:
			default:
			}
			<-release // unanswered, as it is while cut off
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	kv, err := js.KeyValue(ctx, "leases")
	if err != nil {
		t.Fatal(err)
	}
	log := newEventLog()
	m := New(ownWatchStop{kv}, Options{Host: "a", StateID: "state-a", TTL: testTTL, Clock: natstest.NewClock(),
		Observe: log.add, Version: "test"})
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = m.Run(runCtx)
	}()
	waitFence(t, m.Claim(key, Owner, 0))

	// The watcher is live once it reports a key written by somebody else
	// (the claim's own writes are learnt before the watcher sees them).
	other := natstest.Connect(t, urls...)
	ojs, err := jetstream.New(other)
	if err != nil {
		t.Fatal(err)
	}
	okv, err := ojs.KeyValue(ctx, "leases")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := okv.Put(ctx, "lease.poller.tg", []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	log.waitFor(t, 0, "the watcher's report of lease.poller.tg", func(e Event) bool {
		return e.Kind == Observed && e.Key == "lease.poller.tg" && e.Revision == rev
	})

	proxy.Cut()
	stop()
	select {
	case <-done:
	case subj := <-deleting:
		t.Fatalf("stopping cut off from NATS, the manager asked the server %s and waits for the answer", subj)
	case <-time.After(waitTimeout):
		t.Fatal("the manager did not stop")
	}
}

// ownWatchStop gives the manager's watch a context that never ends, so
// that only the manager itself can stop its watcher. nats.go unsubscribes
// a watcher whose context ends on a goroutine of its own, deleting its
// consumer there (a goroutine nobody waits for); when that goroutine comes
// first, a Stop by the manager finds the subscription closed and returns
// at once, so a manager that waits on the delete would be caught only
// some of the time.
type ownWatchStop struct{ jetstream.KeyValue }

func (k ownWatchStop) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return k.KeyValue.Watch(context.WithoutCancel(ctx), keys, opts...)
}

// calledByManager says whether the calling goroutine runs the manager's
// code: nats.go also deletes an ordered consumer it replaces (after missed
// heartbeats) on a goroutine of its own, which holds nothing up.
func calledByManager() bool {
	buf := make([]byte, 64<<10)
	return bytes.Contains(buf[:runtime.Stack(buf, false)], []byte("kvlease.(*Manager)."))
}
