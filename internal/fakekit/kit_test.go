package fakekit

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB whose Fatalf ends only the goroutine that called
// it, so that a test can see a wait fail.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.failed = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// run runs f as a test body on its own goroutine and returns the failure,
// "" when it passed.
func (r *recorder) run(f func()) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func TestSignalWaitReturnsOnChange(t *testing.T) {
	sig := NewSignal("fakex")
	var mu sync.Mutex
	n := 0
	var start sync.Once
	// The changes begin once the wait has looked and found nothing, so
	// that only a Notify can end it: were one lost, it would fail at its
	// limit.
	sig.Wait(t, "three changes", func() bool {
		start.Do(func() {
			go func() {
				for range 3 {
					mu.Lock()
					n++
					mu.Unlock()
					sig.Notify()
				}
			}()
		})
		mu.Lock()
		defer mu.Unlock()
		return n == 3
	})
}

func TestSignalWaitFailsAtItsLimit(t *testing.T) {
	sig := NewSignal("fakex")
	sig.SetLimit(20 * time.Millisecond)
	r := &recorder{TB: t}
	calls := 0
	failed := r.run(func() {
		sig.Wait(r, "what never comes", func() bool { calls++; return false })
	})
	if !strings.Contains(failed, "fakex: timed out after 20ms waiting for what never comes") {
		t.Errorf("failure = %q", failed)
	}
	if calls != 1 {
		t.Errorf("cond tried %d times with no change, want once", calls)
	}
	if sig.SetLimit(0); sig.Limit() != DefaultWaitLimit {
		t.Errorf("limit after SetLimit(0) = %s", sig.Limit())
	}
}

func TestSignalChangedClosesOnNotify(t *testing.T) {
	sig := NewSignal("fakex")
	a := sig.Changed()
	if b := sig.Changed(); a != b {
		t.Error("two reads before a change gave two channels")
	}
	sig.Notify()
	select {
	case <-a:
	default:
		t.Fatal("Notify left the channel open")
	}
	select {
	case <-sig.Changed():
		t.Error("the channel after a Notify is closed already")
	default:
	}
	sig.Notify() // with nobody waiting: nothing to close, no panic
	sig.Notify()
}

func TestLogNextReadsAQueue(t *testing.T) {
	sig := NewSignal("fakex")
	l := NewLog[string](sig)
	for _, e := range []string{"poll", "send 1", "poll", "send 2", "edit"} {
		l.Add(e)
	}
	isSend := func(e string) bool { return strings.HasPrefix(e, "send") }
	steps := []struct {
		match func(string) bool
		want  string
		ok    bool
	}{
		{isSend, "send 1", true},
		{nil, "poll", true},      // the entry after the one taken
		{isSend, "send 2", true}, // passes nothing it should not
		{isSend, "", false},      // "edit" is passed over ...
		{nil, "", false},         // ... and not offered again
	}
	for i, st := range steps {
		got, ok := l.TryNext(st.match)
		if got != st.want || ok != st.ok {
			t.Errorf("step %d: TryNext = %q, %v; want %q, %v", i, got, ok, st.want, st.ok)
		}
	}
	if n := l.Add("send 3"); n != 1 {
		t.Errorf("Add returned %d unread, want 1", n)
	}
	if got := l.Select(isSend); strings.Join(got, ",") != "send 1,send 2,send 3" {
		t.Errorf("Select = %q: the queue's reads changed the log", got)
	}
	if n := l.Count(func(e string) bool { return e == "poll" }); n != 2 {
		t.Errorf("Count = %d", n)
	}
	if all := l.All(); len(all) != 6 || all[0] != "poll" {
		t.Errorf("All = %q", all)
	}
}

