package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// Approvals that travel with a cluster binding (conv/approvals.go): a
// request the holder's turn waits on is kept in the cluster's context
// bucket, and the binding's next holder adopts it before it runs the
// message again.

var t1 = platform.Target{Platform: "fake", Channel: "C1", Thread: "T1"}

// storedApprovals is the record of T1's waiting requests in the bucket, as
// on's node reads it (nil when none).
func storedApprovals(t *testing.T, on *clusterHost) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	v, err := cluster.ApprovalsOf(on.node).Get(ctx, fakeAll, testConv(t1))
	if err != nil {
		t.Fatalf("reading the waiting requests: %v", err)
	}
	return v
}

// requestAsked is the id of the first request the turn of host on asked
// for, as its log says.
func requestAsked(t *testing.T, on *clusterHost) string {
	t.Helper()
	rec := on.h.logs.WaitRecords(t, waitLimit, "Permission requested", 1)[0]
	id, _ := rec["request_id"].(string)
	return id
}

// pressVia publishes a press on the prompt of request id in T1, as host
// on's adapter would: it reaches the binding's holder through the stream.
func pressVia(t *testing.T, on *clusterHost, a platform.Action) {
	t.Helper()
	a.Target = platform.Target{Platform: "fake", Channel: "C1", Thread: "T1", MessageID: "prompt"}
	a.UserID, a.UserName = "alice", "alice"
	ev, err := ingress.NewAction(ingress.Binding{Platform: "fake", Channel: "*"}, "press-"+a.RequestID, a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := on.node.Publisher().Publish(ctx, ev); err != nil {
		t.Fatalf("publishing the press: %v", err)
	}
}

// crash stops c as kill -9 would while a turn runs: its node first
// (heartbeats, lease renewals, the stream's acknowledgements), so that
// nothing its engine does afterwards reaches the cluster; then its
// serving and its engine.
func (c *clusterHost) crash() {
	c.node.Close()
	c.halt()
	c.h.stop()
}

// approvalCase is one kind of request a turn waits on.
type approvalCase struct {
	name, text string
	tool       string           // as the CLI names it
	shown      func(h *harness) // waits until its prompt is in the thread
	press      func(id string) platform.Action
	done       string // the reply once answered
}

var approvalCases = []approvalCase{
	{name: "permission", text: "please [[TOOL:make deploy]]", done: "ran: make deploy",
		shown: func(h *harness) { waitAsk(h.t, h) },
		press: func(id string) platform.Action { return platform.Action{RequestID: id, Choice: platform.ChoiceAllow} }},
	{name: "question", text: "pick [[ASK]]", done: "answer: {",
		shown: func(h *harness) { h.rec.waitSend(h.t, "Which color?") },
		press: func(id string) platform.Action {
			return platform.Action{RequestID: id, Choice: platform.ChoiceAnswer, Question: 0, Options: platform.Options(1)}
		}},
	{name: "plan", text: "[[PLAN]] make a plan", done: "plan approved",
		shown: func(h *harness) { waitAsk(h.t, h) },
		press: func(id string) platform.Action {
			return platform.Action{RequestID: id, Choice: platform.ChoicePlanDefault}
		}},
}

// TestClusterApprovalTravels: a permission request, a question or a plan
// that the holder's turn waits on when the holder stops (a hand-over) or
// dies (a kill, nothing of its stop path run) is not asked again by the
// binding's next holder: the thread is told that the request above still
// waits, a press on the old prompt (through the stream) answers it, and
// the message runs once with that answer. Before requests travelled, the
// next holder posted a new prompt, and the press on the old one was "no
// longer pending".
func TestClusterApprovalTravels(t *testing.T) {
	for _, tc := range approvalCases {
		for _, how := range []string{"handover", "kill"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				srv := clustertest.Single(t)
				clock := clustertest.NewClock()
				a := startClusterHostWithOn(t, "a", srv.ClientURL(), clock, func(o *Options, _ *harnessConfig) {
					o.ShutdownGrace = 300 * time.Millisecond
				})
				b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
				publish(t, b, "w-1", "T1", tc.text)
				tc.shown(a.h)
				id := requestAsked(t, a)
				switch how {
				case "handover":
					// What the binary does on SIGTERM (TestClusterStopHandsOverAPermissionWait).
					a.node.Quiesce()
					a.h.stop()
					a.halt()
				case "kill":
					a.crash()
					b.takeOver(t, a)
				}
				t.Cleanup(func() {
					if t.Failed() {
						t.Logf("a's log:\n%s\nb's log:\n%s", a.h.logs.String(), b.h.logs.String())
					}
				})
				b.h.rec.waitSend(t, "still waits for an answer")
				pressVia(t, b, tc.press(id))
				b.h.rec.waitSend(t, tc.done)
				b.h.waitIdle()
				if n := len(b.h.rec.sends(tc.done)); n != 1 {
					t.Errorf("the next holder answered %d times, want once:\n%s", n, dump(b.h.rec.snapshot()))
				}
				if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
					t.Errorf("the next holder posted a new prompt: %+v", asks)
				}
				for _, q := range b.h.rec.sends("Which color?") {
					if !strings.Contains(q, "still waits") && !strings.HasPrefix(q, "answer: ") {
						t.Errorf("the next holder asked the question again: %q", q)
					}
				}
				if got := b.h.rec.sends("no longer pending"); len(got) != 0 {
					t.Errorf("the press on the old prompt was refused: %q", got)
				}
				if n := len(a.h.rec.sends(tc.done)); n != 0 {
					t.Errorf("the host that went answered too")
				}
				if v := storedApprovals(t, b); v != nil {
					t.Errorf("the answered request is still kept in the cluster: %s", v)
				}
			})
		}
	}
}

