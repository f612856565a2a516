package engine

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/engine/render"
	"github.com/cc-connect/cc-connect/platform"
)

func TestReplyCarriesContextIndicator(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "hello")
	got := h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	if got.Text != "echo: hello\n[ctx: 25%]" {
		t.Errorf("reply = %q, want the text then [ctx: 25%%] on its own line", got.Text)
	}
	if got.To.Channel != "C1" || got.To.Thread != "T1" || got.To.MessageID != "" {
		t.Errorf("reply target = %+v, want channel C1 thread T1", got.To)
	}
	recs := h.logs.Records("context_usage")
	if len(recs) != 1 {
		t.Fatalf("context_usage logged %d times, want 1", len(recs))
	}
	r := recs[0]
	if r["sdk_pct"] != float64(25) || r["input_tokens"] != float64(50000) || r["context_window"] != float64(200000) ||
		r["session_key"] != "fake/C1/T1" || r["level"] != "INFO" {
		t.Errorf("context_usage record = %v", r)
	}
}

// TestNoIndicatorWithoutTokenData: a fresh session's first turn that
// reported no usage has no figure to show, so the reply carries no [ctx]
// line rather than a made-up 0%.
func TestNoIndicatorWithoutTokenData(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "hello [[NOUSAGE]]")
	got := h.rec.waitSend(t, "echo: hello")
	h.waitIdle()
	if strings.Contains(got.Text, "[ctx:") {
		t.Errorf("reply = %q, want no indicator without token data", got.Text)
	}
	if recs := h.logs.Records("context_usage"); len(recs) != 0 {
		t.Errorf("context_usage logged without token data: %v", recs)
	}
}

func TestReplyShapes(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"self-report stripped", "hi [[SELF:30]]", "echo: hi [[SELF:30]]\n[ctx: 25%]"},
		{"empty reply", "[[EMPTY]]", "(no reply text)\n[ctx: 25%]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options, _ *harnessConfig) { o.SelfReport = true })
			h.say("alice", "T1", tt.text)
			h.waitIdle()
			sends := h.rec.sends("")
			if len(sends) != 1 || sends[0] != tt.want {
				t.Errorf("sent %q, want [%q]", sends, tt.want)
			}
		})
	}
}

func TestSelfReportReachesStatusAndLog(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.SelfReport = true })
	if !strings.Contains(h.e.opts.Agent.AppendSystemPrompt, "[ctx: ~XX%]") {
		t.Fatalf("AppendSystemPrompt = %q, want the self-report instruction", h.e.opts.Agent.AppendSystemPrompt)
	}
	h.say("alice", "T1", "hi [[SELF:31]]")
	h.waitIdle()
	recs := h.logs.Records("context_usage")
	if len(recs) != 1 || recs[0]["self_reported_pct"] != float64(31) || recs[0]["drift"] != float64(6) {
		t.Fatalf("context_usage = %v, want self_reported_pct 31 and drift 6", recs)
	}
	h.say("alice", "T1", "!status")
	st := h.rec.waitSend(t, "State:")
	if !strings.Contains(st.Text, "25%") || !strings.Contains(st.Text, "31%") {
		t.Errorf("status = %q, want both tracks", st.Text)
	}
}

func TestQueueOrderAndLimit(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.QueueLimit = 2 })
	h.say("alice", "T1", "one [[WAIT]]")
	h.fa.waitFor(t, "the first turn to run", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("alice", "T1", "two")
	h.rec.waitSend(t, "Queued (position 1)")
	h.say("bob", "T1", "three")
	h.rec.waitSend(t, "Queued (position 2)")
	h.say("alice", "T1", "four")
	h.rec.waitSend(t, "Queue full")
	h.fa.release(t)
	h.waitIdle()

	var replies []string
	for _, s := range h.rec.sends("echo:") {
		replies = append(replies, strings.SplitN(s, "\n", 2)[0])
	}
	want := []string{"echo: one [[WAIT]]", "echo: two", "echo: three"}
	if strings.Join(replies, "|") != strings.Join(want, "|") {
		t.Errorf("replies in order %q, want %q", replies, want)
	}
	// One process served all turns: nothing was sent into a running turn
	// and nothing was dropped silently.
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d spawns, want 1", n)
	}
}