func TestLogNextWaitsForAnEntry(t *testing.T) {
	sig := NewSignal("fakex")
	l := NewLog[int](sig)
	l.Add(1)
	// The even entry comes once Next has passed the odd one, so that only
	// the log's notification can end the wait.
	var once sync.Once
	got := l.Next(t, "an even entry", func(n int) bool {
		if n == 1 {
			once.Do(func() { go l.Add(2) })
		}
		return n%2 == 0
	})
	if got != 2 {
		t.Errorf("Next = %d", got)
	}

	sig.SetLimit(10 * time.Millisecond)
	r := &recorder{TB: t}
	if failed := r.run(func() { l.Next(r, "a third entry", nil) }); !strings.Contains(failed, "waiting for a third entry") {
		t.Errorf("failure = %q", failed)
	}
}

type msg struct {
	text  string
	edits []string
}

func cloneMsg(m *msg) msg {
	c := *m
	c.edits = append([]string(nil), m.edits...)
	return c
}

func TestStoreVersions(t *testing.T) {
	type op struct {
		put    string // key to put a new value under
		change string // key whose message changes in place
	}
	tests := []struct {
		name     string
		ops      []op
		order    string         // keys in the order kept
		versions map[string]int // by key; a missing key is 0
	}{
		{"nothing", nil, "", map[string]int{"a": 0}},
		{"a post is version 1", []op{{put: "a"}}, "a", map[string]int{"a": 1}},
		{"each edit is the next", []op{{put: "a"}, {change: "a"}, {change: "a"}}, "a", map[string]int{"a": 3}},
		{"posts keep their order", []op{{put: "b"}, {put: "a"}, {change: "b"}}, "b,a", map[string]int{"a": 1, "b": 2}},
		{"a message put again keeps its place", []op{{put: "a"}, {put: "b"}, {put: "a"}}, "a,b", map[string]int{"a": 2, "b": 1}},
		{"a change of nothing is nothing", []op{{change: "z"}}, "", map[string]int{"z": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			s := NewStore[string](&mu, NewSignal("fakex"), cloneMsg)
			for _, o := range tt.ops {
				mu.Lock()
				if o.put != "" {
					s.PutLocked(o.put, &msg{text: o.put})
				}
				if m, ok := s.LookupLocked(o.change); ok {
					m.edits = append(m.edits, "x")
				}
				s.ChangedLocked(o.change)
				mu.Unlock()
			}
			var keys []string
			for _, m := range s.Select(func(*msg) bool { return true }) {
				keys = append(keys, m.text)
			}
			if got := strings.Join(keys, ","); got != tt.order {
				t.Errorf("order = %q, want %q", got, tt.order)
			}
			for k, want := range tt.versions {
				if got := s.Version(k); got != want {
					t.Errorf("Version(%s) = %d, want %d", k, got, want)
				}
			}
		})
	}
}

func TestStoreHandsOutCopies(t *testing.T) {
	var mu sync.Mutex
	s := NewStore[string](&mu, NewSignal("fakex"), cloneMsg)
	mu.Lock()
	s.PutLocked("a", &msg{text: "a", edits: []string{"one"}})
	mu.Unlock()
	got, _ := s.Get("a")
	got.edits[0] = "scribbled"
	if again, _ := s.Get("a"); again.edits[0] != "one" {
		t.Errorf("a change to a copy reached the store: %+v", again)
	}
	if _, ok := s.Get("b"); ok {
		t.Error("Get of a key never put found a message")
	}
}