// TestClusterAnswerGivenBeforeTheKill: a request answered on the holder,
// which is then killed before its turn's reply is settled, is not asked
// again: the next holder runs the message again, and the repeated request
// gets the answer given (nobody is asked, no notice that it waits).
func TestClusterAnswerGivenBeforeTheKill(t *testing.T) {
	srv := clustertest.Single(t)
	var killed atomic.Bool
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock, killAt(conv.PointSettling, &killed))
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	publish(t, b, "g-1", "T1", "please [[TOOL:make deploy]]")
	ask := waitAsk(t, a.h)
	pressVia(t, b, platform.Action{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow})
	pollFor(t, "the turn answered, killed before its settlement", func() bool { return killed.Load() && a.h.e.convs.Outstanding() == 0 })
	a.kill()
	b.takeOver(t, a)
	b.h.rec.waitSend(t, "ran: make deploy")
	b.h.waitIdle()
	if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("the next holder asked again: %+v", asks)
	}
	if got := b.h.rec.sends("still waits"); len(got) != 0 {
		t.Errorf("the next holder said a request waits: %q", got)
	}
	if n := len(b.h.rec.sends("ran: make deploy")); n != 1 {
		t.Errorf("the next holder answered %d times:\n%s", n, dump(b.h.rec.snapshot()))
	}
	for _, r := range b.h.rec.snapshot() {
		if r.Kind == "send" && strings.Contains(r.Text, "denied") {
			t.Errorf("the thread was told %q", r.Text)
		}
	}
	if v := storedApprovals(t, b); v != nil {
		t.Errorf("the answered request is still kept in the cluster: %s", v)
	}
}

