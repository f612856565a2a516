package engine

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/binding"
	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// The engine as a cluster's consumer, on a real JetStream server: two
// hosts, a (the owner) and b (its standby), each an engine with its fake
// platform and fake agents, and a cluster.Node serving binding fake/*.
// Events are published as an adapter of either host would.

// clusterTTL is the leases' TTL, on the hosts' test clock (clusterHost),
// and the binding consumer's ack wait, on JetStream's real one: a test in
// which a host dies or is cut off waits that long once, for what the host
// had in hand to be delivered again.
const clusterTTL = 2 * time.Second

var fakeAll = names.Binding{Platform: "fake", Channel: "*"}

type clusterHost struct {
	name     string
	h        *harness
	node     *cluster.Node
	settings cluster.Settings // the node's, for a restart after a kill
	// clock is the leases' clock, which moves only when the test moves
	// it: a lease held is never found expired because a busy machine
	// starved its renewal, so that a test can assert that the standby
	// did nothing. (A standby takes a lease only once it expired on its
	// own clock.) Hosts that are to take over from each other share one.
	clock  *clustertest.Clock
	leases *clustertest.Leases // the node's lease events
	ci     *ClusterIngress
	// accepted are the messages its ingress returned from.
	accepted *acceptedEvents
	stop     context.CancelFunc
	done     chan error
	halted   sync.Once
}

// halt stops serving the binding (the engine keeps running) and waits.
func (c *clusterHost) halt() {
	c.halted.Do(func() {
		c.stop()
		<-c.done
	})
}

// takeOver moves the hosts' clock on until c may take the binding's lease
// from from, which must be dead or cut off (it renews nothing): c then
// takes it.
func (c *clusterHost) takeOver(t *testing.T, from *clusterHost) {
	t.Helper()
	c.leases.ExpireFor(t, c.clock, from.leases.Acquired(t, names.BindingLease(fakeAll)))
}

// startClusterHost starts host name's engine and node against url, its
// leases on a clock of its own.
func startClusterHost(t *testing.T, name, url string, stopAt ...func(string) bool) *clusterHost {
	t.Helper()
	return startClusterHostOn(t, name, url, clustertest.NewClock(), stopAt...)
}

// startClusterHostOn is startClusterHost with the leases on clock.
func startClusterHostOn(t *testing.T, name, url string, clock *clustertest.Clock, stopAt ...func(string) bool) *clusterHost {
	t.Helper()
	return startClusterHostWithOn(t, name, url, clock, func(_ *Options, c *harnessConfig) {
		if len(stopAt) > 0 {
			c.stopAt = stopAt[0] // the restart (restartClusterHost) does not keep it
		}
	})
}

// startClusterHostWith is startClusterHost with the harness's options
// changed by opt.
func startClusterHostWith(t *testing.T, name, url string, opt func(*Options, *harnessConfig)) *clusterHost {
	t.Helper()
	return startClusterHostWithOn(t, name, url, clustertest.NewClock(), opt)
}

// startClusterHostWithOn is startClusterHostWith with the leases on clock.
func startClusterHostWithOn(t *testing.T, name, url string, clock *clustertest.Clock, opt func(*Options, *harnessConfig)) *clusterHost {
	t.Helper()
	h := newHarness(t, func(o *Options, c *harnessConfig) {
		o.Bindings[0].Progress = binding.ProgressQuiet // the reply only: one post per turn
		opt(o, c)
	})
	// JoinCluster must precede Run: start a fresh engine on the harness's
	// options instead of the one it runs.
	h.stop()
	s := cluster.Settings{Host: name, Members: []string{"a", "b"}, URLs: []string{url}, StateDir: filepath.Join(t.TempDir(), "state"),
		LeaseTTL: clusterTTL, Replicas: 1, Names: names.Names{Prefix: "t"},
		Bindings: []cluster.BindingSpec{{Binding: fakeAll, Host: "a", Standby: []string{"b"}}}}
	s.ConfigHash = s.Fingerprint()
	leases := clustertest.NewLeases()
	// The node first: the engine's recovery may read the cluster.
	node := startClusterNode(t, s, clock, leases)
	nh, ci := runClusterEngine(t, name, h, &node)
	sctx2, stop := context.WithCancel(context.Background())
	ch := &clusterHost{name: name, h: nh, node: node, settings: s, clock: clock, leases: leases, ci: ci, accepted: newAcceptedEvents(),
		stop: stop, done: make(chan error, 1)}
	go func() { ch.done <- node.ServeBinding(sctx2, fakeAll, testLink{ci: ci, accepted: ch.accepted}) }()
	t.Cleanup(ch.halt)
	return ch
}

