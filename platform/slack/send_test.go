package slack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
)

func TestSendSplitsFormatsAndThreads(t *testing.T) {
	e := startEnv(t)
	var md strings.Builder
	md.WriteString("## Result\n\n**Done**: see [the PR](https://example.com/pr?a=1&b=2).\n\n")
	for i := range 120 {
		fmt.Fprintf(&md, "- item %d with a < b & c > d\n", i)
	}
	md.WriteString("\n```go\n")
	for i := range 150 {
		fmt.Fprintf(&md, "fmt.Println(%d) // a < b && c > d\n", i)
	}
	md.WriteString("```\n\nThe end.")
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000001.000100"}

	last, err := e.a.Send(context.Background(), to, md.String())
	if err != nil {
		t.Fatal(err)
	}
	posts := e.f.Succeeded("chat.postMessage")
	if len(posts) < 3 {
		t.Fatalf("%d posts, want the long reply split in several", len(posts))
	}
	if last.MessageID != fmt.Sprintf("1700000100.%06d", len(posts)) || last.Channel != "C1" || last.Thread != to.Thread || last.Platform != "slack-test" {
		t.Errorf("Send returned %+v, want the last post", last)
	}
	var all strings.Builder
	for i, p := range posts {
		text := p.Form["text"]
		if n := utf8.RuneCountInString(text); n > MessageLimit {
			t.Errorf("part %d has %d runes, limit %d", i, n, MessageLimit)
		}
		if p.Form["thread_ts"] != to.Thread || p.Form["channel"] != "C1" {
			t.Errorf("part %d posted to %s/%s", i, p.Form["channel"], p.Form["thread_ts"])
		}
		if strings.Count(text, "```")%2 != 0 {
			t.Errorf("part %d leaves a code block open:\n%s", i, text)
		}
		if p.Auth != "Bearer "+fakeslack.BotToken {
			t.Errorf("part %d sent with %q", i, p.Auth)
		}
		all.WriteString(text + "\n")
	}
	got := all.String()
	for _, want := range []string{
		"*Result*",
		"*Done*: see <https://example.com/pr?a=1&amp;b=2|the PR>.",
		"• item 0 with a &lt; b &amp; c &gt; d",
		"• item 119 ",
		"fmt.Println(0) // a &lt; b &amp;&amp; c &gt; d",
		"fmt.Println(149) // a &lt; b &amp;&amp; c &gt; d",
		"The end.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("posted text lacks %q", want)
		}
	}
	if strings.Contains(got, "```go") {
		t.Error("language tag left on a code fence")
	}
}

func TestSendTopLevelHasNoThread(t *testing.T) {
	e := startEnv(t)
	if _, err := e.a.Send(context.Background(), platform.Target{Channel: "D1"}, "hi"); err != nil {
		t.Fatal(err)
	}
	p := e.f.Succeeded("chat.postMessage")[0]
	if _, ok := p.Form["thread_ts"]; ok {
		t.Errorf("top-level DM reply carries thread_ts %q", p.Form["thread_ts"])
	}
	if _, err := e.a.Send(context.Background(), platform.Target{Channel: "D1"}, " \n"); !errors.Is(err, ErrEmptyMessage) {
		t.Errorf("empty Send = %v, want ErrEmptyMessage", err)
	}
}

func TestRateLimitedSendWaitsAndRetries(t *testing.T) {
	e := startEnv(t)
	for len(e.sleeps) > 0 {
		<-e.sleeps
	}
	e.f.RateLimit("chat.postMessage", 1)
	last, err := e.a.Send(context.Background(), platform.Target{Channel: "C1", Thread: "1.2"}, "must arrive")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.f.Calls("chat.postMessage")); n != 2 {
		t.Errorf("%d posts tried, want the rate-limited one and its retry", n)
	}
	posts := e.f.Succeeded("chat.postMessage")
	if len(posts) != 1 || posts[0].Form["text"] != "must arrive" || last.MessageID == "" {
		t.Errorf("posts = %+v, last = %+v", posts, last)
	}
	select {
	case d := <-e.sleeps:
		if d != time.Second {
			t.Errorf("waited %v, want Retry-After 1s", d)
		}
	default:
		t.Error("no wait before the retry")
	}
}