// TestClusterApprovalTimersTravel: the approvers are reminded once, not
// once per host (the host that takes a request over knows they were), and
// permission_timeout counts from when the prompt was first posted: a
// request that waited past it on the host that died is denied by the next
// holder as it takes it over (the thread told), and the message runs with
// that denial, nobody asked again.
func TestClusterApprovalTimersTravel(t *testing.T) {
	t.Run("reminded once", func(t *testing.T) {
		srv := clustertest.Single(t)
		clock := clustertest.NewClock()
		opt := func(o *Options, _ *harnessConfig) {
			o.ApprovalReminder = 50 * time.Millisecond
			o.PermissionTimeout = time.Hour
		}
		a := startClusterHostWithOn(t, "a", srv.ClientURL(), clock, opt)
		b := startClusterHostWithOn(t, "b", srv.ClientURL(), clock, opt)
		publish(t, b, "r-1", "T1", "please [[TOOL:make deploy]]")
		id := requestAsked(t, a)
		a.h.rec.waitSend(t, "has waited 50ms for an answer")
		a.h.logs.WaitRecords(t, waitLimit, "Reminding the approvers of a waiting request", 1)
		pollFor(t, "the reminder kept in the cluster", func() bool {
			return strings.Contains(string(storedApprovals(t, b)), `"reminded":true`)
		})
		a.crash()
		b.takeOver(t, a)
		b.h.rec.waitSend(t, "still waits for an answer")
		pressVia(t, b, platform.Action{RequestID: id, Choice: platform.ChoiceAllow})
		b.h.rec.waitSend(t, "ran: make deploy")
		b.h.waitIdle()
		if got := b.h.rec.sends("has waited"); len(got) != 0 {
			t.Errorf("the next holder reminded the approvers again: %q", got)
		}
	})
	t.Run("timed out meanwhile", func(t *testing.T) {
		srv := clustertest.Single(t)
		clock := clustertest.NewClock()
		// The host that asks waits an hour (it is killed long before);
		// the one that takes over, a second, counted from the first
		// posting, not from when it took the request over.
		a := startClusterHostWithOn(t, "a", srv.ClientURL(), clock, func(o *Options, _ *harnessConfig) { o.PermissionTimeout = time.Hour })
		b := startClusterHostWithOn(t, "b", srv.ClientURL(), clock, func(o *Options, _ *harnessConfig) { o.PermissionTimeout = time.Second })
		publish(t, b, "x-1", "T1", "please [[TOOL:make deploy]]")
		waitAsk(t, a.h)
		a.crash()
		// The event comes to b after its ack wait (clusterTTL, over the
		// timeout): the request timed out while nobody served the binding.
		b.takeOver(t, a)
		b.h.rec.waitSend(t, "denied: no answer within 1s")
		b.h.rec.waitSend(t, "denied: No answer in chat within 1s")
		b.h.waitIdle()
		if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
			t.Errorf("the next holder asked again: %+v", asks)
		}
	})
}

// TestClusterApprovalPressedBeforeTheTakeover: a press on the old prompt
// made while no host serves the binding waits in the stream right behind
// the message; the next holder takes it whether it reaches the
// conversation before its turn waits on the request (held, then given to
// the wait) or after: the tool runs once, and nothing says the request
// is gone.
func TestClusterApprovalPressedBeforeTheTakeover(t *testing.T) {
	srv := clustertest.Single(t)
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock)
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	publish(t, b, "e-1", "T1", "please [[TOOL:make deploy]]")
	ask := waitAsk(t, a.h)
	a.crash()
	pressVia(t, b, platform.Action{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow})
	b.takeOver(t, a)
	b.h.rec.waitSend(t, "ran: make deploy")
	b.h.waitIdle()
	if n := len(b.h.rec.sends("ran: make deploy")); n != 1 {
		t.Errorf("the next holder answered %d times:\n%s", n, dump(b.h.rec.snapshot()))
	}
	if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("the next holder asked again: %+v", asks)
	}
	t.Logf("answers held until the wait: %d", len(b.h.logs.Records("An answer came before the turn waits on the adopted request: held for it")))
	for _, gone := range []string{"no longer pending", "No permission request is pending"} {
		if got := b.h.rec.sends(gone); len(got) != 0 {
			t.Errorf("the press was refused: %q", got)
		}
	}
}