func TestSessionsRunConcurrently(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "a [[WAIT]]")
	h.say("bob", "T2", "b [[WAIT]]")
	h.fa.waitFor(t, "both turns running at once", func(fa *fakeAgents) bool { return fa.waiting == 2 })
	h.fa.release(t)
	h.fa.release(t)
	h.rec.waitSend(t, "echo: a")
	h.rec.waitSend(t, "echo: b")
}

func TestProcessCapWaitsForFreeSlot(t *testing.T) {
	tests := []struct {
		name   string
		global int
		perWS  int
	}{
		{"global cap", 1, 0},
		{"workspace cap", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options, _ *harnessConfig) {
				o.MaxProcesses, o.MaxProcessesPerWorkspace = tt.global, tt.perWS
			})
			h.say("alice", "T1", "a [[WAIT]]")
			h.fa.waitFor(t, "the first turn", func(fa *fakeAgents) bool { return fa.waiting == 1 })
			h.say("bob", "T2", "b")
			h.rec.waitSend(t, render.NoticeWaiting)
			h.fa.release(t)
			h.rec.waitSend(t, "echo: b")
			h.waitIdle()
			if got := h.rec.sends(render.NoticeWaiting); len(got) != 1 {
				t.Errorf("waiting notice posted %d times, want once", len(got))
			}
			h.fa.mu.Lock()
			maxLive := h.fa.maxLive
			h.fa.mu.Unlock()
			if maxLive != 1 {
				t.Errorf("max live processes = %d, want 1", maxLive)
			}
			if recs := h.logs.Records("Reaping idle agent process"); len(recs) != 1 {
				t.Errorf("reaped %d processes early, want 1 (the idle one of T1)", len(recs))
			}
		})
	}
}

func TestIdleReapThenResume(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.IdleTimeout = 10 * time.Millisecond })
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.fa.waitFor(t, "the idle process to be reaped", func(fa *fakeAgents) bool { return fa.live == 0 })
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	spawns := h.fa.spawnsSnapshot()
	if len(spawns) != 2 || spawns[0].ResumeID != "" || spawns[1].ResumeID != sess1 {
		t.Fatalf("spawns = %+v, want a fresh one then --resume sess-1", spawns)
	}
	if got := h.fa.history(sess1); strings.Join(got, "|") != "first|second" {
		t.Errorf("history = %q, want both turns in one session", got)
	}
	reaps := h.logs.Records("Reaping idle agent process")
	if len(reaps) == 0 || reaps[0]["session_key"] != "fake/C1/T1" || reaps[0]["context_tokens"] != float64(50000) ||
		reaps[0]["workspace"] == nil || reaps[0]["idle"] == nil {
		t.Errorf("reap log = %v", reaps)
	}
	resumes := h.logs.Records("Resuming agent session")
	if len(resumes) != 1 || resumes[0]["session_id"] != sess1 || resumes[0]["transcript_size"] != float64(1234) {
		t.Errorf("resume log = %v", resumes)
	}
}

func TestAccessRefusedOncePerThread(t *testing.T) {
	h := newHarness(t, nil)
	h.say("mallory", "T1", "hi")
	h.say("mallory", "T1", "hi again")
	h.say("mallory", "T2", "hi")
	h.say("alice", "T3", "allowed")
	h.rec.waitSend(t, "echo: allowed")
	// The refusals are posted off the accept path, each on a goroutine of
	// its own (notify.go), and may land after the allowed reply: they are
	// the engine's outstanding work, which WaitIdle waits for.
	h.waitIdle()
	refusals := 0
	threads := map[string]bool{}
	for _, c := range h.rec.kinds("send") {
		if c.Text == refusalText {
			refusals++
			threads[c.To.Thread] = true
		}
	}
	if refusals != 2 || !threads["T1"] || !threads["T2"] {
		t.Errorf("refusals = %d in %v, want one in T1 and one in T2", refusals, threads)
	}
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d agent spawns, want only the allowed user's", n)
	}
	if recs := h.logs.Records("Refused a message from a user who is not allowed"); len(recs) != 3 {
		t.Errorf("refusal logged %d times, want each of the 3 messages", len(recs))
	}
}

