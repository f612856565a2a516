package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/schedule"
	"github.com/cc-connect/cc-connect/trigger"
)

// threadedPlatform is a rich fake platform whose threads hang under posted
// messages, as Slack's do.
type threadedPlatform struct{ richPlatform }

func (threadedPlatform) ThreadUnder(posted platform.Target) platform.Target {
	return platform.Target{Platform: posted.Platform, Channel: posted.Channel, Thread: posted.MessageID}
}

func testRun(id, prompt string) trigger.Run {
	return trigger.Run{ID: id, Kind: trigger.KindSchedule, Name: "nightly", Platform: "fake", Channel: "C1",
		Conversation: id, Header: "Scheduled: nightly", Prompt: prompt, UserID: "schedule:nightly",
		UserName: "schedule:nightly", At: time.Now()}
}

func (h *harness) submit(r trigger.Run) error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return h.e.Submit(ctx, r)
}

// A run on a platform with threads posts its header in the channel and
// runs in the thread under it; people answer there, in the same Claude
// session; submitting it again runs nothing.
func TestRunThreadsUnderItsHeader(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.threads = true })
	r := testRun("schedule:nightly@2026-03-10T01:30Z", "triage the issues")
	if err := h.submit(r); err != nil {
		t.Fatalf("Submit: %v", err)
	}
	header := h.rec.waitSend(t, "Scheduled: nightly")
	if header.To.Thread != "" || header.To.Channel != "C1" {
		t.Errorf("header posted to %+v, want the channel", header.To)
	}
	reply := h.rec.waitSend(t, "echo: triage the issues")
	thread := reply.To.Thread
	if thread == "" || strings.HasPrefix(thread, "run:") {
		t.Fatalf("reply posted to %+v, want the thread under the header", reply.To)
	}
	h.waitIdle()
	if h.e.Working(r.ID) {
		t.Error("the run is still working after its turn")
	}
	if err := h.submit(r); !errors.Is(err, trigger.ErrDuplicate) {
		t.Errorf("second Submit: %v, want ErrDuplicate", err)
	}
	h.say("alice", thread, "[[HISTORY]]")
	hist := h.rec.waitSend(t, "triage the issues\n")
	if hist.To.Thread != thread {
		t.Errorf("answer in the thread posted to %+v", hist.To)
	}
	h.waitIdle()
	if n := len(h.rec.sends("Scheduled: nightly")); n != 1 {
		t.Errorf("header posted %d times, want once", n)
	}
	if n := len(h.rec.sends("echo: triage the issues")); n != 1 {
		t.Errorf("the run ran %d times, want once", n)
	}
}

// Runs of one conversation (a continuing schedule) go on in the thread the
// first one started, also after a restart.
func TestContinuingRunsShareAThread(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.threads = true })
	r1 := testRun("schedule:nightly@2026-03-10T01:30Z", "first night")
	r1.Conversation = "schedule:nightly"
	if err := h.submit(r1); err != nil {
		t.Fatal(err)
	}
	first := h.rec.waitSend(t, "echo: first night")
	h.waitIdle()
	h = h.restart()
	r2 := testRun("schedule:nightly@2026-03-11T01:30Z", "[[HISTORY]] second night")
	r2.Conversation = "schedule:nightly"
	if err := h.submit(r2); err != nil {
		t.Fatal(err)
	}
	second := h.rec.waitSend(t, "second night")
	if second.To.Thread != first.To.Thread {
		t.Errorf("second run in thread %q, the first in %q", second.To.Thread, first.To.Thread)
	}
	if !strings.Contains(second.Text, "first night") {
		t.Errorf("second run does not continue the first's session: %q", second.Text)
	}
	headers := h.rec.kinds("send")
	var inThread int
	for _, c := range headers {
		if c.Text == "Scheduled: nightly" && c.To.Thread == first.To.Thread {
			inThread++
		}
	}
	if inThread != 1 {
		t.Errorf("the second run's header was posted %d times in the thread, want once:\n%s", inThread, dump(headers))
	}
}

// Without threads a run is a turn of the channel's conversation, after its
// header.
func TestRunWithoutThreadsRunsInTheChannel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	if err := h.submit(testRun("webhook:ci@abc", "look at CI")); err != nil {
		t.Fatal(err)
	}
	calls := h.rec.waitFor(t, "the reply", func(c []recorded) bool {
		for _, r := range c {
			if r.Kind == "send" && strings.Contains(r.Text, "echo: look at CI") {
				return true
			}
		}
		return false
	})
	var header, reply int = -1, -1
	for i, c := range calls {
		switch {
		case c.Kind == "send" && c.Text == "Scheduled: nightly":
			header = i
			if c.To.Thread != "" {
				t.Errorf("header in %+v", c.To)
			}
		case c.Kind == "send" && strings.Contains(c.Text, "echo: look at CI"):
			reply = i
		}
	}
	if header < 0 || header > reply {
		t.Errorf("header at %d, reply at %d, want the header first:\n%s", header, reply, dump(calls))
	}
}

func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Bindings[0].Channel = "C1" })
	tests := []struct {
		name string
		run  func(r *trigger.Run)
	}{
		{"unbound channel", func(r *trigger.Run) { r.Channel = "C2" }},
		{"unknown platform", func(r *trigger.Run) { r.Platform = "nope" }},
		{"no prompt", func(r *trigger.Run) { r.Prompt = " " }},
		{"no id", func(r *trigger.Run) { r.ID = "" }},
	}
	for _, tt := range tests {
		r := testRun("run-"+tt.name, "hello")
		tt.run(&r)
		if err := h.submit(r); !errors.Is(err, trigger.ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", tt.name, err)
		}
	}
}

