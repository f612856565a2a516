package lanes

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

const waitLimit = 10 * time.Second

func wait(t *testing.T, what string, c <-chan struct{}) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestOrderPerKey: the work of one key runs in the order added, whatever
// the other keys do, and every item runs once.
func TestOrderPerKey(t *testing.T) {
	l := New(context.Background(), 8)
	var mu sync.Mutex
	got := map[string][]int{}
	keys := []string{"a", "b", "c"}
	for i := range 300 {
		k := keys[i%len(keys)]
		if !l.Add(nil, k, func(context.Context) {
			mu.Lock()
			got[k] = append(got[k], i)
			mu.Unlock()
		}) {
			t.Fatal("Add refused work on open lanes")
		}
	}
	l.Close()
	for j, k := range keys {
		var want []int
		for i := j; i < 300; i += len(keys) {
			want = append(want, i)
		}
		if !slices.Equal(got[k], want) {
			t.Errorf("lane %s ran %v, want %v", k, got[k], want)
		}
	}
	if n := l.Active(); n != 0 {
		t.Errorf("%d lanes still active after Close", n)
	}
}

// TestSlowKeyHoldsUpOnlyItself: while one key's work is held, another
// key's work runs to the end, and the held key's next item waits for it.
func TestSlowKeyHoldsUpOnlyItself(t *testing.T) {
	l := New(context.Background(), 8)
	defer l.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	l.Add(nil, "slow", func(context.Context) { close(started); <-release; note("slow 1") })
	l.Add(nil, "slow", func(context.Context) { note("slow 2") })
	wait(t, "the slow work to start", started)
	fast := make(chan struct{})
	l.Add(nil, "fast", func(context.Context) { note("fast"); close(fast) })
	wait(t, "the other key's work while the slow one is held", fast)
	close(release)
	l.Close()
	if want := []string{"fast", "slow 1", "slow 2"}; !slices.Equal(order, want) {
		t.Errorf("ran %v, want %v", order, want)
	}
}

// TestBounded: Add waits while n items are queued or running, and gives up
// when its stop channel closes; room made by finished work lets it in.
func TestBounded(t *testing.T) {
	l := New(context.Background(), 2)
	defer l.Close()
	release := make(chan struct{})
	for i := range 2 {
		l.Add(nil, fmt.Sprint(i), func(context.Context) { <-release })
	}
	stop := make(chan struct{})
	refused := make(chan bool)
	go func() { refused <- !l.Add(stop, "third", func(context.Context) {}) }()
	close(stop)
	if !<-refused {
		t.Fatal("Add on full lanes returned true though its stop closed")
	}
	added := make(chan bool)
	ran := make(chan struct{})
	go func() { added <- l.Add(nil, "third", func(context.Context) { close(ran) }) }()
	close(release)
	if !<-added {
		t.Fatal("Add refused once there was room")
	}
	wait(t, "the third item", ran)
}

// TestCloseWaitsAndRefuses: Close returns only after queued work ran, and
// Add after Close refuses. The work's ctx is the one New was given.
func TestCloseWaitsAndRefuses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	l := New(ctx, 4)
	started := make(chan struct{})
	var sawCancel bool
	l.Add(nil, "k", func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		sawCancel = true
	})
	wait(t, "the work to start", started)
	cancel()
	l.Close()
	if !sawCancel {
		t.Error("Close returned before the work ended")
	}
	if l.Add(nil, "k", func(context.Context) { t.Error("work added after Close ran") }) {
		t.Error("Add after Close returned true")
	}
}

// TestLaneEndsWithItsWork: a lane is forgotten (its goroutine ends) when
// its last item is done, so idle keys hold nothing: with room for one
// item, the next key's work finds only its own lane.
func TestLaneEndsWithItsWork(t *testing.T) {
	l := New(context.Background(), 1)
	defer l.Close()
	l.Add(nil, "first", func(context.Context) {})
	active := make(chan int, 1)
	l.Add(nil, "second", func(context.Context) { active <- l.Active() })
	select {
	case n := <-active:
		if n != 1 {
			t.Errorf("%d lanes active while the second ran, want only its own", n)
		}
	case <-time.After(waitLimit):
		t.Fatal("the second key's work never ran")
	}
}
