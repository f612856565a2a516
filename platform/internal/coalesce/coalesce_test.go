package coalesce

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLatestWins(t *testing.T) {
	th := New(NewInterval(300 * time.Millisecond))
	queued := make(chan string, 10)
	th.queued = func(string) { queued <- "" }
	var mu sync.Mutex
	var sent []string
	edit := func(text string) error {
		return th.Do(context.Background(), "m", "m", text, func(context.Context) error {
			mu.Lock()
			sent = append(sent, text)
			mu.Unlock()
			return nil
		})
	}
	if err := edit("first"); err != nil {
		t.Fatal(err)
	}
	<-queued
	var wg sync.WaitGroup
	for _, text := range []string{"second", "third", "final"} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = edit(text) }()
		<-queued // in line before the next one starts
	}
	wg.Wait()
	if strings.Join(sent, ",") != "first,final" {
		t.Fatalf("sent %v, want first then only the final text", sent)
	}
	if n := th.Len(); n != 0 {
		t.Errorf("%d message states left behind", n)
	}
}

// gatePacer hands out slots only when the test says so, so a test can hold
// a caller in its wait while others queue behind it.
type gatePacer struct {
	reserved chan string   // gets the scope of each reservation
	gate     chan struct{} // one receive per reservation lets it go
	mu       sync.Mutex
	cancels  int
}

func newGatePacer() *gatePacer {
	return &gatePacer{reserved: make(chan string, 10), gate: make(chan struct{})}
}

func (p *gatePacer) Reserve(scope string) (time.Duration, func(bool)) {
	p.reserved <- scope
	<-p.gate
	return 0, func(sent bool) {
		if !sent {
			p.mu.Lock()
			p.cancels++
			p.mu.Unlock()
		}
	}
}

type outcome struct {
	who string
	err error
}

// TestTurnHolderSendsNewest holds one caller in its wait while others
// queue: a superseded one that waits for the turn returns nil at once,
// the holder sends the newest text, and its error reaches the caller whose text it was.
func TestTurnHolderSendsNewest(t *testing.T) {
	p := newGatePacer()
	th := New(p)
	queued := make(chan string, 10)
	th.queued = func(string) { queued <- "" }
	errRefused := errors.New("refused")
	var mu sync.Mutex
	var sent []string
	send := func(text string, err error) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			sent = append(sent, text)
			mu.Unlock()
			return err
		}
	}
	results := make(chan outcome, 3)
	do := func(text string, err error) {
		results <- outcome{text, th.Do(context.Background(), "m", "m", text, send(text, err))}
	}
	go do("a", nil)
	<-queued
	if s := <-p.reserved; s != "m" {
		t.Fatalf("reserved scope %q, want m", s)
	}
	// a holds the turn, waiting for its slot; b queues behind it and is
	// superseded by c at once.
	go do("b", nil)
	<-queued
	go do("c", errRefused)
	<-queued
	if r := <-results; r.who != "b" || r.err != nil {
		t.Fatalf("got %+v, want b superseded with nil", r)
	}
	if desc, ok := th.Pending("m"); !ok || desc != "c" {
		t.Fatalf("Pending = %q, %v; want c", desc, ok)
	}
	p.gate <- struct{}{} // a's slot: it sends c's text
	got := map[string]error{}
	for range 2 {
		r := <-results
		got[r.who] = r.err
	}
	if got["a"] != nil || !errors.Is(got["c"], errRefused) {
		t.Fatalf("results %v, want a nil (superseded) and c with its send's error", got)
	}
	if strings.Join(sent, ",") != "c" {
		t.Errorf("sent %v, want only c", sent)
	}
	if _, ok := th.Pending("m"); ok || th.Len() != 0 {
		t.Errorf("state left behind: %d messages", th.Len())
	}
}

// TestHolderGivingUpHandsTextBack: the caller holding the turn sends a
// newer caller's text, and its own context ends during that send. The
// text goes back to its owner, who sends it with its own context.
func TestHolderGivingUpHandsTextBack(t *testing.T) {
	p := newGatePacer()
	th := New(p)
	queued := make(chan string, 10)
	th.queued = func(string) { queued <- "" }
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	var mu sync.Mutex
	var sent []string
	sendB := func(ctx context.Context) error {
		if ctx == ctxA {
			cancelA() // the holder's caller gives up mid-send
			return ctx.Err()
		}
		mu.Lock()
		sent = append(sent, "b")
		mu.Unlock()
		return nil
	}
	results := make(chan outcome, 2)
	go func() {
		results <- outcome{"a", th.Do(ctxA, "m", "m", "a", func(context.Context) error {
			t.Error("a's text was sent though b superseded it")
			return nil
		})}
	}()
	<-queued
	<-p.reserved
	go func() { results <- outcome{"b", th.Do(context.Background(), "m", "m", "b", sendB)} }()
	<-queued
	p.gate <- struct{}{} // a's slot: a tries b's text, gives up
	<-p.reserved         // b has the turn now
	p.gate <- struct{}{}
	got := map[string]error{}
	for range 2 {
		r := <-results
		got[r.who] = r.err
	}
	if got["a"] != nil || got["b"] != nil {
		t.Errorf("results %v, want both nil", got)
	}
	if strings.Join(sent, ",") != "b" {
		t.Errorf("sent %v, want b once, by its owner", sent)
	}
	if th.Len() != 0 {
		t.Errorf("%d message states left behind", th.Len())
	}
}

