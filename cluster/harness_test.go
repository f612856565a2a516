package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/platform"
)

const waitTimeout = 45 * time.Second

var slackAll = names.Binding{Platform: "slack", Channel: "*"}

// settings of host for a cluster of members with one binding owned by
// owner and stood by for by standby.
func testSettings(t *testing.T, host string, urls []string, replicas int, owner string, standby ...string) Settings {
	t.Helper()
	s := Settings{Host: host, Members: []string{"a", "b", "c"}, URLs: urls, StateDir: filepath.Join(t.TempDir(), "state"),
		LeaseTTL: 2 * time.Second, Replicas: replicas, Names: names.Names{Prefix: "t"},
		Bindings: []BindingSpec{{Binding: slackAll, Host: owner, Standby: standby}}}
	s.ConfigHash = s.fingerprint()
	return s
}

func startNode(t *testing.T, s Settings) *Node {
	t.Helper()
	return startNodeOn(t, s, nil)
}

// startNodeOn is startNode with the leases on clock (nil: the real one),
// their events told to each of logs.
func startNodeOn(t *testing.T, s Settings, clock *clustertest.Clock, logs ...*clustertest.Leases) *Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	o := Options{Log: slog.New(slog.DiscardHandler), Version: "test"}
	if clock != nil {
		o.Clock = clock
	}
	o.Observe = func(e kvlease.Event) {
		for _, l := range logs {
			l.Observe(e)
		}
	}
	n, err := Start(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// ledger is what users would see: every turn that ran, on which host.
type ledger struct {
	mu      sync.Mutex // guards runs, changed
	runs    []run
	changed chan struct{}
}

type run struct{ host, id, conv, text string }

func newLedger() *ledger { return &ledger{changed: make(chan struct{})} }

func (l *ledger) add(r run) {
	l.mu.Lock()
	l.runs = append(l.runs, r)
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

// waitIDs waits until every id has run (at least once).
func (l *ledger) waitIDs(t *testing.T, ids []string) []run {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		l.mu.Lock()
		runs, ch := slices.Clone(l.runs), l.changed
		l.mu.Unlock()
		done := map[string]bool{}
		for _, r := range runs {
			done[r.id] = true
		}
		missing := 0
		for _, id := range ids {
			if !done[id] {
				missing++
			}
		}
		if missing == 0 {
			return runs
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%d of %d messages never ran; ran: %v", missing, len(ids), runs)
		}
	}
}

// checkOnceInOrder fails unless each conversation ran its texts once each,
// in the order sent.
func checkOnceInOrder(t *testing.T, runs []run, sent map[string][]string) {
	t.Helper()
	got := map[string][]string{}
	count := map[string]int{}
	for _, r := range runs {
		got[r.conv] = append(got[r.conv], r.text)
		count[r.id]++
	}
	for id, n := range count {
		if n > 1 {
			t.Errorf("message %s ran %d times", id, n)
		}
	}
	for conv, want := range sent {
		if !slices.Equal(got[conv], want) {
			t.Errorf("conversation %s ran %v, want %v", conv, got[conv], want)
		}
	}
}

// fakeEngine stands in for the engine on one host: it journals in memory
// and, unless it holds, runs each event's turn at once, checking the fence
// before it "replies".
type fakeEngine struct {
	host   string
	ledger *ledger

	mu      sync.Mutex // guards hold, journal, ran, tenures, grew
	hold    bool       // journal only: turns never end (a host stuck mid-turn)
	journal map[string]*ingress.Delivery
	grew    chan struct{} // closed and replaced when the journal grows
	ran     map[string]bool
	tenures []uint64
	ended   chan struct{}
}

func newFakeEngine(host string, l *ledger) *fakeEngine {
	return &fakeEngine{host: host, ledger: l, journal: map[string]*ingress.Delivery{}, ran: map[string]bool{},
		ended: make(chan struct{}, 16), grew: make(chan struct{})}
}

var _ TenureHandler = (*fakeEngine)(nil)

func (e *fakeEngine) Accept(ctx context.Context, d *ingress.Delivery) (ingress.Result, error) {
	if err := d.Fence.Check(); err != nil {
		return 0, err
	}
	m := d.Event.Message
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ran[m.ID] {
		return ingress.Settled, nil // a redelivery of a finished one
	}
	if e.hold {
		e.journal[m.ID] = d
		close(e.grew)
		e.grew = make(chan struct{})
		return ingress.Journaled, nil
	}
	// The turn ran; settle before replying, so that a host cut off right
	// now never replies to what another host will run again.
	if err := d.Settle(ctx); err != nil {
		return 0, err
	}
	e.ran[m.ID] = true
	e.ledger.add(run{host: e.host, id: m.ID, conv: m.Target.Thread, text: m.Text})
	return ingress.Journaled, nil
}

func (e *fakeEngine) StartTenure(_ context.Context, _ names.Binding, f *kvlease.Fence) error {
	e.mu.Lock()
	e.tenures = append(e.tenures, f.Token())
	e.mu.Unlock()
	return nil
}

// EndTenure drops the journal: those events are the stream's again.
func (e *fakeEngine) EndTenure(names.Binding, *kvlease.Fence, error) {
	e.mu.Lock()
	e.journal = map[string]*ingress.Delivery{}
	e.mu.Unlock()
	e.ended <- struct{}{}
}

// waitJournaled waits until n events are journaled and not finished.
func (e *fakeEngine) waitJournaled(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		e.mu.Lock()
		got, ch := len(e.journal), e.grew
		e.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s journaled %d events, want %d", e.host, got, n)
		}
	}
}

// serveBinding runs n.ServeBinding until the test ends.
func serveBinding(t *testing.T, n *Node, h ingress.Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.ServeBinding(ctx, slackAll, h)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// publish sends text as message id in conversation conv through n,
// retrying passing failures (a NATS node going down) with the same id, as
// a platform redelivering would.
func publish(t *testing.T, n *Node, conv, id, text string) {
	t.Helper()
	ev, err := ingress.NewMessage(ingress.Binding{Platform: "slack", Channel: "*"}, platform.Message{ID: id,
		UserID: "U1", Text: text, Target: platform.Target{Platform: "slack", Channel: "C1", Thread: conv}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := n.Publisher().Publish(ctx, ev)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publishing %s: %v", id, err)
		}
	}
}

func natsCluster(t *testing.T) *natstest.Cluster { return natstest.StartCluster(t, 3) }

func msgID(conv string, i int) string { return fmt.Sprintf("%s-%d", conv, i) }

func namesOf(prefix string) names.Names { return names.Names{Prefix: prefix} }
