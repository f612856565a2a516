package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// TestClusterRunApprovalWaitsForItsHostToHoldAgain: the host of a run
// whose turn waits for an answer is killed -9, the standby takes the
// binding and the host comes back as a standby. While another host holds
// the binding the returning host leaves the run in its journal: it opens
// no session for it, starts no claude process, posts nothing (the
// conversation goes on at the holder). Once it holds the binding again
// the run's turn is resumed there, not as the tenure starts but when the
// conversation's next message opens it: the thread is told the request
// above still waits, a press on the old prompt answers it, and the run's
// turn goes on with the answer before that message runs.
func TestClusterRunApprovalWaitsForItsHostToHoldAgain(t *testing.T) {
	srv := clustertest.Single(t)
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock)
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	var a2 *clusterHost
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a's log:\n%s\nb's log:\n%s", a.h.logs.String(), b.h.logs.String())
			if a2 != nil {
				t.Logf("a2 log:\n%s\na2 posts:\n%s", a2.h.logs.String(), dump(a2.h.rec.snapshot()))
			}
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
	a.h.rec.waitSend(t, "comes from a scheduled or webhook run, which stays on host a")
	// The request is in the conversation's record, for a restart
	// (recordBook.notePending, right after the prompt and the note).
	pollFor(t, "the waiting request recorded", func() bool {
		recs, _ := filepath.Glob(filepath.Join(a.h.opts.StateDir, "sessions", "*.json"))
		for _, r := range recs {
			if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), ask.Prompt.RequestID) {
				return true
			}
		}
		return false
	})
	// A kill -9 runs nothing of the stop path (which ends the run's turn
	// at the lease's loss): what it leaves is the state as it is now.
	killed := t.TempDir()
	copyLive(t, a.h.opts.StateDir, killed)
	a.h.fa.mu.Lock()
	transcripts := map[string][]fakeLine{} // the CLI killed with it: the turn stays cut in its transcript
	for id, ls := range a.h.fa.lines {
		transcripts[id] = slices.Clone(ls)
	}
	a.h.fa.mu.Unlock()
	a.crash()
	a.h.fa.mu.Lock()
	a.h.fa.lines = transcripts
	a.h.fa.mu.Unlock()
	if err := os.RemoveAll(a.h.opts.StateDir); err != nil {
		t.Fatal(err)
	}
	copyTree(t, killed, a.h.opts.StateDir)
	spawned := len(a.h.fa.spawnsSnapshot())
	b.takeOver(t, a)

	a2 = restartKilled(t, a)
	<-a2.h.e.convs.Ready() // recovery has decided what it reopens
	key := conv.Key(platform.Target{Platform: "fake", Channel: "C1"})
	if a2.h.e.convs.Lookup(key) != nil {
		t.Fatal("the returning host reopened the run's conversation while another host holds the binding")
	}
	a2.h.logs.WaitRecords(t, waitLimit, "Pending messages of a cluster binding wait for their redelivery", 1)
	// The conversation goes on at the holder meanwhile.
	publish(t, b, "m-1", "", "while away")
	if got := b.waitEchoes(t, 1); got[0] != "while away" {
		t.Fatalf("the holder's replies = %q", got)
	}
	b.h.waitIdle()
	if a2.h.e.convs.Lookup(key) != nil {
		t.Fatal("the returning host opened the run's conversation while another host holds the binding")
	}
	if n := len(a2.h.fa.spawnsSnapshot()); n != spawned {
		t.Fatalf("the returning host started %d claude processes while another host holds the binding", n-spawned)
	}
	if got := a2.h.rec.snapshot(); len(got) != 0 {
		t.Fatalf("the returning host posted while another host holds the binding:\n%s", dump(got))
	}

	// The holder dies; the run's host serves the binding again.
	b.kill()
	a2.takeOver(t, b)
	a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	// The tenure's start decides only conversations in memory: the run
	// waits in the journal for the conversation's next message.
	if a2.h.e.convs.Lookup(key) != nil || len(a2.h.rec.snapshot()) != 0 {
		t.Fatalf("the run's host reopened the run as its tenure started:\n%s", dump(a2.h.rec.snapshot()))
	}
	publish(t, a2, "m-2", "", "back home")
	a2.h.rec.waitSend(t, "The request above (Bash `make deploy`) still waits for an answer: the turn goes on once it has one.")
	if asks := a2.h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("the run's host asked again: %+v", asks)
	}
	press, err := ingress.NewAction(ingress.Binding{Platform: "fake", Channel: "*"}, "press-run",
		platform.Action{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow, UserID: "alice", UserName: "alice",
			Target: platform.Target{Platform: "fake", Channel: "C1", MessageID: "prompt"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a2.node.Publisher().Publish(ctx, press); err != nil {
		t.Fatalf("publishing the press: %v", err)
	}
	a2.h.rec.waitSend(t, "Resuming the turn for “please [[TOOL:make deploy]]” with the answer.")
	if got := a2.waitEchoes(t, 2); strings.Join(got, "|") != "Continue from where you left off.|back home" {
		t.Fatalf("the run's host's replies = %q, want the run's resumed turn's, with the answer, then the next message's", got)
	}
	a2.h.waitIdle()
	var order []string
	for _, r := range a2.h.rec.snapshot() {
		for _, s := range []string{"still waits", "Resuming the turn", "was allowed once", "echo: back home"} {
			if r.Kind == "send" && strings.Contains(r.Text, s) {
				order = append(order, s)
			}
		}
	}
	if got := strings.Join(order, "|"); got != "still waits|Resuming the turn|was allowed once|echo: back home" {
		t.Errorf("the run's host posted %q, want the notice once, the run's resumed turn, then the next message's", got)
	}
	if got := b.echoes(); len(got) != 1 {
		t.Errorf("the host that held the binding meanwhile ran the run: %q", got)
	}
}

// copyLive copies the state directory from of a running engine into to
// as a kill -9 would leave it: a file renamed away meanwhile is left out,
// and so is a write not yet renamed into place (the atomic writes' temp
// files, which cc-connect never reads).
func copyLive(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case strings.Contains(d.Name(), ".tmp-"):
			return nil
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClusterRunApprovalParkedAtAStop: the host of a run whose turn waits
// for an answer stops as the binary does on SIGTERM (no more from the
// stream, the engine stopped within its grace, then the binding handed
// over, the process gone). A message's turn would go to the
// binding's next holder; the run's has no stream delivery to hand over,
// so it is parked on its host as on a single host: nobody is told to
// send a message again (there is none for a run), the request stays open,
// and when the host serves the binding again the conversation's next
// message finds it waiting; a press on the old prompt answers it.
func TestClusterRunApprovalParkedAtAStop(t *testing.T) {
	srv := clustertest.Single(t)
	a := startClusterHostWith(t, "a", srv.ClientURL(), func(o *Options, _ *harnessConfig) { o.ShutdownGrace = 300 * time.Millisecond })
	var a2 *clusterHost
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("a's log:\n%s\na's posts:\n%s", a.h.logs.String(), dump(a.h.rec.snapshot()))
			if a2 != nil {
				t.Logf("a2 log:\n%s\na2 posts:\n%s", a2.h.logs.String(), dump(a2.h.rec.snapshot()))
			}
		}
	})
	ev, err := ingress.NewRun(ingress.Binding{Platform: "fake", Channel: "*"}, testRun("schedule:nightly@2026-03-10T01:30Z", "please [[TOOL:make deploy]]"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := a.node.Publisher().Publish(ctx, ev); err != nil {
		t.Fatalf("publishing the run: %v", err)
	}
	ask := waitAsk(t, a.h)
	a.h.rec.waitSend(t, "comes from a scheduled or webhook run, which stays on host a")
	a.node.Quiesce()
	a.h.stop()
	a.halt()
	a.node.Close()
	if len(a.h.logs.Records("Shutting down while the turn waits on an answer: the request stays open for after the restart")) != 1 {
		t.Error("the stop did not keep the run's request open")
	}
	for _, s := range []string{"Send the message again", "Run finished", "cancelled"} {
		if got := a.h.rec.sends(s); len(got) != 0 {
			t.Errorf("the stop dropped the run's waiting turn: %q", got)
		}
	}

	a2 = restartKilled(t, a)
	a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 1) // the stop released the lease
	publish(t, a2, "m-1", "", "back home")
	a2.h.rec.waitSend(t, "The request above (Bash `make deploy`) still waits for an answer")
	if asks := a2.h.rec.kinds("ask"); len(asks) != 0 {
		t.Errorf("the run's host asked again: %+v", asks)
	}
	press, err := ingress.NewAction(ingress.Binding{Platform: "fake", Channel: "*"}, "press-run",
		platform.Action{RequestID: ask.Prompt.RequestID, Choice: platform.ChoiceAllow, UserID: "alice", UserName: "alice",
			Target: platform.Target{Platform: "fake", Channel: "C1", MessageID: "prompt"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a2.node.Publisher().Publish(ctx, press); err != nil {
		t.Fatalf("publishing the press: %v", err)
	}
	a2.h.rec.waitSend(t, "Resuming the turn for “please [[TOOL:make deploy]]” with the answer.")
	if got := a2.waitEchoes(t, 2); got[len(got)-1] != "back home" {
		t.Fatalf("the host's replies = %q, want the run's resumed turn's, then the next message's", got)
	}
}