// TestGivingUpWhileWaiting: a caller whose context ends while it waits for
// its slot returns the context's error, gives the slot back and leaves
// nothing behind.
func TestGivingUpWhileWaiting(t *testing.T) {
	th := New(NewInterval(time.Hour))
	ctx := context.Background()
	sent := 0
	send := func(context.Context) error { sent++; return nil }
	if err := th.Do(ctx, "k", "k", "a", send); err != nil || sent != 1 {
		t.Fatalf("first edit: %v, sent %d", err, sent)
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := th.Do(dctx, "k", "k", "b", send); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("edit past its deadline = %v", err)
	}
	if sent != 1 || th.Len() != 0 {
		t.Errorf("sent %d, %d states left", sent, th.Len())
	}
}

func TestInterval(t *testing.T) {
	p := NewInterval(time.Second)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	cancels := map[int]func(bool){}
	steps := []struct {
		advance time.Duration
		scope   string
		cancel  int // when > 0: call the cancel of that step (1-based) instead of reserving
		want    time.Duration
	}{
		{0, "A", 0, 0},                       // 1: first send goes at once
		{0, "A", 0, time.Second},             // 2: the next one a second later
		{0, "B", 0, 0},                       // 3: scopes are independent
		{0, "A", 0, 2 * time.Second},         // 4: behind step 2
		{0, "", 4, 0},                        // cancel step 4: its slot is free again
		{0, "A", 0, 2 * time.Second},         // 6: takes it
		{500 * time.Millisecond, "", 2, 0},   // cancel step 2: too late, 6 came after
		{0, "A", 0, 2500 * time.Millisecond}, // 8: behind step 6
		{10 * time.Second, "A", 0, 0},        // 9: idle long enough
		{0, "", 3, 0},                        // cancel B's only reservation
		{0, "B", 0, 0},                       // 11: B starts afresh
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if s.cancel > 0 {
			cancels[s.cancel](false)
			continue
		}
		got, cancel := p.Reserve(s.scope)
		cancels[i+1] = cancel
		if got != s.want {
			t.Errorf("step %d (%s): wait %v, want %v", i+1, s.scope, got, s.want)
		}
	}
}

func TestScopedInterval(t *testing.T) {
	p := NewScopedInterval(func(scope string) time.Duration {
		if scope == "group" {
			return 3 * time.Second
		}
		return time.Second
	})
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	for i, s := range []struct {
		scope string
		want  time.Duration
	}{
		{"group", 0}, {"group", 3 * time.Second}, {"private", 0}, {"private", time.Second}, {"group", 6 * time.Second},
	} {
		if got, _ := p.Reserve(s.scope); got != s.want {
			t.Errorf("step %d (%s): wait %v, want %v", i+1, s.scope, got, s.want)
		}
	}
}

// firstPacer makes ordinary edits wait an hour (booking nothing) and books
// first edits at once.
type firstPacer struct {
	waiting chan struct{} // gets one value per ordinary reservation
}

func (p *firstPacer) Reserve(string) (time.Duration, func(bool)) {
	p.waiting <- struct{}{}
	return time.Hour, nil
}

func (p *firstPacer) ReserveFirst(string) (time.Duration, func(bool)) {
	return 0, func(bool) {}
}

// TestFirstDoesNotWaitBehindTheStream: a message's ordinary edit waits for
// its slot (an hour); its last edit, sent with DoFirst, wakes it, takes its
// place and goes at once; the ordinary edit's caller learns it was
// superseded, and only the last text is sent.
func TestFirstDoesNotWaitBehindTheStream(t *testing.T) {
	p := &firstPacer{waiting: make(chan struct{}, 10)}
	c := New(p)
	var mu sync.Mutex
	var sent []string
	send := func(text string) func(context.Context) error {
		return func(context.Context) error {
			mu.Lock()
			sent = append(sent, text)
			mu.Unlock()
			return nil
		}
	}
	ordinary := make(chan error, 1)
	go func() { ordinary <- c.Do(context.Background(), "m", "C1", "streamed", send("streamed")) }()
	<-p.waiting // the ordinary edit holds the message's turn and waits
	if err := c.DoFirst(context.Background(), "m", "C1", "final", send("final")); err != nil {
		t.Fatalf("DoFirst = %v", err)
	}
	if err := <-ordinary; err != nil {
		t.Errorf("the superseded edit = %v, want nil", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 1 || sent[0] != "final" {
		t.Errorf("sent %q, want the final text alone", sent)
	}
	if n := c.Len(); n != 0 {
		t.Errorf("%d message states left behind", n)
	}
}