func TestIgnoredMessages(t *testing.T) {
	yes := true
	tests := []struct {
		name string
		msg  func(h *harness) platform.Message
	}{
		{"bot", func(h *harness) platform.Message {
			m := h.message("alice", "T1", "hi")
			m.IsBot = true
			return m
		}},
		{"unbound channel", func(h *harness) platform.Message {
			m := h.message("alice", "T1", "hi")
			m.Target.Platform = "other"
			return m
		}},
		{"no mention in a channel", func(h *harness) platform.Message {
			return h.message("alice", "T1", "hi")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Bindings[0].RequireMention = &yes })
			other := newFakePlatform("other")
			h.e.AddAdapter(other)
			h.deliver(tt.msg(h))
			// A later message that is handled proves the first was
			// processed (and ignored) before it.
			m := h.message("alice", "T9", "marker")
			m.Mentioned = true
			h.deliver(m)
			h.rec.waitSend(t, "echo: marker")
			h.waitIdle()
			if sends := h.rec.sends(""); len(sends) != 1 {
				t.Errorf("sent %q, want only the marker's reply", sends)
			}
			if sends := other.sends(""); len(sends) != 0 {
				t.Errorf("sent %q on the unbound platform", sends)
			}
		})
	}
}

func TestRequireMention(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.Bindings[0].RequireMention = nil })
	// Default: DMs need no mention.
	dm := h.message("alice", "", "in a dm")
	dm.Target.Channel = "D1"
	dm.IsDM = true
	h.deliver(dm)
	h.rec.waitSend(t, "echo: in a dm")
	// Channels do, until the thread has a session.
	h.say("alice", "T1", "not mentioned")
	m := h.message("alice", "T1", "mentioned")
	m.Mentioned = true
	h.deliver(m)
	h.rec.waitSend(t, "echo: mentioned")
	h.say("alice", "T1", "follow-up")
	h.rec.waitSend(t, "echo: follow-up")
	if got := h.rec.sends("not mentioned"); len(got) != 0 {
		t.Errorf("unmentioned first message was answered: %q", got)
	}
}

func TestDuplicateDeliveryHandledOnce(t *testing.T) {
	h := newHarness(t, nil)
	m := h.message("alice", "T1", "once")
	h.deliver(m)
	h.deliver(m)
	h.waitIdle()
	if got := h.rec.sends("echo: once"); len(got) != 1 {
		t.Errorf("replies = %q, want one", got)
	}
}

func TestRetiredSessionReloadsFromDisk(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.IdleTimeout = 5 * time.Millisecond })
	h.e.convs.SetTestHooks(conv.TestHooks{RetireAfter: 5 * time.Millisecond})
	h.say("alice", "T1", "first")
	h.rec.waitSend(t, "echo: first")
	h.logs.WaitRecords(t, waitLimit, "Session retired after inactivity", 1)
	if n := h.e.convs.Len(); n != 0 {
		t.Fatalf("%d sessions in memory after retiring, want 0", n)
	}
	h.say("alice", "T1", "second")
	h.rec.waitSend(t, "echo: second")
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 2 || spawns[1].ResumeID != sess1 {
		t.Errorf("spawns = %+v, want the retired session resumed from its stored id", spawns)
	}
}

func TestAttachmentsAndEmptyMessages(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "   ")
	h.waitIdle()
	if calls := h.rec.snapshot(); len(calls) != 0 {
		t.Errorf("a blank message got %v, want it ignored", calls)
	}
	// An attachment alone is a message; one the platform cannot serve is
	// named as not passed on (attach_test.go covers downloads).
	m := h.message("alice", "T1", "")
	m.Attachments = []platform.Attachment{{Name: "log.txt", Size: 10}}
	h.deliver(m)
	h.rec.waitSend(t, "echo: (The user sent files without a message.)")
	h.waitIdle()
	if got := h.rec.sends("log.txt: the platform gave no way to download it"); len(got) != 1 {
		t.Errorf("refusals = %q, want one", got)
	}
	if spawns := h.fa.spawnsSnapshot(); len(spawns) != 1 {
		t.Errorf("%d spawns, want the attachment's message to reach the agent", len(spawns))
	}
}

