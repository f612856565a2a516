package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/telegram"
)

// publishHandler is the adapter's handler on a cluster host: each message
// is published to the ingress stream, and the call returns only once the
// stream acknowledged it (what the cc-connect binary wires in).
type publishHandler struct {
	n *Node
	b ingress.Binding
}

func (p publishHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	refs := make([]string, len(m.Attachments))
	for i, a := range m.Attachments {
		refs[i] = a.Ref
	}
	ev, err := ingress.NewMessage(p.b, m, refs)
	if err != nil {
		return platform.Result{Status: platform.Refused, Reason: err.Error()}, nil
	}
	if _, err := p.n.Publisher().Publish(ctx, ev); err != nil {
		return platform.Result{}, err
	}
	return platform.Result{Status: platform.Queued}, nil
}

func (p publishHandler) HandleAction(ctx context.Context, a platform.Action) error {
	ev, err := ingress.NewAction(p.b, "", a)
	if err != nil {
		return err
	}
	_, err = p.n.Publisher().Publish(ctx, ev)
	return err
}

// streamTexts reads the whole ingress stream, in stream order: the texts
// of the messages and how many events carried each message id.
func streamTexts(t *testing.T, n *Node) (texts []string, perID map[string]int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := n.js.Stream(ctx, n.s.Names.Stream())
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perID = map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		raw, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("reading event %d: %v", seq, err)
		}
		ev, err := ingress.Decode(raw.Data)
		if err != nil {
			t.Fatalf("event %d: %v", seq, err)
		}
		texts = append(texts, ev.Message.Text)
		perID[ev.Message.ID]++
	}
	return texts, perID
}

// waitStream waits until the stream holds want messages.
func waitStream(t *testing.T, n *Node, want int) {
	t.Helper()
	waitCond(t, fmt.Sprintf("%d events in the stream", want), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := n.js.Stream(ctx, n.s.Names.Stream())
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs >= uint64(want)
	})
}

// waitCond polls cond: what it watches (NATS, an adapter's state) has no
// notification to wait on.
func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// host is one cc-connect host of the test: its node, through a proxy
// that can cut it off from NATS, and its adapter's run.
type host struct {
	name   string
	proxy  *natstest.Proxy
	node   *Node
	clock  *clustertest.Clock  // the leases' clock, one for every host
	leases *clustertest.Leases // this host's lease events
	all    *clustertest.Leases // every host's, in one log
	run    func(ctx context.Context, h *host) error

	mu     sync.Mutex // guards cancel, done, err
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned, with err
	err    error
}