// startClusterNode starts a node on s with its leases on clock, their
// events told to leases.
func startClusterNode(t *testing.T, s cluster.Settings, clock *clustertest.Clock, leases *clustertest.Leases) *cluster.Node {
	t.Helper()
	sctx, scancel := context.WithTimeout(context.Background(), waitLimit)
	defer scancel()
	node, err := cluster.Start(sctx, s, cluster.Options{Log: slog.New(slog.DiscardHandler), Version: "test", Clock: clock,
		Observe: leases.Observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Close)
	return node
}

// runClusterEngine starts an engine joined to the cluster on h's options,
// state, fake agents and transcripts.
func runClusterEngine(t *testing.T, name string, h *harness, node **cluster.Node) (*harness, *ClusterIngress) {
	t.Helper()
	e, err := New(h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if !h.cfg.real {
		e.spawn, e.tx = h.fa.spawn, h.ft
	}
	e.convs.SetTestHooks(conv.TestHooks{StopAt: h.cfg.stopAt, Looping: h.cfg.looping})
	h.cfg.stopAt, h.cfg.looping = nil, nil
	rec := newFakePlatform("fake")
	rec.files = h.cfg.files
	e.AddAdapter(richPlatform{rec})
	o := ClusterOptions{Host: name, Clustered: func(p string) bool { return p == "fake" },
		Standby:  func(p, ch string) bool { return name == "b" },
		InStream: func(ctx context.Context, seq uint64) (bool, error) { return (*node).InStream(ctx, seq) },
		Answers:  testStore{node}, Replies: testStore{node}, Approvals: testStore{node}}
	if h.cfg.contexts {
		o.Contexts = testStore{node}
	}
	ci := e.JoinCluster(o)
	nh := &harness{t: t, e: e, fa: h.fa, rec: rec, ft: h.ft, ws: h.ws, logs: h.logs, runDone: make(chan error, 1), opts: h.opts, cfg: h.cfg}
	ctx, cancel := context.WithCancel(context.Background())
	nh.cancel = cancel
	go func() { nh.runDone <- e.Run(ctx) }()
	t.Cleanup(nh.stop)
	return nh, ci
}

// restartClusterHost starts a new engine for c's state and serves the
// binding with it on c's node, as a restart of that host would.
func restartClusterHost(t *testing.T, c *clusterHost) *clusterHost {
	t.Helper()
	node := c.node
	nh, ci := runClusterEngine(t, c.name, c.h, &node)
	ctx, stop := context.WithCancel(context.Background())
	nc := &clusterHost{name: c.name, h: nh, node: c.node, settings: c.settings, clock: c.clock, leases: c.leases, ci: ci, stop: stop,
		done: make(chan error, 1)}
	go func() { nc.done <- c.node.ServeBinding(ctx, fakeAll, testLink{ci: ci}) }()
	t.Cleanup(nc.halt)
	return nc
}

// publish publishes a message of conversation thread as host on's adapter
// would; the message id is fixed by the caller, so that a test can
// publish the same platform event twice.
func publish(t *testing.T, on *clusterHost, id, thread, text string) {
	t.Helper()
	m := platform.Message{ID: id, Target: platform.Target{Platform: "fake", Channel: "C1", Thread: thread, MessageID: "in-" + id},
		UserID: "alice", UserName: "alice", Text: text, Received: time.Now()}
	ev, err := ingress.NewMessage(ingress.Binding{Platform: "fake", Channel: "*"}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := on.node.Publisher().Publish(ctx, ev); err != nil {
		t.Fatalf("publishing %s: %v", id, err)
	}
}

// echoes are the replies a host posted, in order.
func (c *clusterHost) echoes() []string {
	var out []string
	for _, r := range c.h.rec.snapshot() {
		if r.Kind == "send" && strings.HasPrefix(r.Text, "echo: ") {
			out = append(out, strings.SplitN(strings.TrimPrefix(r.Text, "echo: "), "\n", 2)[0])
		}
	}
	return out
}

func (c *clusterHost) waitEchoes(t *testing.T, n int) []string {
	t.Helper()
	c.h.rec.waitFor(t, fmt.Sprintf("%d replies on host %s", n, c.name), func([]recorded) bool { return len(c.echoes()) >= n })
	return c.echoes()
}

func TestClusterAnswersEachEventOnceInOrder(t *testing.T) {
	srv := clustertest.Single(t)
	// Both hosts stay up: on a clock that never moves the owner's lease
	// cannot expire under a starved renewal, so "the standby answered
	// nothing" holds by the rules, not by the machine's speed.
	a := startClusterHost(t, "a", srv.ClientURL())
	b := startClusterHost(t, "b", srv.ClientURL())
	var want []string
	for i := range 4 {
		text := fmt.Sprintf("t1 message %d", i)
		// Every event reaches both hosts, as Slack's twin deliveries and
		// redeliveries do: the stream keeps one.
		publish(t, a, fmt.Sprintf("t1-%d", i), "T1", text)
		publish(t, b, fmt.Sprintf("t1-%d", i), "T1", text)
		want = append(want, text)
	}
	got := a.waitEchoes(t, len(want))
	a.h.waitIdle()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("owner's replies = %q, want %q in order, once each", got, want)
	}
	if e := b.echoes(); len(e) != 0 {
		t.Fatalf("the standby answered %q while the owner held the lease", e)
	}
	// A command that acts at once is settled in the stream at once: the
	// binding has nothing in hand after it.
	publish(t, b, "t1-status", "T1", "!status")
	a.h.rec.waitSend(t, "Session")
	waitInHand(t, a.node, 0)
}

// waitInHand waits until the binding's consumer has n events in hand.
func waitInHand(t *testing.T, n *cluster.Node, want int) {
	t.Helper()
	pollFor(t, fmt.Sprintf("%d events in hand", want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := n.Status(ctx)
		if err != nil || len(r.Bindings) != 1 {
			return false
		}
		return r.Bindings[0].InHand == want && r.Bindings[0].Waiting == 0
	})
}

func TestClusterPartitionedOwnerStopsAndStandbyFinishes(t *testing.T) {
	srv := clustertest.Single(t)
	proxy := clustertest.NewProxy(t, strings.TrimPrefix(srv.ClientURL(), "nats://"))
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", proxy.URL(), clock)
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)

	publish(t, b, "p-1", "T1", "before")
	if got := a.waitEchoes(t, 1); got[0] != "before" {
		t.Fatalf("first reply %q", got)
	}
	publish(t, b, "p-2", "T1", "[[WAIT]] cut")
	publish(t, b, "p-3", "T1", "after the cut")
	a.h.fa.waitFor(t, "the owner running the held turn", func(fa *fakeAgents) bool {
		return strings.Contains(strings.Join(fa.sessions[sess1], "|"), "[[WAIT]] cut")
	})
	proxy.Cut()
	// Past the lease's expiry, the standby takes the lease and gets both
	// events again once their ack wait is over (JetStream's, on the real
	// clock); its held turn is let go.
	b.takeOver(t, a)
	b.h.fa.release(t)
	got := b.waitEchoes(t, 2)
	if strings.Join(got, "|") != "[[WAIT]] cut|after the cut" {
		t.Fatalf("standby's replies = %q", got)
	}
	// The owner was interrupted when its fence failed, and posted
	// nothing of the turn it lost.
	proxy.Heal()
	publish(t, b, "p-4", "T1", "healed")
	if got := b.waitEchoes(t, 3); got[2] != "healed" {
		t.Fatalf("after healing, replies = %q", got)
	}
	b.h.waitIdle()
	a.h.waitIdle()
	if e := a.echoes(); strings.Join(e, "|") != "before" {
		t.Fatalf("the cut-off owner posted %q; want only the reply before the cut", e)
	}
	for _, r := range a.h.rec.snapshot() {
		if r.Kind == "send" && strings.Contains(r.Text, "Stopped") {
			t.Fatalf("the cut-off owner told the thread %q", r.Text)
		}
	}
	// The standby had no record of the conversation: it said once where
	// it moved.
	if n := len(b.h.rec.sends("moved to host b")); n != 1 {
		t.Fatalf("the moved notice was posted %d times, want 1:\n%s", n, dump(b.h.rec.snapshot()))
	}
}

// TestClusterKilledBetweenSettleAndReply: a host killed after its event
// was settled in the stream and before the reply was posted gets that
// event from no host again; its next start asks the stream, finds it
// settled, and posts the reply from the transcript, once.
func TestClusterKilledBetweenSettleAndReply(t *testing.T) {
	srv := clustertest.Single(t)
	var killed atomic.Bool
	a := startClusterHost(t, "a", srv.ClientURL(), func(p string) bool {
		if p == conv.PointSettled {
			killed.Store(true)
			return true
		}
		return killed.Load() && p == conv.PointReplied // the rest of the turn dies with it
	})
	publish(t, a, "k-1", "T1", "settled then killed")
	pollFor(t, "the event settled, the reply not posted", func() bool {
		return killed.Load() && a.h.e.convs.Outstanding() == 0
	})
	if e := a.echoes(); len(e) != 0 {
		t.Fatalf("posted %q before the kill point", e)
	}
	waitInHand(t, a.node, 0) // settled: the stream has nothing of it
	// The restart: a new engine on the same state, the same node.
	a.halt()
	a.h.stop()
	b := restartClusterHost(t, a)
	if got := b.waitEchoes(t, 1); got[0] != "settled then killed" {
		t.Fatalf("after the restart, replies = %q", got)
	}
	b.h.waitIdle()
	if n := len(b.echoes()); n != 1 {
		t.Fatalf("%d replies after the restart, want 1", n)
	}
}

// killAt returns a kill-point hook that kills the engine at point once,
// and with it the rest of that turn.
func killAt(point string, killed *atomic.Bool) func(string) bool {
	return func(p string) bool {
		if p == point && !killed.Load() {
			killed.Store(true)
			return true
		}
		return killed.Load() && p == conv.PointReplied
	}
}

// kill stops c as kill -9 would: its engine, its serving and its node
// (heartbeats, lease renewals), releasing nothing.
func (c *clusterHost) kill() {
	c.halt()
	c.h.stop()
	c.node.Close()
}

// restartKilled starts c again after kill: a new node on the same
// settings (the same state dir, so it may reclaim its leases) and a new
// engine on c's state.
func restartKilled(t *testing.T, c *clusterHost) *clusterHost {
	t.Helper()
	leases := clustertest.NewLeases()
	node := startClusterNode(t, c.settings, c.clock, leases)
	nh, ci := runClusterEngine(t, c.name, c.h, &node)
	ctx, stop := context.WithCancel(context.Background())
	nc := &clusterHost{name: c.name, h: nh, node: node, settings: c.settings, clock: c.clock, leases: leases, stop: stop,
		done: make(chan error, 1)}
	go func() { nc.done <- node.ServeBinding(ctx, fakeAll, testLink{ci: ci}) }()
	t.Cleanup(nc.halt)
	return nc
}

// TestClusterUnsettledReplyWaitsForTheLease: a host killed after marking
// a reply and before storing it and settling its event comes back while
// the standby, which got the event again, ran it and posted the reply.
// The stream no longer holds the event and no stored reply names it: the
// standby answered it. The returning host posts nothing, neither while
// the standby holds the lease nor once it serves the binding again, and
// drops the entry.
func TestClusterUnsettledReplyWaitsForTheLease(t *testing.T) {
	srv := clustertest.Single(t)
	var killed atomic.Bool
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock, killAt(conv.PointSettling, &killed))
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	publish(t, a, "u-1", "T1", "marked then killed")
	pollFor(t, "the reply marked, the event not settled", func() bool { return killed.Load() && a.h.e.convs.Outstanding() == 0 })
	a.kill()
	b.takeOver(t, a)
	if got := b.waitEchoes(t, 1); got[0] != "marked then killed" {
		t.Fatalf("the standby's replies = %q", got)
	}
	b.h.waitIdle()
	waitInHand(t, b.node, 0) // settled by the standby

	a2 := restartKilled(t, a)
	<-a2.h.e.convs.Ready() // recovery has opened the journal
	a2.h.logs.WaitRecords(t, waitLimit, "Its event was settled and no stored reply names it: another host answered it; dropped here", 1)
	a2.h.waitIdle()
	if n := len(a2.h.rec.snapshot()); n != 0 {
		t.Fatalf("the returning host posted while the standby holds the lease:\n%s", dump(a2.h.rec.snapshot()))
	}

	// The standby dies: the owner takes the lease back and has nothing
	// to recover.
	b.kill()
	a2.takeOver(t, b)
	a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	publish(t, a2, "u-2", "T1", "next")
	if got := a2.waitEchoes(t, 1); strings.Join(got, "|") != "next" {
		t.Fatalf("the owner's replies after taking the lease back = %q, want only the next message's", got)
	}
}