func TestContextOverflowIsClampedAndWarned(t *testing.T) {
	h := newHarness(t, nil)
	h.say("alice", "T1", "[[OVER]]")
	got := h.rec.waitSend(t, "echo: [[OVER]]")
	h.waitIdle()
	if !strings.HasSuffix(got.Text, "\n[ctx: 100%]") {
		t.Errorf("reply = %q, want the indicator clamped to 100%%", got.Text)
	}
	recs := h.logs.Records("context_usage")
	if len(recs) != 1 || recs[0]["level"] != "WARN" || recs[0]["input_tokens"] != float64(300000) {
		t.Errorf("context_usage = %v, want a warning with the raw tokens", recs)
	}
}

func TestStopWhileWaitingForSlot(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *harnessConfig) { o.MaxProcesses = 1 })
	h.say("alice", "T1", "a [[WAIT]]")
	h.fa.waitFor(t, "the first turn", func(fa *fakeAgents) bool { return fa.waiting == 1 })
	h.say("bob", "T2", "b")
	h.rec.waitSend(t, render.NoticeWaiting)
	h.say("bob", "T2", "!stop")
	h.rec.waitSend(t, "Stopped before the turn started")
	h.fa.release(t)
	h.rec.waitSend(t, "echo: a")
	h.waitIdle()
	if got := h.rec.sends("echo: b"); len(got) != 0 {
		t.Errorf("the stopped message ran: %q", got)
	}
	if n := len(h.fa.spawnsSnapshot()); n != 1 {
		t.Errorf("%d spawns, want 1", n)
	}
}

// onSendPlatform runs hook on every text posted, before recording it.
type onSendPlatform struct {
	richPlatform
	hook func(text string)
}

func (p *onSendPlatform) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	p.hook(text)
	return p.richPlatform.Send(ctx, to, text)
}

// TestReplyPostedBeforeFiguresSaved: the reply does not wait for the
// session record to reach the disk (two fsyncs). At the post, the record
// on disk has the session id (saved when the turn began, which is what a
// crash needs) but not yet the turn's figures; once the turn has ended,
// they are all there, the self-report estimate included.
func TestReplyPostedBeforeFiguresSaved(t *testing.T) {
	h := newHarness(t, nil)
	path := conv.NewStore(h.opts.StateDir).Path("fake/C1/T1")
	onDisk := func() conv.Record {
		var r conv.Record
		data, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err != nil {
			t.Errorf("reading the session record: %v", err)
		}
		return r
	}
	var (
		mu     sync.Mutex
		atPost []conv.Record
	)
	p := &onSendPlatform{richPlatform{newFakePlatform("fake")}, func(text string) {
		if strings.HasPrefix(text, "echo: ") {
			r := onDisk()
			mu.Lock()
			atPost = append(atPost, r)
			mu.Unlock()
		}
	}}
	h.reload(Reload{Bindings: h.opts.Bindings, Adapters: []platform.Adapter{p}})

	h.say("alice", "T1", "hello [[SELF:30]]")
	p.waitSend(t, "echo: hello")
	h.waitIdle()
	h.say("alice", "T1", "again")
	p.waitSend(t, "echo: again")
	h.waitIdle()

	mu.Lock()
	defer mu.Unlock()
	if len(atPost) != 2 {
		t.Fatalf("%d replies seen", len(atPost))
	}
	if r := atPost[0]; r.SessionID != sess1 || r.ContextTokens != 0 || r.HasSelfPct || r.TotalCostUSD != 0 {
		t.Errorf("record on disk at the first post = %+v; want the session id only", r)
	}
	if r := atPost[1]; !r.HasSelfPct || r.SelfPct != 30 || r.ContextTokens != 50000 {
		t.Errorf("record on disk at the second post = %+v; want the first turn's figures", r)
	}
	if r := onDisk(); r.SessionID != sess1 || r.ContextTokens != 50000 || r.HasSelfPct || r.TotalCostUSD == 0 || r.LastActivity.IsZero() {
		t.Errorf("record on disk after the turns = %+v; want the last turn's figures", r)
	}
}