// TestClusterQuestionAnsweredByAReply: a question adopted by the next
// holder is answered by a reply in the thread too (an option's number), as
// on the host that asked it.
func TestClusterQuestionAnsweredByAReply(t *testing.T) {
	srv := clustertest.Single(t)
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock)
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	publish(t, b, "q-1", "T1", "pick [[ASK]]")
	a.h.rec.waitSend(t, "Which color?")
	a.crash()
	b.takeOver(t, a)
	b.h.rec.waitSend(t, "still waits for an answer")
	publish(t, b, "q-2", "T1", "2")
	got := b.h.rec.waitSend(t, "answer: {")
	b.h.waitIdle()
	if !strings.Contains(got.Text, `"Which color?":"Blue"`) {
		t.Errorf("Claude was given %q, want Blue for the question", got.Text)
	}
	if n := len(b.h.rec.sends("echo: 2")); n != 0 {
		t.Errorf("the reply ran as a turn of its own")
	}
}

// TestClusterApprovalAnsweredInWordsBeforeTheTakeover: !allow, !deny and a
// reply that answers a question, sent while no host serves the binding,
// reach the next holder's conversation right behind the message whose
// turn waited on the request, before that turn waits on it again. They
// are held for it and answer it as a press would (the message runs once,
// with that answer), never run as a message or refused as answering
// nothing; an ordinary message sent then waits behind the request and
// runs after the message it answers. The next holder's conversation is
// held before it takes its first work until all of them were accepted:
// the answer is then the first thing it reads, before the message (the
// order that lost !allow and ran the question's reply as a turn of its
// own).
func TestClusterApprovalAnsweredInWordsBeforeTheTakeover(t *testing.T) {
	cases := []struct {
		name, text string
		shown      func(h *harness) // waits until its prompt is in the thread
		words      []string         // sent in the thread while no host serves it
		accepted   int              // the next holder's outstanding work once they are in
		done       string           // the reply once answered
		after      string           // a reply that must come after done, once
	}{
		// The message, the notice that the conversation moved, and each
		// answer's control.
		{name: "allow", text: "please [[TOOL:make deploy]]", shown: approvalCases[0].shown, words: []string{"!allow"}, accepted: 3, done: "ran: make deploy"},
		{name: "deny", text: "please [[TOOL:make deploy]]", shown: approvalCases[0].shown, words: []string{"!deny"}, accepted: 3, done: "denied: Denied by alice in chat."},
		{name: "question", text: "pick [[ASK]]", shown: approvalCases[1].shown, words: []string{"2"}, accepted: 3, done: `"Which color?":"Blue"`},
		{name: "plan", text: "[[PLAN]] make a plan", shown: approvalCases[2].shown, words: []string{"!allow"}, accepted: 3, done: "plan approved"},
		// An ordinary message first (an item and its queue notice), then
		// the answer.
		{name: "message then allow", text: "please [[TOOL:make deploy]]", shown: approvalCases[0].shown, words: []string{"and then this", "!allow"}, accepted: 5,
			done: "ran: make deploy", after: "echo: and then this"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := clustertest.Single(t)
			clock := clustertest.NewClock()
			a := startClusterHostOn(t, "a", srv.ClientURL(), clock)
			release := make(chan struct{}, 1)
			var held sync.Once
			b := startClusterHostWithOn(t, "b", srv.ClientURL(), clock, func(_ *Options, c *harnessConfig) {
				c.looping = func(key string) {
					if key == conv.Key(t1) {
						held.Do(func() { <-release })
					}
				}
			})
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("a's log:\n%s\nb's log:\n%s", a.h.logs.String(), b.h.logs.String())
				}
			})
			t.Cleanup(func() { close(release) })
			publish(t, b, "w-1", "T1", tc.text)
			tc.shown(a.h)
			a.crash()
			for i, w := range tc.words {
				publish(t, b, fmt.Sprintf("w-%d", i+2), "T1", w)
			}
			b.takeOver(t, a)
			pollFor(t, "the message and the words accepted on the next holder", func() bool {
				return b.h.e.convs.Outstanding() >= tc.accepted
			})
			release <- struct{}{}
			b.h.rec.waitSend(t, tc.done)
			if tc.after != "" {
				b.h.rec.waitSend(t, tc.after)
			}
			b.h.waitIdle()
			if n := len(b.h.rec.sends(tc.done)); n != 1 {
				t.Errorf("the next holder answered %d times, want once:\n%s", n, dump(b.h.rec.snapshot()))
			}
			if asks := b.h.rec.kinds("ask"); len(asks) != 0 {
				t.Errorf("the next holder posted a new prompt: %+v", asks)
			}
			for _, w := range tc.words {
				if w != "and then this" && len(b.h.rec.sends("echo: "+w)) != 0 {
					t.Errorf("%q ran as a message", w)
				}
			}
			for _, gone := range []string{"no longer pending", "No permission request is pending", "nothing waits"} {
				if got := b.h.rec.sends(gone); len(got) != 0 {
					t.Errorf("the answer was refused: %q", got)
				}
			}
			if tc.after != "" {
				var order []string
				for _, r := range b.h.rec.snapshot() {
					if r.Kind == "send" && (strings.Contains(r.Text, tc.done) || strings.HasPrefix(r.Text, tc.after)) {
						order = append(order, r.Text)
					}
				}
				if len(order) != 2 || !strings.Contains(order[0], tc.done) {
					t.Errorf("the message sent meanwhile did not wait behind the request: %q", order)
				}
			}
			if v := storedApprovals(t, b); v != nil {
				t.Errorf("the answered request is still kept in the cluster: %s", v)
			}
		})
	}
}