// TestClusterSettledReplyPostedInOrder: a host killed after the stream
// confirmed its settlement of an event and before it posted the reply
// (PointSettled), or before it even recorded the message as answered
// (PointSettledUnrecorded), had stored the reply in the cluster first
// (killed after storing it and before settling, PointReplicated, the
// standby runs the event again instead).
// The standby that takes the binding posts it before it answers the
// conversation's next message, and records it as answered; the host
// that comes back posts nothing, while the standby holds the lease or
// after it got it back: the reply is neither lost nor posted late, after
// the newer answer. (Without the stored reply the standby answers only
// the next message, and the returning host posted the first after it.)
func TestClusterSettledReplyPostedInOrder(t *testing.T) {
	for point, dropped := range map[string]string{
		conv.PointSettled:           "Its reply was posted by another host that served the binding: dropped here",
		conv.PointSettledUnrecorded: "Its event was settled and no stored reply names it: another host answered it; dropped here",
		// Stored, not settled: the standby leaves the stored reply (its
		// event is still in the stream), runs the event itself and posts
		// its own reply in its place.
		conv.PointReplicated: "Its event was settled and no stored reply names it: another host answered it; dropped here",
	} {
		t.Run(point, func(t *testing.T) {
			srv := clustertest.Single(t)
			var killed atomic.Bool
			clock := clustertest.NewClock()
			a := startClusterHostOn(t, "a", srv.ClientURL(), clock, killAt(point, &killed))
			b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
			publish(t, a, "l-1", "T1", "settled then killed")
			pollFor(t, "the event settled, the reply not posted", func() bool { return killed.Load() && a.h.e.convs.Outstanding() == 0 })
			if e := a.echoes(); len(e) != 0 {
				t.Fatalf("posted %q before the kill point", e)
			}
			a.kill()
			b.takeOver(t, a)
			publish(t, b, "l-2", "T1", "the next one")
			if got := b.waitEchoes(t, 2); strings.Join(got, "|") != "settled then killed|the next one" {
				t.Fatalf("the standby's replies = %q, want the settled one's first", got)
			}
			b.h.waitIdle()
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			by, err := b.node.Answered(ctx, fakeAll, "l-1")
			if err != nil || by == "" {
				t.Fatalf("the settled message is recorded as answered by %q, %v", by, err)
			}
			if r, err := cluster.RepliesOf(b.node).Replies(ctx, fakeAll); err != nil || len(r) != 0 {
				t.Fatalf("replies still stored after they were posted: %d, %v", len(r), err)
			}
			if n := len(b.h.rec.sends("moved to host b")); n != 1 {
				t.Fatalf("the moved notice was posted %d times, want 1:\n%s", n, dump(b.h.rec.snapshot()))
			}

			a2 := restartKilled(t, a)
			<-a2.h.e.convs.Ready()
			a2.h.logs.WaitRecords(t, waitLimit, dropped, 1)
			a2.h.waitIdle()
			if n := len(a2.h.rec.snapshot()); n != 0 {
				t.Fatalf("the returning host posted while the standby holds the lease:\n%s", dump(a2.h.rec.snapshot()))
			}
			b.kill()
			a2.takeOver(t, b)
			a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
			publish(t, a2, "l-3", "T1", "back home")
			if got := a2.waitEchoes(t, 1); strings.Join(got, "|") != "back home" {
				t.Fatalf("the owner's replies after taking the lease back = %q, want only the new message's", got)
			}
			a2.h.waitIdle()
			if got := a2.echoes(); len(got) != 1 {
				t.Fatalf("the owner's replies = %q, want only the new message's", got)
			}
		})
	}
}