func TestRateLimitWaitBoundedByContext(t *testing.T) {
	f := fakeslack.New(t)
	a, _, _ := newAdapter(t, testConfig(f))
	a.wire.sleep = backoff.Sleep // real waits: the ctx must cut them short
	f.RateLimit("chat.postMessage", 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		f.WaitCalls(t, "chat.postMessage", 1)
		cancel()
	}()
	_, err := a.Send(ctx, platform.Target{Channel: "C1"}, "x")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Send = %v, want context.Canceled", err)
	}
}

func TestReactions(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	msg := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1.1", MessageID: "1700000001.000100"}
	e.f.AddMessage("C1", msg.MessageID, "U1", "react to me")
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"add eyes", func() error { return e.a.React(ctx, msg, "eyes") }},
		{"add eyes again is fine", func() error { return e.a.React(ctx, msg, "eyes") }},
		{"remove eyes", func() error { return e.a.Unreact(ctx, msg, "eyes") }},
		{"remove missing is fine", func() error { return e.a.Unreact(ctx, msg, "eyes") }},
		{"add check by message ID form", func() error {
			return e.a.React(ctx, platform.Target{Channel: "C1", MessageID: "C1:1700000001.000100"}, ":white_check_mark:")
		}},
	} {
		if err := step.do(); err != nil {
			t.Errorf("%s: %v", step.name, err)
		}
	}
	adds := e.f.Calls("reactions.add")
	if len(adds) != 3 {
		t.Fatalf("%d reactions.add calls, want 3", len(adds))
	}
	if f := adds[0].Form; f["name"] != "eyes" || f["channel"] != "C1" || f["timestamp"] != msg.MessageID {
		t.Errorf("reactions.add form = %v", f)
	}
	if f := adds[2].Form; f["name"] != "white_check_mark" || f["timestamp"] != msg.MessageID {
		t.Errorf("reactions.add form = %v", f)
	}
	if m, _ := e.f.Message("C1", msg.MessageID); len(m.Reactions) != 1 || m.Reactions[0] != "white_check_mark" {
		t.Errorf("reactions on the message = %v, want [white_check_mark]", m.Reactions)
	}
	e.f.Fail("reactions.add", "channel_not_found")
	if err := e.a.React(ctx, msg, "x"); err == nil || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("React on a missing channel = %v", err)
	}
}

// TestEditsCoalesceLatestWins holds the first chat.update in the fake while
// nine more edits of the same message arrive: the superseded ones return
// at once, and only the first and the final text reach Slack.
func TestEditsCoalesceLatestWins(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	msg, err := e.a.Send(ctx, platform.Target{Channel: "C1"}, "step 0")
	if err != nil {
		t.Fatal(err)
	}
	release := e.f.Hold("chat.update")

	errs := make(chan error, 10)
	go func() { errs <- e.a.Edit(ctx, msg, "step 1") }()
	e.f.WaitHeld(t, "chat.update", 1)

	var wg sync.WaitGroup
	for i := 2; i <= 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- e.a.Edit(ctx, msg, fmt.Sprintf("step %d", i))
		}()
		// Wait until this edit is the pending one before sending the next,
		// so "latest" is well defined.
		want := fmt.Sprintf("step %d", i)
		waitPending(t, e.a.wire.edits, "C1:"+msg.MessageID, want)
	}
	// Steps 2..9 were superseded and have returned nil already.
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("superseded edit returned %v", err)
		}
	}
	release()
	wg.Wait()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("edit returned %v", err)
		}
	}
	ups := e.f.Succeeded("chat.update")
	if len(ups) != 2 || ups[0].Form["text"] != "step 1" || ups[1].Form["text"] != "step 10" {
		var texts []string
		for _, u := range ups {
			texts = append(texts, u.Form["text"])
		}
		t.Errorf("updates = %q, want [step 1, step 10]", texts)
	}
}

