package cluster

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
)

// TestThreeHostsOneBotThroughANATSNodeLoss: three hosts on a three-node
// NATS cluster (R3), events arriving at random hosts, some twice (a
// redelivery reaching another host): every message runs once, in order,
// also after the stream's leader node is killed half way.
func TestThreeHostsOneBotThroughANATSNodeLoss(t *testing.T) {
	t.Parallel()
	nc := natsCluster(t)
	urls := nc.URLs()
	l := newLedger()
	var nodes []*Node
	for _, h := range []string{"a", "b", "c"} {
		nodes = append(nodes, startNode(t, testSettings(t, h, urls, 3, "a", "b")))
	}
	serveBinding(t, nodes[0], newFakeEngine("a", l))
	serveBinding(t, nodes[1], newFakeEngine("b", l))
	if err := nodes[2].ServeBinding(context.Background(), slackAll, newFakeEngine("c", l)); !errors.Is(err, ErrNotServed) {
		t.Fatalf("host c, neither owner nor standby, serves: %v", err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	sent := map[string][]string{}
	var ids []string
	send := func(from, to int) {
		for i := from; i < to; i++ {
			for _, conv := range []string{"x", "y", "z"} {
				id, text := msgID(conv, i), conv+msgID("", i)
				publish(t, nodes[rng.IntN(3)], conv, id, text)
				if i%4 == 0 { // the platform redelivers it to another host
					publish(t, nodes[rng.IntN(3)], conv, id, text)
				}
				sent[conv] = append(sent[conv], text)
				ids = append(ids, id)
			}
		}
	}
	send(0, 10)
	l.waitIDs(t, ids)

	// Kill the node that leads the stream.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := nodes[0].js.Stream(ctx, "t-in")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killed := false
	for _, s := range nc.Nodes {
		if info.Cluster != nil && s.NATS().Name() == info.Cluster.Leader {
			s.Shutdown()
			killed = true
		}
	}
	if !killed {
		t.Fatalf("no stream leader among the nodes: %+v", info.Cluster)
	}
	send(10, 20)
	checkOnceInOrder(t, l.waitIDs(t, ids), sent)
}

// TestOwnerDiesMidTurnStandbyFinishes: the owner journals messages and is
// killed before their turns end; the standby takes the lease once it
// expires, gets those messages again and runs them, in order, before the
// ones sent since.
//
// On the real clock, unlike the other take-over tests: what the dead owner
// had in hand comes back from JetStream once the consumer's ack wait (the
// lease TTL, on the server's clock) has run out, and this test shows the
// lease's expiry and that redelivery agree in real time. It asserts
// nothing a starved renewal could upset (the owner runs no turn at all).
func TestOwnerDiesMidTurnStandbyFinishes(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	l := newLedger()
	a := startNode(t, testSettings(t, "a", []string{proxy.URL()}, 1, "a", "b"))
	b := startNode(t, testSettings(t, "b", []string{url}, 1, "a", "b"))
	ea := newFakeEngine("a", l)
	ea.hold = true // stuck mid-turn
	serveBinding(t, a, ea)
	serveBinding(t, b, newFakeEngine("b", l))

	sent := map[string][]string{}
	var ids []string
	for i := range 3 {
		for _, conv := range []string{"x", "y"} {
			publish(t, b, conv, msgID(conv, i), conv+msgID("", i))
			sent[conv] = append(sent[conv], conv+msgID("", i))
			ids = append(ids, msgID(conv, i))
		}
	}
	ea.waitJournaled(t, 6)
	proxy.Cut() // kill -9: nothing more of a's reaches NATS
	for i := 3; i < 5; i++ {
		publish(t, b, "x", msgID("x", i), "x"+msgID("", i))
		sent["x"] = append(sent["x"], "x"+msgID("", i))
		ids = append(ids, msgID("x", i))
	}
	runs := l.waitIDs(t, ids)
	checkOnceInOrder(t, runs, sent)
	for _, r := range runs {
		if r.host != "b" {
			t.Errorf("%s ran on %s, which was dead", r.id, r.host)
		}
	}
}

// TestPartitionedOwnerStopsAndDoesNotStealBack: an owner cut off from NATS
// stops serving once its lease can no longer be trusted, the standby takes
// over, nothing runs twice, and when the owner is back it leaves the
// binding where it is. The hosts' clock moves only when the test moves it
// (once, past the lease's expiry, while the owner is cut off): no renewal
// starved by a busy machine can move the binding at another moment.
func TestPartitionedOwnerStopsAndDoesNotStealBack(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	l := newLedger()
	clock := clustertest.NewClock()
	la, lb := clustertest.NewLeases(), clustertest.NewLeases()
	a := startNodeOn(t, testSettings(t, "a", []string{proxy.URL()}, 1, "a", "b"), clock, la)
	b := startNodeOn(t, testSettings(t, "b", []string{url}, 1, "a", "b"), clock, lb)
	ea, eb := newFakeEngine("a", l), newFakeEngine("b", l)
	serveBinding(t, a, ea)
	serveBinding(t, b, eb)
	held := la.Acquired(t, names.BindingLease(slackAll))

	sent := map[string][]string{}
	var ids []string
	send := func(n *Node, from, to int) {
		for i := from; i < to; i++ {
			publish(t, n, "x", msgID("x", i), "x"+msgID("", i))
			sent["x"] = append(sent["x"], "x"+msgID("", i))
			ids = append(ids, msgID("x", i))
		}
	}
	send(b, 0, 3)
	l.waitIDs(t, ids)
	proxy.Cut()
	lb.ExpireFor(t, clock, held)
	select {
	case <-ea.ended:
	case <-time.After(waitTimeout):
		t.Fatal("the partitioned owner did not stop serving")
	}
	cut := len(ids)
	send(b, 3, 6)
	l.waitIDs(t, ids)
	proxy.Heal()
	send(b, 6, 9) // a is back, and b holds the lease: b keeps the binding
	runs := l.waitIDs(t, ids)
	checkOnceInOrder(t, runs, sent)
	for _, r := range runs {
		for _, id := range ids[cut:] {
			if r.id == id && r.host != "b" {
				t.Errorf("%s ran on %s after the partition", r.id, r.host)
			}
		}
	}
}

// TestEmbeddedAloneAndRestart: one host with the embedded server and no
// listener (in-process only); its store is private; a restart keeps what
// was not finished, takes its own lease back with the same token, and
// runs those messages.
func TestEmbeddedAloneAndRestart(t *testing.T) {
	t.Parallel()
	state := filepath.Join(t.TempDir(), "state")
	settings := func() Settings {
		s := testSettings(t, "a", nil, 1, "a")
		s.StateDir = state
		s.Embedded = &embedded.Options{Name: "a", StoreDir: embedded.StoreDir(state)}
		return s
	}
	l := newLedger()
	n1 := startNode(t, settings())
	info, err := os.Stat(embedded.StoreDir(state))
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("embedded store: %v, mode %v; want 0700", err, info.Mode().Perm())
	}
	e1 := newFakeEngine("a", l)
	e1.hold = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n1.ServeBinding(ctx, slackAll, e1) }()
	publish(t, n1, "x", "x-0", "x0")
	publish(t, n1, "x", "x-1", "x1")
	e1.waitJournaled(t, 2)
	cancel()
	<-done
	n1.Close()

	n2 := startNode(t, settings())
	e2 := newFakeEngine("a", l)
	serveBinding(t, n2, e2)
	checkOnceInOrder(t, l.waitIDs(t, []string{"x-0", "x-1"}), map[string][]string{"x": {"x0", "x1"}})
	e1.mu.Lock()
	e2.mu.Lock()
	defer e1.mu.Unlock()
	defer e2.mu.Unlock()
	if len(e1.tenures) != 1 || len(e2.tenures) != 1 || e1.tenures[0] != e2.tenures[0] {
		t.Errorf("tenures before and after the restart: %v, %v; want one, the same", e1.tenures, e2.tenures)
	}
}