// TestClusterOldTenureEntryDropped: a message the owner journaled and
// started before it was killed, and that the standby then answered, is
// not run by the owner when it serves the binding again: its next message
// in the conversation finds it in the journal, of an earlier tenure and
// settled, and drops it.
func TestClusterOldTenureEntryDropped(t *testing.T) {
	srv := clustertest.Single(t)
	var killed atomic.Bool
	clock := clustertest.NewClock()
	a := startClusterHostOn(t, "a", srv.ClientURL(), clock, killAt(conv.PointStarted, &killed))
	b := startClusterHostOn(t, "b", srv.ClientURL(), clock)
	publish(t, a, "o-1", "T1", "started then killed")
	pollFor(t, "the turn started, then killed", func() bool { return killed.Load() && a.h.e.convs.Outstanding() == 0 })
	a.kill()
	b.takeOver(t, a)
	if got := b.waitEchoes(t, 1); got[0] != "started then killed" {
		t.Fatalf("the standby's replies = %q", got)
	}
	b.h.waitIdle()
	waitInHand(t, b.node, 0)

	a2 := restartKilled(t, a)
	<-a2.h.e.convs.Ready()
	b.kill()
	a2.takeOver(t, b)
	a2.h.logs.WaitRecords(t, waitLimit, "Serving a cluster binding", 2) // the first tenure, then this one
	publish(t, a2, "o-2", "T1", "next")
	a2.h.logs.WaitRecords(t, waitLimit, "A message of an earlier tenure was finished by a later holder of the lease: dropped here", 1)
	if got := a2.waitEchoes(t, 1); got[0] != "next" {
		t.Fatalf("the owner's replies = %q, want only the next message", got)
	}
	a2.h.waitIdle()
	if got := a2.echoes(); len(got) != 1 {
		t.Fatalf("the owner's replies = %q, want only the next message", got)
	}
	s := a2.h.e.convs.Lookup(conv.Key(platform.Target{Platform: "fake", Channel: "C1", Thread: "T1"}))
	if s == nil {
		t.Fatal("no session for the conversation")
	}
	if p := s.Pending(); len(p) != 0 {
		t.Fatalf("the journal still holds %+v", p)
	}
}