// waitPending waits until the throttle's pending edit for key is want.
// The throttle has no event for this, so it polls with a deadline.
func waitPending(t *testing.T, th *coalesce.Coalescer, key, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if got, _ := th.Pending(key); got == want {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("edit %q never became pending", want)
}

func TestEditLongTextIsCut(t *testing.T) {
	e := startEnv(t)
	long := strings.Repeat("word ", 2000)
	msg, err := e.a.Send(context.Background(), platform.Target{Channel: "C1"}, "short")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.Edit(context.Background(), msg, long); err != nil {
		t.Fatal(err)
	}
	text := e.f.Succeeded("chat.update")[0].Form["text"]
	if n := utf8.RuneCountInString(text); n > MessageLimit || !strings.HasSuffix(text, "…") {
		t.Errorf("edit of %d runes ends %q", n, text[len(text)-10:])
	}
}

// TestThrottlePacing walks the pacer's three limits on a fake clock: the
// bucket and the channel interval for ordinary edits, the window's budget
// (its reserve kept from ordinary edits) for all, and a first edit that
// skips the first two. An edit that has to wait books nothing and asks
// again (a nil done).
func TestThrottlePacing(t *testing.T) {
	// 10 in a window of 10 s (a reserve of 2), ordinary edits from a bucket
	// of 2 refilling at one a second, 500ms between edits of a channel.
	p := newWindowPacer(10, 2, 500*time.Millisecond, 10*time.Second)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	type step struct {
		advance time.Duration
		channel string
		first   bool
		want    time.Duration
	}
	steps := []step{
		{0, "A", false, 0},                                 // bucket token 1
		{0, "B", false, 0},                                 // bucket token 2, another channel
		{0, "C", false, time.Second},                       // the bucket is empty: one token a second
		{0, "A", true, 0},                                  // a first edit takes no token, skips A's interval
		{time.Second, "A", false, 0},                       // a token again; A's interval is past
		{0, "A", false, time.Second},                       // bucket empty again (and A's interval)
		{10*time.Second + time.Millisecond, "D", false, 0}, // everything left the window
		{0, "D", false, 500 * time.Millisecond},            // the channel interval dominates
		{500 * time.Millisecond, "D", false, 0},            // its slot came
		{time.Second, "E", false, 0},                       // 3 in the window
		{time.Second, "F", false, 0},                       // 4
		{time.Second, "G", false, 0},                       // 5
		{time.Second, "H", false, 0},                       // 6
		{time.Second, "I", false, 0},                       // 7
		{time.Second, "J", false, 0},                       // 8: the ordinary share is spent
		{time.Second, "K", false, 2500 * time.Millisecond}, // until D's first leaves the window
		{0, "K", true, 0},                                  // 9: the reserve serves a first edit
		{0, "L", true, 0},                                  // 10
		{0, "L", true, 2500 * time.Millisecond},            // the budget is spent for every edit
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		var got time.Duration
		var done func(bool)
		if s.first {
			got, done = p.ReserveFirst(s.channel)
		} else {
			got, done = p.Reserve(s.channel)
		}
		if got != s.want {
			t.Errorf("step %d (%s, first %t): wait %v, want %v", i+1, s.channel, s.first, got, s.want)
		}
		if (done == nil) != (s.want > 0) {
			t.Errorf("step %d: booked %t with a wait of %v", i+1, done != nil, got)
		}
		if done != nil {
			done(true)
		}
	}
}

// TestThrottleCountsCallsInFlight: a call still in flight counts as made
// now, and from when it ended once it returned, so that a slow call does
// not leave the window before Slack can have counted it.
func TestThrottleCountsCallsInFlight(t *testing.T) {
	p := newWindowPacer(2, 10, 0, 10*time.Second)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	_, a := p.ReserveFirst("A")
	_, b := p.ReserveFirst("A")
	now = now.Add(20 * time.Second) // both still in flight
	if w, done := p.ReserveFirst("A"); done != nil || w != flightRecheck {
		t.Fatalf("with two calls in flight: wait %v, booked %t; want to ask again after %v", w, done != nil, flightRecheck)
	}
	a(true) // ends now, at 20 s
	b(false)
	if w, done := p.ReserveFirst("A"); done == nil || w != 0 {
		t.Fatalf("after one call was given back: wait %v", w)
	}
	if w, _ := p.ReserveFirst("A"); w != 10*time.Second {
		t.Errorf("the call that ended at 20 s leaves the window at 30 s: wait %v, want 10s", w)
	}
}

func TestEditGivesUpWhenCallerDoes(t *testing.T) {
	p := newEditPacer(1, 1, time.Millisecond)
	th := coalesce.New(p)
	ctx := context.Background()
	sent := 0
	apply := func(context.Context) error { sent++; return nil }
	if err := th.Do(ctx, "k", "C", "a", apply); err != nil || sent != 1 {
		t.Fatalf("first edit: %v, sent %d", err, sent)
	}
	// The bucket is empty for a minute: a caller whose deadline comes
	// first gives up, returns its token and leaves nothing behind.
	dctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := th.Do(dctx, "k", "C", "b", apply); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("edit past its deadline = %v", err)
	}
	if sent != 1 || th.Len() != 0 {
		t.Errorf("sent %d, %d states left", sent, th.Len())
	}
	if p.tokens < -0.01 {
		t.Errorf("tokens = %v: the unsent edit kept its token", p.tokens)
	}
}