// TestStatus: the report names each member's health and the binding's
// holder, and renders as text.
func TestStatus(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	l := newLedger()
	a := startNode(t, testSettings(t, "a", []string{url}, 1, "a", "b"))
	sb := testSettings(t, "b", []string{url}, 1, "a", "b")
	b := startNode(t, sb)
	serveBinding(t, a, newFakeEngine("a", l))
	publish(t, a, "x", "x-0", "x0")
	l.waitIDs(t, []string{"x-0"})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var r Report
	waitUntil(t, "both hosts seen", func() bool {
		var err error
		r, err = ReadStatus(ctx, testSettings(t, "c", []string{url}, 1, "a", "b"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(r.Hosts) == 3 && r.Hosts[0].Seen && r.Hosts[1].Seen
	})
	if !r.Hosts[0].Up || !r.Hosts[1].Up || r.Hosts[2].Seen || r.Hosts[0].Holds != 1 || !r.Hosts[0].SameConfig ||
		r.Hosts[0].Draining || r.Hosts[1].Draining {
		t.Errorf("hosts: %+v", r.Hosts)
	}
	bs := r.Bindings[0]
	if bs.Holder != "a" || bs.Expired || bs.Owner != "a" || bs.Token == 0 {
		t.Errorf("binding: %+v", bs)
	}
	text := r.Text()
	for _, want := range []string{"Cluster read by c", "a  ", "up, heartbeat", "c  ", "never seen", "slack/*", "owner a", "standby b", "held by a"} {
		if !strings.Contains(text, want) {
			t.Errorf("status text lacks %q:\n%s", want, text)
		}
	}
	// A drain of b asked for after b started: b is drained until it
	// restarts.
	if _, err := b.RequestDrain(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	r, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Hosts[0].Draining || !r.Hosts[1].Draining || r.Hosts[1].DrainAsked.IsZero() {
		t.Errorf("after a drain of b: hosts %+v", r.Hosts)
	}
	if text := r.Text(); !strings.Contains(text, "DRAINED") {
		t.Errorf("status text does not say b is drained:\n%s", text)
	}
	// Restarted, b serves again: the drain was its last run's.
	b.Close()
	startNode(t, sb)
	waitUntil(t, "b's new run seen", func() bool {
		r2, err := a.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r2.Hosts[1].Started.Equal(r.Hosts[1].Started) {
			return false
		}
		if r2.Hosts[1].Draining {
			t.Fatalf("b restarted after its drain still shows drained: %+v", r2.Hosts[1])
		}
		return true
	})
	if _, err := ReadStatus(ctx, Settings{Host: "c", URLs: []string{url}, Names: namesOf("other")}, nil); err == nil ||
		!strings.Contains(err.Error(), "no host of this cluster has started") {
		t.Errorf("status of a cluster that never ran: %v", err)
	}
	_ = jetstream.ErrBucketNotFound
}

// waitUntil polls a condition of the servers' state, which they offer no
// notification of.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMovedBindingIsReleasedAtStart: a host restarted with a config that
// gives its binding to another host releases the lease it held, and the
// new owner takes it without waiting for it to expire.
func TestMovedBindingIsReleasedAtStart(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	l := newLedger()
	// A TTL the test never waits out: b can only get the lease released.
	const ttl = time.Minute
	sa := testSettings(t, "a", []string{url}, 1, "a")
	sa.LeaseTTL = ttl
	a := startNode(t, sa)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.ServeBinding(ctx, slackAll, newFakeEngine("a", l)) }()
	publish(t, a, "x", "x-0", "x0")
	l.waitIDs(t, []string{"x-0"})
	cancel()
	<-done
	a.Close() // the lease stays: a's restart would take it back at once

	events := make(chan kvlease.Event, 64)
	sb := testSettings(t, "b", []string{url}, 1, "b") // the binding moved to b
	sb.LeaseTTL = ttl
	bctx, bcancel := context.WithTimeout(context.Background(), waitTimeout)
	defer bcancel()
	b, err := Start(bctx, sb, Options{Observe: func(e kvlease.Event) { events <- e }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	serveBinding(t, b, newFakeEngine("b", l))

	moved := sa
	moved.Bindings = sb.Bindings
	moved.ConfigHash = moved.fingerprint()
	startNode(t, moved) // a again, with the new config: releases

	for {
		select {
		case e := <-events:
			if e.Kind == kvlease.Acquired {
				return
			}
		case <-bctx.Done():
			t.Fatal("b did not take the released lease")
		}
	}
}

// TestPollerMovesWithoutAGap: Telegram's one poller is elected by a lease;
// when its host is cut off, another host takes the lease (once the test
// moved the hosts' clock past its expiry) and continues from the stored
// offset, and the cut-off poller can no longer move it.
func TestPollerMovesWithoutAGap(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	proxy := natstest.NewProxy(t, strings.TrimPrefix(url, "nats://"))
	clock := clustertest.NewClock()
	la, lb := clustertest.NewLeases(), clustertest.NewLeases()
	a := startNodeOn(t, testSettings(t, "a", []string{proxy.URL()}, 1, "a"), clock, la)
	b := startNodeOn(t, testSettings(t, "b", []string{url}, 1, "a"), clock, lb)
	key := names.PollerLease("telegram")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	fa, err := a.Leases().Claim(key, kvlease.Candidate, 0).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bc := b.Leases().Claim(key, kvlease.Candidate, 0)
	if err := a.Offsets("telegram").Save(ctx, fa, 42); err != nil { // updates up to 41 published
		t.Fatal(err)
	}
	proxy.Cut()
	lb.ExpireFor(t, clock, la.Acquired(t, key))
	fb, err := bc.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fb.Token() <= fa.Token() {
		t.Errorf("b's token %d is not after a's %d", fb.Token(), fa.Token())
	}
	if next, err := b.Offsets("telegram").Load(ctx); err != nil || next != 42 {
		t.Fatalf("b continues from %d, %v; want 42", next, err)
	}
	if err := b.Offsets("telegram").Save(ctx, fb, 50); err != nil {
		t.Fatal(err)
	}
	proxy.Heal()
	if err := a.Offsets("telegram").Save(ctx, fa, 45); err == nil {
		t.Fatal("the cut-off poller stored an offset")
	}
	if next, _ := b.Offsets("telegram").Load(ctx); next != 50 {
		t.Errorf("offset %d after the old poller's write, want 50", next)
	}
}
