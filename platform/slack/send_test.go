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
	a.sleep = backoff.Sleep // real waits: the ctx must cut them short
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
		waitPending(t, e.a.edits, "C1:"+msg.MessageID, want)
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

func TestThrottlePacing(t *testing.T) {
	// 60 a minute with a burst of 2, and 500ms between edits of a channel.
	p := newEditPacer(60, 2, 500*time.Millisecond)
	now := time.Unix(1000, 0)
	p.now = func() time.Time { return now }
	steps := []struct {
		advance time.Duration
		channel string
		want    time.Duration
	}{
		{0, "A", 0},                      // burst token 1
		{0, "B", 0},                      // burst token 2, other channel
		{0, "C", time.Second},            // bucket empty: one token a second
		{0, "A", 2 * time.Second},        // next token after that
		{10 * time.Second, "D", 0},       // refilled, but only to the burst
		{0, "D", 500 * time.Millisecond}, // channel interval dominates
		{0, "E", time.Second},            // the burst is spent again
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got, _ := p.Reserve(s.channel); got != s.want {
			t.Errorf("step %d (%s): wait %v, want %v", i, s.channel, got, s.want)
		}
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