// TestClusterRunApprovalStaysOnItsHost: a request made by a scheduled or
// webhook run's turn does not travel with the binding (the run is settled
// in the stream once journaled: no host is given it again to adopt what it
// waits on). The thread is told so under the request, once, and nothing of
// it is kept in the cluster; after the holder is killed the next holder
// finds nothing pending for a press on the old prompt, and runs nothing
// of the run.
func TestClusterRunApprovalStaysOnItsHost(t *testing.T) {
	srv := clustertest.Single(t)
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock)
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a's log:\n%s\nb's log:\n%s", a.h.logs.String(), b.h.logs.String())
		}
	})
	ev, err := ingress.NewRun(ingress.Binding{Platform: "fake", Channel: "*"}, testRun("schedule:nightly@2026-03-10T01:30Z", "please [[TOOL:make deploy]]"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := b.node.Publisher().Publish(ctx, ev); err != nil {
		t.Fatalf("publishing the run: %v", err)
	}
	ask := waitAsk(t, a.h)
	note := a.h.rec.waitSend(t, "comes from a scheduled or webhook run, which stays on host a")
	if note.To.Channel != "C1" {
		t.Errorf("the note went to %+v", note.To)
	}
	a.h.logs.WaitRecords(t, waitLimit, "Permission requested", 1)
	run := platform.Target{Platform: "fake", Channel: "C1"} // the run's conversation: the channel's (no threads here)
	if v, err := cluster.ApprovalsOf(a.node).Get(ctx, fakeAll, testConv(run)); err != nil || v != nil {
		t.Errorf("the run's request was kept in the cluster: %s (%v)", v, err)
	}
	a.crash()
	b.takeOver(t, a)
	press, err := ingress.NewAction(ingress.Binding{Platform: "fake", Channel: "*"}, "press-run",
		platform.Action{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow, UserID: "alice", UserName: "alice",
			Target: platform.Target{Platform: "fake", Channel: "C1", MessageID: "prompt"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.node.Publisher().Publish(ctx, press); err != nil {
		t.Fatalf("publishing the press: %v", err)
	}
	b.h.rec.waitSend(t, "That permission request is no longer pending.")
	b.h.waitIdle()
	for _, s := range []string{"ran: make deploy", "still waits", "Scheduled: nightly"} {
		if got := b.h.rec.sends(s); len(got) != 0 {
			t.Errorf("the next holder took the run over: %q", got)
		}
	}
	if n := len(a.h.rec.sends("stays on host a")); n != 1 {
		t.Errorf("the note was posted %d times, want once", n)
	}
}