// start runs the host's adapter until stop (or the test's end).
func (h *host) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	h.mu.Lock()
	h.cancel, h.done = cancel, done
	h.mu.Unlock()
	go func() {
		defer close(done)
		err := h.run(ctx, h)
		h.mu.Lock()
		h.err = err
		h.mu.Unlock()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// stop cancels the adapter's run and waits for it to return.
func (h *host) stop(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.mu.Unlock()
	cancel()
	select {
	case <-done:
		h.mu.Lock()
		err := h.err
		h.mu.Unlock()
		if err != nil {
			t.Errorf("%s: Run returned %v", h.name, err)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("%s: Run did not return after cancel", h.name)
	}
}

// startHosts starts one node per name, each through its own proxy, and
// runs run on each until the test ends (or the host is stopped). The
// hosts' leases run on one clock that moves only when the test moves it,
// past a lease's expiry once its holder is cut off.
func startHosts(t *testing.T, url string, hostNames []string, run func(ctx context.Context, h *host) error) []*host {
	t.Helper()
	clock, all := clustertest.NewClock(), clustertest.NewLeases()
	var hosts []*host
	for _, name := range hostNames {
		h := &host{name: name, proxy: natstest.NewProxy(t, strings.TrimPrefix(url, "nats://")), clock: clock,
			leases: clustertest.NewLeases(), all: all, run: run}
		s := testSettings(t, name, nil, 1, "a")
		s.URLs = []string{h.proxy.URL()}
		s.LeaseTTL = 1500 * time.Millisecond
		h.node = startNodeOn(t, s, clock, h.leases, all)
		h.start(t)
		hosts = append(hosts, h)
	}
	return hosts
}

var tgAll = ingress.Binding{Platform: "tg", Channel: "*"}

// others are the hosts but those named.
func others(hosts []*host, but ...*host) []*host {
	var out []*host
	for _, h := range hosts {
		if !slices.Contains(but, h) {
			out = append(out, h)
		}
	}
	return out
}

func newTelegram(t *testing.T, f *faketelegram.Server) *telegram.Adapter {
	t.Helper()
	a, err := telegram.New(telegram.Config{Name: "tg", Token: faketelegram.Token, APIURL: f.URL(), PollTimeout: 5 * time.Second},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestTelegramPollerMovesBetweenHosts: three hosts, one poller. The
// poller is stopped mid-stream (its Run cancelled: it releases the lease),
// then the next one is cut off from NATS (its lease expires, as when its
// heartbeat stops), while updates keep coming: every update is published
// exactly once, in order, none skipped; each move hands polling to one
// other host, the cut-off one stops, and the offset ends past the last.
func TestTelegramPollerMovesBetweenHosts(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	url := natstest.Single(t).ClientURL()
	var mu sync.Mutex
	adapters := map[string]*telegram.Adapter{}
	hosts := startHosts(t, url, []string{"a", "b", "c"}, func(ctx context.Context, h *host) error {
		ad := newTelegram(t, f)
		ad.SetGate(h.node.PollerGate("tg"))
		mu.Lock()
		adapters[h.name] = ad
		mu.Unlock()
		return ad.Run(ctx, publishHandler{n: h.node, b: tgAll})
	})
	polling := func() []*host {
		mu.Lock()
		defer mu.Unlock()
		var out []*host
		for _, h := range hosts {
			if ad := adapters[h.name]; ad != nil && ad.Status().State == platform.Connected {
				out = append(out, h)
			}
		}
		return out
	}
	holder := func(except ...*host) *host {
		var found *host
		waitCond(t, "one host polling", func() bool {
			p := polling()
			if len(p) != 1 || slices.Contains(except, p[0]) {
				return false
			}
			found = p[0]
			return true
		})
		return found
	}

	var want []string
	send := func(from, to int) {
		for i := from; i < to; i++ {
			text := fmt.Sprintf("m%03d", i)
			f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": faketelegram.User(7, "alice", false), "text": text})
			want = append(want, text)
		}
	}
	first := holder()
	send(0, 20)
	waitStream(t, first.node, 5)
	first.stop(t) // mid-stream: some updates read, not all published
	send(20, 40)
	second := holder(first)
	waitStream(t, second.node, 30)
	second.proxy.Cut() // its renewals fail: the lease expires
	key := names.PollerLease("tg")
	others(hosts, first, second)[0].leases.ExpireFor(t, second.clock, second.leases.Acquired(t, key))
	send(40, 60)
	third := holder(first, second)
	waitStream(t, third.node, len(want))
	second.proxy.Heal()
	send(60, 70)
	waitStream(t, third.node, len(want))

	texts, perID := streamTexts(t, third.node)
	if !slices.Equal(texts, want) {
		t.Errorf("the stream holds\n%v\nwant\n%v", texts, want)
	}
	for id, n := range perID {
		if n != 1 {
			t.Errorf("message %s published %d times", id, n)
		}
	}
	if p := polling(); len(p) != 1 || p[0] != third {
		t.Errorf("polling after the moves: %v, want only %s", p, third.name)
	}
	// The stored offset is past every update: a fourth poller would start
	// with nothing to read again but what came after.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	waitCond(t, "the offset stored past the last update", func() bool {
		next, err := third.node.Offsets("tg").Load(ctx)
		return err == nil && next > int64(len(want))
	})
}

// TestTelegramPollerSurvivesRandomMoves: the poller's holder is stopped
// and restarted, or cut off from NATS and later let back, at random (the
// seed is logged), each time mid-stream, for several rounds: the stream
// ends with every update once, in order.
func TestTelegramPollerSurvivesRandomMoves(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	url := natstest.Single(t).ClientURL()
	var mu sync.Mutex
	adapters := map[*host]*telegram.Adapter{}
	hosts := startHosts(t, url, []string{"a", "b", "c"}, func(ctx context.Context, h *host) error {
		ad := newTelegram(t, f)
		ad.SetGate(h.node.PollerGate("tg"))
		mu.Lock()
		adapters[h] = ad
		mu.Unlock()
		return ad.Run(ctx, publishHandler{n: h.node, b: tgAll})
	})
	// holder waits until exactly one host polls, and it is not skip.
	holder := func(skip *host) *host {
		var found *host
		waitCond(t, "one host polling", func() bool {
			mu.Lock()
			defer mu.Unlock()
			var p []*host
			for _, h := range hosts {
				if ad := adapters[h]; ad != nil && ad.Status().State == platform.Connected {
					p = append(p, h)
				}
			}
			if len(p) != 1 || p[0] == skip {
				return false
			}
			found = p[0]
			return true
		})
		return found
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	var want []string
	send := func(n int) {
		for range n {
			text := fmt.Sprintf("m%03d", len(want))
			f.Send(map[string]any{"chat": map[string]any{"id": 42, "type": "private"}, "from": faketelegram.User(7, "alice", false), "text": text})
			want = append(want, text)
		}
	}
	var cut *host
	moves := map[string]int{}
	for range 6 {
		h := holder(cut)
		send(10)
		waitStream(t, h.node, len(want)-7) // mid-stream: some read, not all published
		if cut != nil {
			cut.proxy.Heal()
			cut = nil
		}
		if rng.IntN(2) == 0 {
			moves["stop"]++
			h.stop(t)
			h.start(t)
		} else {
			moves["cut"]++
			held := h.leases.Acquired(t, names.PollerLease("tg"))
			h.proxy.Cut()
			cut = h
			// Past the lease's expiry for the first of the others
			// that plans to take it over (the other may be waiting
			// to retry a read it tried while it was cut off).
			h.all.ExpireFor(t, h.clock, held)
		}
	}
	last := holder(cut)
	if cut != nil {
		cut.proxy.Heal()
	}
	send(5)
	waitStream(t, last.node, len(want))
	t.Logf("moves: %v", moves)

	texts, perID := streamTexts(t, last.node)
	if !slices.Equal(texts, want) {
		t.Errorf("the stream holds\n%v\nwant\n%v", texts, want)
	}
	for id, n := range perID {
		if n != 1 {
			t.Errorf("message %s published %d times", id, n)
		}
	}
}