func TestStoreWaitsReturnOnChange(t *testing.T) {
	var mu sync.Mutex
	sig := NewSignal("fakex")
	s := NewStore[string](&mu, sig, cloneMsg)
	mu.Lock()
	s.PutLocked("a", &msg{text: "a"})
	mu.Unlock()
	// Each change is made once the wait has looked and found nothing, so
	// that only the store's notification can end it.
	afterFirstLook := func(change func()) func() {
		var once sync.Once
		return func() { once.Do(func() { go change() }) }
	}

	post := afterFirstLook(func() {
		mu.Lock()
		s.PutLocked("b", &msg{text: "b"})
		mu.Unlock()
	})
	// match may call the store: it runs without the lock.
	got := s.WaitFirst(t, "b", func(m msg) bool {
		post()
		_, ok := s.Get("b")
		return ok && m.text == "b"
	})
	if got.text != "b" {
		t.Errorf("WaitFirst = %+v", got)
	}

	edit := afterFirstLook(func() {
		mu.Lock()
		m, _ := s.LookupLocked("a")
		m.edits = append(m.edits, "edited")
		s.ChangedLocked("a")
		mu.Unlock()
	})
	got = s.WaitKey(t, "a", "an edit", func(m msg) bool { edit(); return len(m.edits) == 1 })
	if got.edits[0] != "edited" {
		t.Errorf("WaitKey = %+v", got)
	}

	sig.SetLimit(10 * time.Millisecond)
	r := &recorder{TB: t}
	if failed := r.run(func() { s.WaitKey(r, "c", "a message c", func(msg) bool { return true }) }); !strings.Contains(failed, "fakex: timed out after 10ms waiting for a message c") {
		t.Errorf("failure = %q", failed)
	}
}

func TestOverrides(t *testing.T) {
	var o Overrides[int]
	if _, ok := o.Next("m"); ok {
		t.Fatal("the zero value gave an answer")
	}
	o.Add("m", 1, 2)
	o.Add("m", 3)
	o.Set("n", 2, 9)
	o.Set("k", 1, 5)
	o.Set("k", 0, 5)          // clears
	o.Set("down", 1<<30, 503) // "from now on", in effect
	steps := []struct {
		key  string
		want int
		ok   bool
	}{
		{"m", 1, true}, {"n", 9, true}, {"m", 2, true}, {"m", 3, true}, {"m", 0, false},
		{"n", 9, true}, {"n", 0, false}, {"k", 0, false}, {"down", 503, true}, {"down", 503, true},
	}
	for i, st := range steps {
		if got, ok := o.Next(st.key); got != st.want || ok != st.ok {
			t.Errorf("step %d: Next(%s) = %d, %v; want %d, %v", i, st.key, got, ok, st.want, st.ok)
		}
	}
}

func TestHolds(t *testing.T) {
	sig := NewSignal("fakex")
	h := NewHolds[string](sig)
	ctx := t.Context()
	if !h.Pass(ctx, "post", "C1") || h.Held("post") != 0 {
		t.Fatal("a call with no hold was held")
	}
	release := h.Hold("post", func(ch string) bool { return ch == "C1" })
	if !h.Pass(ctx, "post", "C2") || !h.Pass(ctx, "edit", "C1") {
		t.Fatal("a hold held a call it does not match")
	}
	passed := make(chan bool)
	go func() { passed <- h.Pass(ctx, "post", "C1") }()
	sig.Wait(t, "the post to be held", func() bool { return h.Held("post") == 1 })
	select {
	case <-passed:
		t.Fatal("a held call went on before its release")
	default:
	}
	release()
	if !<-passed {
		t.Error("the released call was refused")
	}
	if !h.Pass(ctx, "post", "C1") {
		t.Error("a call after the release was held")
	}

	// The client going away ends the wait; ReleaseAll ends every hold.
	h.Hold("post", nil)
	gone, cancel := context.WithCancel(ctx)
	go func() { passed <- h.Pass(gone, "post", "C3") }()
	sig.Wait(t, "the second post to be held", func() bool { return h.Held("post") == 2 })
	cancel()
	if <-passed {
		t.Error("a call whose client went away passed")
	}
	go func() { passed <- h.Pass(ctx, "post", "C4") }()
	sig.Wait(t, "the third post to be held", func() bool { return h.Held("post") == 3 })
	h.ReleaseAll()
	if !<-passed || !h.Pass(ctx, "post", "C5") {
		t.Error("ReleaseAll left a call held")
	}
}