func TestServerErrorsRetriedOnlyWhenSafe(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	for len(e.sleeps) > 0 {
		<-e.sleeps
	}
	e.f.AddMessage("C1", "1.1", "U1", "react to me")
	e.f.Down("reactions.add", 2)
	e.f.Down("chat.postMessage", 1)

	// A reaction is idempotent: retried after 1s and 2s.
	if err := e.a.React(ctx, platform.Target{Channel: "C1", MessageID: "1.1"}, "eyes"); err != nil {
		t.Fatalf("React: %v", err)
	}
	if got := []time.Duration{<-e.sleeps, <-e.sleeps}; got[0] != time.Second || got[1] != 2*time.Second {
		t.Errorf("waits %v, want [1s 2s]", got)
	}
	// A post that failed with 5xx may have been posted: not retried, so a
	// reply is never doubled; the caller sees the error.
	if _, err := e.a.Send(ctx, platform.Target{Channel: "C1"}, "hello"); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("Send during a 5xx = %v, want the error", err)
	}
	if n := len(e.f.Succeeded("chat.postMessage")); n != 0 {
		t.Errorf("%d posts went through", n)
	}
}

// TestThrottleConcurrentEdits hammers the throttle from many goroutines
// (run it with -race): every call returns, nothing is left behind, and the
// last text sent for each message is the last one any caller asked for.
func TestThrottleConcurrentEdits(t *testing.T) {
	th := coalesce.New(newEditPacer(600000, 1000, 0))
	var mu sync.Mutex
	applied := map[string][]string{}
	var wg sync.WaitGroup
	for k := range 8 {
		key := fmt.Sprintf("C%d:1.1", k)
		for g := range 4 {
			wg.Go(func() {
				for i := range 25 {
					text := fmt.Sprintf("g%d-%d", g, i)
					err := th.Do(context.Background(), key, key[:2], text, func(context.Context) error {
						mu.Lock()
						applied[key] = append(applied[key], text)
						mu.Unlock()
						return nil
					})
					if err != nil {
						t.Errorf("edit %s %s: %v", key, text, err)
					}
				}
			})
		}
	}
	wg.Wait()
	if n := th.Len(); n != 0 {
		t.Errorf("%d message states left behind", n)
	}
	for k := range 8 {
		key := fmt.Sprintf("C%d:1.1", k)
		got := applied[key]
		if len(got) == 0 || len(got) > 100 {
			t.Fatalf("%s: %d edits applied for 100 calls", key, len(got))
		}
		// Each goroutine's final call either ran or was superseded by a
		// later call, so the last applied text is some goroutine's final.
		if last := got[len(got)-1]; !strings.HasSuffix(last, "-24") {
			t.Errorf("%s: last applied %q is not a final edit", key, last)
		}
	}
}