// fakeSchedules records the scheduler calls the engine makes.
type fakeSchedules struct {
	mu    sync.Mutex
	asked []schedule.Asker
	wakes int
}

func (f *fakeSchedules) Chat(_ context.Context, args string, who schedule.Asker) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, who)
	return "schedules: " + args
}

func (f *fakeSchedules) Wake() {
	f.mu.Lock()
	f.wakes++
	f.mu.Unlock()
}

// !schedules goes to the scheduler with who asked, a pause or a resume
// only from an admin; a run's end wakes it.
func TestSchedulesCommandAndWake(t *testing.T) {
	t.Parallel()
	fs := &fakeSchedules{}
	h := newHarness(t, nil)
	h.e.SetSchedules(fs)
	h.say("alice", "T1", "!schedules pause nightly")
	h.rec.waitSend(t, "schedules: pause nightly")
	h.say("bob", "T1", "!schedules resume nightly")
	h.rec.waitSend(t, "Only this binding's admins can resume a schedule.")
	h.say("bob", "T1", "!schedules")
	h.rec.waitSend(t, "schedules: ")
	h.waitIdle()
	fs.mu.Lock()
	asked := append([]schedule.Asker(nil), fs.asked...)
	fs.mu.Unlock()
	if len(asked) != 2 || asked[0].UserID != "alice" || asked[1].UserID != "bob" || asked[0].Channel != "C1" {
		t.Errorf("asked %+v, want alice's pause and bob's listing", asked)
	}
	if err := h.submit(testRun("schedule:nightly@x", "go")); err != nil {
		t.Fatal(err)
	}
	h.rec.waitSend(t, "echo: go")
	h.waitIdle()
	fs.mu.Lock()
	wakes := fs.wakes
	fs.mu.Unlock()
	if wakes == 0 {
		t.Error("the scheduler was not woken when the run ended")
	}
}

// headerFailing is a threaded platform whose posts of run headers fail.
type headerFailing struct{ threadedPlatform }

func (h headerFailing) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	if strings.HasPrefix(text, "Scheduled:") {
		return platform.Target{}, errors.New("channel_not_found")
	}
	return h.threadedPlatform.Send(ctx, to, text)
}

// A run whose header the platform refuses is tried again while it runs,
// stays journaled over a restart, and the next start posts it and runs
// it, once.
func TestRunWhoseHeaderFailsRunsAfterARestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.threads = true })
	h.e.convs.SetTestHooks(conv.TestHooks{HeaderWait: time.Millisecond})
	h.e.AddAdapter(headerFailing{threadedPlatform{richPlatform{h.rec}}})
	r := testRun("schedule:nightly@2026-03-10T01:30Z", "triage after all")
	if err := h.submit(r); err != nil {
		t.Fatal(err)
	}
	h.logs.WaitRecords(t, waitLimit, "Posting a run's header failed; trying again", 3)
	if len(h.rec.sends("echo: triage after all")) != 0 {
		t.Fatal("the run ran without its header")
	}
	if !h.e.Working(r.ID) {
		t.Error("the run that waits for its header is not working")
	}
	h = h.restart()
	if len(h.logs.Records("Run's header not posted before the shutdown; the run stays journaled for the next start")) != 1 {
		t.Error("the shutdown did not leave the run journaled")
	}
	h.rec.waitSend(t, "echo: triage after all")
	h.waitIdle()
	if n := len(h.rec.sends("Scheduled: nightly")); n != 1 {
		t.Errorf("header posted %d times, want once", n)
	}
	if err := h.submit(r); !errors.Is(err, trigger.ErrDuplicate) {
		t.Errorf("resubmitted after the restart: %v, want ErrDuplicate", err)
	}
}

// Two runs of a channel that each start a thread get two threads, each
// with its own Claude session.
func TestTwoRunsTwoThreads(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ *Options, c *harnessConfig) { c.threads = true })
	for _, p := range []string{"first run", "second run"} {
		if err := h.submit(testRun("webhook:ci:"+p, p)); err != nil {
			t.Fatal(err)
		}
	}
	a, b := h.rec.waitSend(t, "echo: first run"), h.rec.waitSend(t, "echo: second run")
	if a.To.Thread == b.To.Thread {
		t.Errorf("both runs replied in thread %q", a.To.Thread)
	}
	h.waitIdle()
	if n := len(h.rec.sends("Scheduled: nightly")); n != 2 {
		t.Errorf("%d headers, want 2", n)
	}
}

// TestSubmitWhileStoppingAsksForARetry: a run submitted once the engine is
// stopping (a webhook request in flight at shutdown) is neither refused
// for good nor taken: the error is a passing one, which the webhook
// answers 503 with Retry-After (webhook.TestSubmitterAnswers), and the
// sender's retry, after the restart, runs it (docs/unattended.md).
func TestSubmitWhileStoppingAsksForARetry(t *testing.T) {
	h := newHarness(t, nil)
	h.stop()
	r := testRun("run-at-shutdown", "hello")
	err := h.submit(r)
	if err == nil || errors.Is(err, trigger.ErrRefused) || errors.Is(err, trigger.ErrDuplicate) {
		t.Fatalf("Submit on a stopped engine = %v, want a passing error (the sender retries)", err)
	}
	h = h.restart()
	if err := h.submit(r); err != nil {
		t.Fatalf("the retry after the restart: %v", err)
	}
	h.rec.waitSend(t, "echo: hello")
}
