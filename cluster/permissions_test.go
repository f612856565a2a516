package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/clustertest"
	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/internal/natstest"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// The permission tests run three hosts on a server that holds each to its
// Permissions: a owns slack/* (b stands by), c owns telegram/*; a and b
// are the receivers, c only serves its binding; the schedule "daily"
// posts in slack/C1. Each host's user runs everything cc-connect does
// without one refusal, and is refused everything else its seed could be
// used for.

var (
	permSlack = names.Binding{Platform: "slack", Channel: "*"}
	permTG    = names.Binding{Platform: "telegram", Channel: "*"}
)

// violations collects the server's permission violations.
type violations struct {
	mu    sync.Mutex
	lines []string
}

func (v *violations) add(line string) {
	if strings.Contains(line, "Violation") {
		v.mu.Lock()
		v.lines = append(v.lines, line)
		v.mu.Unlock()
	}
}

func (v *violations) all() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.lines...)
}

func (v *violations) Noticef(f string, a ...any) { v.add(fmt.Sprintf(f, a...)) }
func (v *violations) Warnf(f string, a ...any)   { v.add(fmt.Sprintf(f, a...)) }
func (v *violations) Fatalf(f string, a ...any)  { v.add(fmt.Sprintf(f, a...)) }
func (v *violations) Errorf(f string, a ...any)  { v.add(fmt.Sprintf(f, a...)) }
func (v *violations) Debugf(f string, a ...any)  { v.add(fmt.Sprintf(f, a...)) }
func (v *violations) Tracef(f string, a ...any)  { v.add(fmt.Sprintf(f, a...)) }

// Handle, Enabled, WithAttrs and WithGroup make it a slog.Handler too,
// for the embedded server, which logs through slog.
func (v *violations) Enabled(context.Context, slog.Level) bool { return true }
func (v *violations) Handle(_ context.Context, r slog.Record) error {
	v.add(r.Message)
	return nil
}
func (v *violations) WithAttrs([]slog.Attr) slog.Handler { return v }
func (v *violations) WithGroup(string) slog.Handler      { return v }

// permCluster is the three hosts' keys and how to reach their server.
type permCluster struct {
	t     *testing.T
	dir   string
	seeds map[string]string
	keys  map[string]string
	url   string
	v     *violations
}

func newPermCluster(t *testing.T) *permCluster {
	t.Helper()
	pc := &permCluster{t: t, dir: t.TempDir(), seeds: map[string]string{}, keys: map[string]string{}, v: &violations{}}
	for _, h := range []string{"a", "b", "c", "admin"} {
		pc.seeds[h] = filepath.Join(pc.dir, h+".seed")
		pub, err := NewSeedFile(pc.seeds[h])
		if err != nil {
			t.Fatal(err)
		}
		pc.keys[h] = pub
	}
	return pc
}

// settings are host's, with its seed.
func (pc *permCluster) settings(host string) Settings {
	s := Settings{Host: host, Members: []string{"a", "b", "c"}, StateDir: filepath.Join(pc.dir, "state-"+host),
		LeaseTTL: 2 * time.Second, Replicas: 1, Names: names.Names{Prefix: "t"},
		Bindings:  []BindingSpec{{Binding: permSlack, Host: "a", Standby: []string{"b"}}, {Binding: permTG, Host: "c"}},
		Receivers: []string{"a", "b"}, Schedules: []ScheduleSpec{{Name: "daily", Platform: "slack", Channel: "C1"}},
		NKeys: map[string]string{"a": pc.keys["a"], "b": pc.keys["b"], "c": pc.keys["c"]},
		Auth:  Auth{NKeySeedFile: pc.seeds[host]}}
	if pc.url != "" {
		s.URLs = []string{pc.url}
	}
	s.ConfigHash = s.Fingerprint()
	return s
}

// start starts host's node.
func (pc *permCluster) start(s Settings) *Node {
	pc.t.Helper()
	return pc.startOn(s, Options{})
}

// startOn is start with o's clock and observer.
func (pc *permCluster) startOn(s Settings, o Options) *Node {
	pc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	o.Log, o.Version = slog.New(pc.v), "test"
	n, err := Start(ctx, s, o)
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.t.Cleanup(n.Close)
	return n
}

// raw connects as host's user (its reply prefix, as a host connects),
// reporting the server's refusals on the returned channel.
func (pc *permCluster) raw(host string) (*nats.Conn, <-chan error) {
	pc.t.Helper()
	opt, err := nats.NkeyOptionFromSeed(pc.seeds[host])
	if err != nil {
		pc.t.Fatal(err)
	}
	errs := make(chan error, 16)
	nc, err := nats.Connect(pc.url, opt, nats.CustomInboxPrefix(names.Inbox(host)), nats.MaxReconnects(0),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		pc.t.Fatal(err)
	}
	pc.t.Cleanup(nc.Close)
	return nc, errs
}

// event is a chat message of binding b in channel ch.
func permEvent(t *testing.T, b names.Binding, ch, id, text string) ingress.Event {
	t.Helper()
	ev, err := ingress.NewMessage(ingress.Binding{Platform: b.Platform, Channel: b.Channel}, platform.Message{ID: id, UserID: "U1",
		Text: text, Target: platform.Target{Platform: b.Platform, Channel: ch, Thread: "x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func publishOn(t *testing.T, n *Node, ev ingress.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := n.Publisher().Publish(ctx, ev); err != nil {
		t.Fatalf("%s publishing %s: %v", n.s.Host, ev.Message.ID, err)
	}
}

// serve runs n.ServeBinding(b) until the test ends.
func (pc *permCluster) serve(n *Node, b names.Binding, h ingress.Handler) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = n.ServeBinding(ctx, b, h)
	}()
	pc.t.Cleanup(func() { cancel(); <-done })
}

// run is the scenario: everything the three hosts do, without a refusal,
// then each thing a host's seed must not do, refused.
func (pc *permCluster) run(a, b, c *Node) {
	t := pc.t
	l := newLedger()
	ea := newFakeEngine("a", l)
	pc.serve(a, permSlack, ea)
	pc.serve(c, permTG, newFakeEngine("c", l))
	// A receiver publishes for every binding; c only for its own.
	publishOn(t, b, permEvent(t, permSlack, "C1", "s-0", "s0"))
	publishOn(t, b, permEvent(t, permTG, "42", "t-0", "t0"))
	publishOn(t, c, permEvent(t, permTG, "42", "t-1", "t1"))
	l.waitIDs(t, []string{"s-0", "t-0", "t-1"})

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// The Telegram poller's lease and offset, on a receiver.
	fb, err := b.Leases().Claim(names.PollerLease("telegram"), kvlease.Candidate, 0).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Offsets("telegram").Save(ctx, fb, 42); err != nil {
		t.Fatal(err)
	}
	if next, err := a.Offsets("telegram").Load(ctx); err != nil || next != 42 {
		t.Fatalf("offset %d, %v; want 42", next, err)
	}
	// The pause of a schedule of a binding a serves.
	if _, err := a.Pauses().Pause(ctx, "daily", "U1", time.Now()); err != nil {
		t.Fatalf("pausing a schedule of a's binding: %v", err)
	}
	// A drain asked for with the host's own credential, seen by its watch.
	drained, err := c.Drained(ctx)
	if err != nil {
		t.Fatalf("watching c's drain key: %v", err)
	}
	if _, err := c.RequestDrain(ctx, "c"); err != nil {
		t.Fatalf("c asking its own drain: %v", err)
	}
	select {
	case <-drained:
	case <-ctx.Done():
		t.Fatal("c did not see its drain")
	}
	if in, err := a.InStream(ctx, 1); err != nil || in {
		t.Errorf("InStream of a settled event: %v, %v", in, err)
	}
	// The record of what was answered: written by the holder, read by
	// every host.
	if err := a.Answer(ctx, permSlack, names.Conversation("C1", "x"), "s-0"); err != nil {
		t.Fatalf("recording an answered message of a's binding: %v", err)
	}
	for _, n := range []*Node{a, b, c} {
		if by, err := n.Answered(ctx, permSlack, "s-0"); err != nil || by != "a" {
			t.Errorf("%s reads the answered message as answered by %q, %v; want a", n.s.Host, by, err)
		}
		if done, err := n.Answered(ctx, permSlack, "s-9"); err != nil || done != "" {
			t.Errorf("%s reads a message nobody answered as answered: %v, %v", n.s.Host, done, err)
		}
	}
	// The conversation's context: written by the holder, read by its
	// standby (c, which neither holds nor stands by, is refused both:
	// refusals).
	checkContext(ctx, t, a, b)
	for _, n := range []*Node{a, c} {
		r, err := n.Status(ctx)
		if err != nil || len(r.Bindings) != 2 || r.Bindings[0].Holder != "a" {
			t.Fatalf("status read by %s: %+v, %v", n.s.Host, r, err)
		}
	}
	if _, err := ReadStatus(ctx, pc.settings("b"), nil); err != nil {
		t.Fatalf("cluster status from b: %v", err)
	}

	// a stops mid-turn; b takes the binding and gets the event again.
	ea.mu.Lock()
	ea.hold = true
	ea.mu.Unlock()
	publishOn(t, b, permEvent(t, permSlack, "C1", "s-1", "s1"))
	ea.waitJournaled(t, 1)
	a.Close()
	pc.serve(b, permSlack, newFakeEngine("b", l))
	publishOn(t, b, permEvent(t, permSlack, "C1", "s-2", "s2"))
	runs := l.waitIDs(t, []string{"s-0", "s-1", "s-2"})
	var slack []run
	for _, r := range runs {
		if strings.HasPrefix(r.id, "s-") {
			slack = append(slack, r)
		}
	}
	checkOnceInOrder(t, slack, map[string][]string{"x": {"s0", "s1", "s2"}})
	if got := pc.v.all(); len(got) != 0 {
		t.Fatalf("permission violations in what cc-connect does:\n%s", strings.Join(got, "\n"))
	}

	pc.refusals()
}

// refusals: each thing a host's seed could be used for beyond its part,
// refused by the server.
func (pc *permCluster) refusals() {
	t := pc.t
	n := names.Names{Prefix: "t"}
	conv := names.Conversation("C1", "x")
	forged, err := jsonEvent(permEvent(t, permSlack, "C1", "forged", "!sh id"))
	if err != nil {
		t.Fatal(err)
	}
	stream, kv := n.Stream(), n.KVStream()
	tests := []struct {
		name, host string
		pub, sub   string // the subject published (a request) or subscribed to
	}{
		{"an event for a binding the host neither receives for nor serves", "c", n.In(permSlack, conv, "c"), ""},
		{"an event under another host's name", "b", n.In(permSlack, conv, "a"), ""},
		{"an event on the subject an older cc-connect used, which names no host", "b", "t.in." + permSlack.Token() + "." + conv, ""},
		{"another binding's lease", "b", n.KVKey(names.BindingLease(permTG)), ""},
		{"a record that a message of another binding was answered", "c", n.KVKey(names.Answered(permSlack, "s-5")), ""},
		{"the record of where a conversation of another binding is served", "c", n.KVKey(names.Served(permSlack, conv)), ""},
		{"the context of a conversation of another binding", "c", n.ContextKVKey(names.ContextHead(permSlack, conv)), ""},
		{"reading the context of a binding it does not serve", "c",
			"$JS.API.DIRECT.GET." + n.ContextStream() + "." + n.ContextKVKey(names.ContextHead(permSlack, conv)), ""},
		{"the waiting requests of a conversation of another binding", "c", n.ContextKVKey(names.ContextApprovals(permSlack, conv)), ""},
		{"reading the waiting requests of a binding it does not serve", "c",
			"$JS.API.DIRECT.GET." + n.ContextStream() + "." + n.ContextKVKey(names.ContextApprovals(permSlack, conv)), ""},
		{"listing the context bucket", "b", "$JS.API.CONSUMER.CREATE." + n.ContextStream() + ".x", ""},
		{"listing the context bucket through the rights to list replies", "b",
			"$JS.API.CONSUMER.CREATE." + n.ContextStream() + ".x." + n.ContextKVKey(names.ContextOf(permSlack)), ""},
		{"listing the replies being posted of a binding it does not serve", "c",
			"$JS.API.CONSUMER.CREATE." + n.ContextStream() + ".x." + n.ContextKVKey(names.ContextReplies(permSlack)), ""},
		{"deleting the context bucket", "b", "$JS.API.STREAM.DELETE." + n.ContextStream(), ""},
		{"the poller's lease, on a host that does not receive", "c", n.KVKey(names.PollerLease("telegram")), ""},
		{"the poller's offset, on a host that does not receive", "c", n.KVKey(names.Offset("telegram")), ""},
		{"another host's heartbeat", "a", n.KVKey(names.Member("b")), ""},
		{"another host's drain key", "a", n.KVKey(names.Drain("b")), ""},
		{"the pause of a schedule of a binding it does not serve", "c", n.KVKey(names.SchedulePause("daily")), ""},
		{"another binding's consumer", "a", "$JS.API.CONSUMER.CREATE." + stream + "." + n.Consumer(permTG) + "." + n.BindingFilter(permTG), ""},
		{"pulling another binding's events", "a", "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + n.Consumer(permTG), ""},
		{"acknowledging another binding's events", "a", "$JS.ACK." + stream + "." + n.Consumer(permTG) + ".1.1.1.1.0", ""},
		{"a consumer of its own filtered on all events", "a", "$JS.API.CONSUMER.CREATE." + stream + "." + n.Consumer(permSlack) + ".t.in.>", ""},
		{"deleting the stream", "b", "$JS.API.STREAM.DELETE." + stream, ""},
		{"reconfiguring the stream", "b", "$JS.API.STREAM.UPDATE." + stream, ""},
		{"creating the stream", "b", "$JS.API.STREAM.CREATE." + stream, ""},
		{"purging the stream", "b", "$JS.API.STREAM.PURGE." + stream, ""},
		{"deleting a consumer", "b", "$JS.API.CONSUMER.DELETE." + stream + "." + n.Consumer(permSlack), ""},
		{"deleting the bucket", "b", "$JS.API.STREAM.DELETE." + kv, ""},
		{"reconfiguring the bucket", "b", "$JS.API.STREAM.UPDATE." + kv, ""},
		{"purging the bucket", "b", "$JS.API.STREAM.PURGE." + kv, ""},
		{"another host's replies", "a", "", names.Inbox("c") + ".>"},
		{"every host's replies", "a", "", "_INBOX.>"},
		{"the events themselves", "b", "", "t.in.>"},
		{"the bucket's writes", "b", "", "$KV.>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc, errs := pc.raw(tt.host)
			subject := tt.pub
			if tt.pub != "" {
				if err := nc.PublishMsg(&nats.Msg{Subject: tt.pub, Reply: names.Inbox(tt.host) + ".x", Data: forged}); err != nil {
					t.Fatal(err)
				}
			} else {
				subject = tt.sub
				if _, err := nc.SubscribeSync(tt.sub); err != nil {
					t.Fatal(err)
				}
			}
			_ = nc.Flush()
			select {
			case err := <-errs:
				if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), `"`+subject+`"`) {
					t.Errorf("%s: %v; want the server's refusal of %s", tt.host, err, subject)
				}
			case <-time.After(waitTimeout):
				t.Errorf("%s was let %s %s", tt.host, map[bool]string{true: "publish to", false: "subscribe to"}[tt.pub != ""], subject)
			}
		})
	}
	// Everything still stands, and nothing forged ran.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	r, err := ReadStatus(ctx, pc.settings("c"), nil)
	if err != nil || len(r.Bindings) != 2 {
		t.Fatalf("status after the refusals: %+v, %v", r, err)
	}
}

// checkContext: the holder a replicates a transcript of more than one
// part, then its growth (only the parts from the first that changed);
// the standby b reads back each version whole, and status says it is
// replicated.
func checkContext(ctx context.Context, t *testing.T, a, b *Node) {
	t.Helper()
	conv := names.Conversation("C1", "x")
	tr := bytes.Repeat([]byte(`{"type":"user","message":"hello"}`+"\n"), ContextPart/16)
	sent, err := a.PutContext(ctx, permSlack, conv, "sid-1", "/ws", tr, int64(len(tr)), 0)
	if err != nil {
		t.Fatalf("a replicating a context of its binding: %v", err)
	}
	grown := append(slices.Clone(tr), []byte(`{"type":"assistant"}`+"\n")...)
	more, err := a.PutContext(ctx, permSlack, conv, "sid-1", "/ws", grown, int64(len(grown)), int64(len(tr)))
	if err != nil {
		t.Fatalf("a replicating the context's growth: %v", err)
	}
	if more >= sent {
		t.Errorf("the growth sent %d bytes, the whole %d: want only the changed part", more, sent)
	}
	h, got, err := b.GetContext(ctx, permSlack, conv)
	if err != nil || h.SessionID != "sid-1" || h.Workspace != "/ws" || !bytes.Equal(got, grown) {
		t.Fatalf("b reads the context: %+v, %d bytes (want %d), %v", h, len(got), len(grown), err)
	}
	if _, _, err := b.GetContext(ctx, permSlack, names.Conversation("C1", "none")); !errors.Is(err, ErrNoContext) {
		t.Errorf("a conversation without context: %v; want ErrNoContext", err)
	}
	// A transcript over the limit: not stored, and status says why.
	big := names.Conversation("C1", "big")
	if _, err := a.PutContext(ctx, permSlack, big, "sid-2", "/ws", nil, ContextLimit+1, 0); err != nil {
		t.Fatalf("a recording an unreplicated context: %v", err)
	}
	if h, got, err := b.GetContext(ctx, permSlack, big); err != nil || got != nil || !strings.Contains(h.NotReplicated, "over the 16 MiB limit") {
		t.Errorf("b reads the context over the limit: %+v, %d bytes, %v", h, len(got), err)
	}
	checkReplies(ctx, t, a, b)
	checkApprovals(ctx, t, a, b)
	r, err := a.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, c := range r.Conversations {
		switch c.Thread {
		case "x":
			seen++
			if !c.Replicated || c.Context != "yes" {
				t.Errorf("status of the replicated conversation: %+v", c)
			}
		case "big":
			seen++
			if c.Replicated || c.Context != "no (its transcript (17 MiB) is over the 16 MiB limit)" {
				t.Errorf("status of the conversation over the limit: %+v", c)
			}
		}
	}
	if seen != 2 {
		t.Errorf("status shows %d of the 2 conversations: %+v", seen, r.Conversations)
	}
}

func jsonEvent(ev ingress.Event) ([]byte, error) {
	ev.V, ev.Origin = format.Written(), "c"
	return json.Marshal(ev)
}

// TestEmbeddedServerHoldsHostsToTheirPart: the embedded server (here on
// c) admits each member's NKey with that member's Permissions and makes
// the stream and the bucket itself; the hosts run everything they do
// without a refusal, and are refused the rest.
func TestEmbeddedServerHoldsHostsToTheirPart(t *testing.T) {
	t.Parallel()
	pc := newPermCluster(t)
	sc := pc.settings("c")
	sc.Embedded = &embedded.Options{Name: "c", StoreDir: filepath.Join(pc.dir, "nats"), Listen: "127.0.0.1:0"}
	c := pc.start(sc)
	pc.url = c.srv.ClientURL()
	a := pc.start(pc.settings("a"))
	b := pc.start(pc.settings("b"))
	pc.run(a, b, c)
}

// TestServerConfigHoldsHostsToTheirPart: a NATS server run from the
// config text `cc-connect cluster permissions` prints (ServerConfig),
// with the hosts' keys filled in: a host cannot create the stream and the
// bucket (it fails at once, naming `cluster init`), Init with the admin's
// seed makes them, and then the hosts run everything they do without a
// refusal, and are refused the rest.
func TestServerConfigHoldsHostsToTheirPart(t *testing.T) {
	t.Parallel()
	pc := newPermCluster(t)
	text := pc.settings("a").ServerConfig(pc.keys["admin"])
	for _, h := range []string{"a", "b", "c", "admin"} {
		if !strings.Contains(text, `"`+pc.keys[h]+`"`) {
			t.Fatalf("the server config lacks %s's key:\n%s", h, text)
		}
	}
	pc.url = configServer(t, pc.dir, text, pc.v)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := Start(ctx, pc.settings("a"), Options{}); err == nil || !strings.Contains(err.Error(), "cluster init") {
		t.Fatalf("a host started without the stream, or failed otherwise: %v", err)
	}
	pc.v.mu.Lock()
	pc.v.lines = nil // that refusal was the point
	pc.v.mu.Unlock()
	if err := Init(ctx, pc.settings("a"), Auth{NKeySeedFile: pc.seeds["b"]}, nil); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("cluster init with a host's seed: %v", err)
	}
	if err := Init(ctx, pc.settings("a"), Auth{NKeySeedFile: pc.seeds["admin"]}, nil); err != nil {
		t.Fatalf("cluster init with the admin's seed: %v\n%s", err, strings.Join(pc.v.all(), "\n"))
	}
	pc.v.mu.Lock()
	pc.v.lines = nil
	pc.v.mu.Unlock()
	a := pc.start(pc.settings("a"))
	b := pc.start(pc.settings("b"))
	c := pc.start(pc.settings("c"))
	pc.run(a, b, c)
}

// configServer starts a JetStream server from a config file of text and
// returns its client URL.
func configServer(t *testing.T, dir, text string, v *violations) string {
	t.Helper()
	conf := filepath.Join(dir, "nats.conf")
	text = "listen: 127.0.0.1:-1\njetstream { store_dir: \"" + filepath.Join(dir, "js") + "\" }\n" + text
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("the config does not parse: %v\n%s", err, text)
	}
	opts.NoSigs = true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.SetLoggerV2(v, true, false, false)
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return ns.ClientURL()
}

// TestSetupPermissionsAreTheAdminsOnly: the user that creates the stream
// and the bucket may not delete or purge them.
func TestSetupPermissionsAreTheAdminsOnly(t *testing.T) {
	t.Parallel()
	p := Settings{Names: names.Names{Prefix: "t"}}.SetupPermissions()
	for _, s := range p.Publish {
		for _, bad := range []string{"DELETE", "PURGE", ">", "*", "MSG"} {
			if strings.Contains(s, bad) {
				t.Errorf("the setup user may publish to %s", s)
			}
		}
	}
}

// TestOwnerDropsWhatItsPublisherMayNotSend: on a server that does not
// hold hosts to their permissions, the owner still takes only what the
// subject's publisher may send under its config, for a conversation that
// routes to the binding it consumes: an event a non-receiver published
// for a binding it does not serve, and one published on the "*"
// binding's subject for a channel that has a binding of its own, are
// dropped; a receiver's event runs.
func TestOwnerDropsWhatItsPublisherMayNotSend(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	settings := func(host string) Settings {
		s := testSettings(t, host, []string{url}, 1, "a")
		s.Bindings = append(s.Bindings, BindingSpec{Binding: names.Binding{Platform: "slack", Channel: "C1"}, Host: "b"})
		s.Receivers = []string{"a", "b"}
		s.ConfigHash = s.Fingerprint()
		return s
	}
	a, c := startNode(t, settings("a")), startNode(t, settings("c"))
	l := newLedger()
	serveBinding(t, a, newFakeEngine("a", l))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	raw := func(origin, channel, id string) {
		t.Helper()
		ev := permEvent(t, slackAll, channel, id, id)
		ev.V, ev.Origin = format.Written(), origin
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		subject := c.s.Names.In(slackAll, ev.Conversation(), origin)
		if _, err := c.js.Publish(ctx, subject, data); err != nil {
			t.Fatal(err)
		}
	}
	raw("c", "C2", "from-c")    // c neither receives nor serves slack/*
	raw("b", "C1", "not-yours") // C1 has a binding of its own (b's)
	raw("b", "C2", "fine")
	l.waitIDs(t, []string{"fine"})
	cons, err := c.js.Consumer(ctx, c.s.Names.Stream(), c.s.Names.Consumer(slackAll))
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the forged events terminated", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumAckPending == 0 && info.NumPending == 0
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.runs) != 1 {
		t.Errorf("ran %v, want the receiver's event alone", l.runs)
	}
}

// TestNonReceiverNeverPolls: a host outside cluster.receivers never
// contends for a poller's lease, even a free one (which any contender
// takes at once): its gate decides so and waits until it is stopped, and
// the host never reads or writes the lease.
func TestNonReceiverNeverPolls(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	s := testSettings(t, "c", []string{url}, 1, "a")
	s.Receivers = []string{"a"}
	logs, leases := &logged{}, clustertest.NewLeases()
	decided := logs.seen("Not receiving: this host is not in cluster.receivers")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	n, err := Start(ctx, s, Options{Log: slog.New(logs), Observe: leases.Observe})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	type result struct {
		tenure platform.Tenure
		err    error
	}
	got := make(chan result, 1)
	go func() {
		tn, err := n.PollerGate("tg").Acquire(ctx)
		got <- result{tn, err}
	}()
	select {
	case r := <-got:
		t.Fatalf("the gate of a host outside cluster.receivers returned before it was stopped: %v, %v", r.tenure, r.err)
	case <-decided:
	case <-time.After(waitTimeout):
		t.Fatal("the gate neither said it would not contend nor returned")
	}
	cancel()
	select {
	case r := <-got:
		if r.err == nil {
			t.Fatal("a host outside cluster.receivers holds the poller's lease")
		}
	case <-time.After(waitTimeout):
		t.Fatal("the gate did not return once stopped")
	}
	key := names.PollerLease("tg")
	if leases.Has(func(e kvlease.Event) bool { return e.Key == key }) {
		t.Errorf("the host contended for %s", key)
	}
	st, err := n.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Leases) != 0 {
		t.Errorf("leases written: %+v", st.Leases)
	}
}

// TestNonReceiverPublishesOnlyForWhatItServes: a host outside
// cluster.receivers does not publish a webhook's run, nor a message, for
// a binding it does not serve (its user may not: ErrNotReceiver, before
// the server refuses it), and does publish a run of a binding it serves
// (its schedules fire there).
func TestNonReceiverPublishesOnlyForWhatItServes(t *testing.T) {
	t.Parallel()
	url := natstest.Single(t).ClientURL()
	s := testSettings(t, "c", []string{url}, 1, "a")
	s.Bindings = append(s.Bindings, BindingSpec{Binding: names.Binding{Platform: "tg", Channel: "*"}, Host: "c"})
	s.Receivers = []string{"a"}
	n := startNode(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	run := trigger.Run{ID: "r1", Kind: trigger.KindWebhook, Name: "deploy", Platform: "slack", Channel: "C1", Prompt: "go", UserID: "webhook:deploy", At: time.Now()}
	if _, err := n.PublishRun(ctx, run); !errors.Is(err, ErrNotReceiver) {
		t.Errorf("a run for slack/* from a host that neither receives nor serves it: %v", err)
	}
	if _, err := n.Inbound().HandleMessage(ctx, permEvent(t, slackAll, "C1", "m1", "hi").Message.PlatformMessage(nil)); !errors.Is(err, ErrNotReceiver) {
		t.Errorf("a message for slack/* from a host that neither receives nor serves it: %v", err)
	}
	run.ID, run.Platform, run.Channel = "r2", "tg", "42"
	if _, err := n.PublishRun(ctx, run); err != nil {
		t.Errorf("a run of the binding c serves: %v", err)
	}
}

// logged collects a node's log messages.
type logged struct {
	mu      sync.Mutex // guards msgs, waiters
	msgs    []string
	waiters map[string][]chan struct{}
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }
func (l *logged) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.msgs = append(l.msgs, r.Message)
	for _, ch := range l.waiters[r.Message] {
		close(ch)
	}
	delete(l.waiters, r.Message)
	l.mu.Unlock()
	return nil
}
func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// seen returns a channel closed once msg has been logged.
func (l *logged) seen(msg string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if slices.Contains(l.msgs, msg) {
		close(ch)
		return ch
	}
	if l.waiters == nil {
		l.waiters = map[string][]chan struct{}{}
	}
	l.waiters[msg] = append(l.waiters[msg], ch)
	return ch
}

func (l *logged) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs, msg)
}

// TestMovedBindingUnderNewRights: a binding moved by hand (docs/cluster.md)
// where the server already holds the old holder to its new config: the
// old holder's release as it starts is refused at once (not waited out)
// and logged, and the new owner takes the lease once it expires (on the
// hosts' clock, which the test moves).
func TestMovedBindingUnderNewRights(t *testing.T) {
	t.Parallel()
	pc := newPermCluster(t)
	store := filepath.Join(pc.dir, "nats")
	listen := "127.0.0.1:0"
	startC := func(s Settings) *Node {
		s.Embedded = &embedded.Options{Name: "c", StoreDir: store, Listen: listen}
		n := pc.start(s)
		pc.url = n.srv.ClientURL()
		listen = strings.TrimPrefix(pc.url, "nats://") // the same port after a restart
		return n
	}
	clock := clustertest.NewClock()
	la, lb := clustertest.NewLeases(), clustertest.NewLeases()
	c := startC(pc.settings("c"))
	a := pc.startOn(pc.settings("a"), Options{Clock: clock, Observe: la.Observe})
	l := newLedger()
	pc.serve(a, permSlack, newFakeEngine("a", l))
	publishOn(t, a, permEvent(t, permSlack, "C1", "s-0", "s0"))
	l.waitIDs(t, []string{"s-0"})
	a.Close()
	c.Close()

	// slack/* moves to b; the server (c) restarts first, with the new config.
	moved := func(host string) Settings {
		s := pc.settings(host)
		s.Bindings = []BindingSpec{{Binding: permSlack, Host: "b"}, {Binding: permTG, Host: "c"}}
		s.ConfigHash = s.Fingerprint()
		return s
	}
	startC(moved("c"))
	b := pc.startOn(moved("b"), Options{Clock: clock, Observe: lb.Observe})
	pc.serve(b, permSlack, newFakeEngine("b", l))
	logs := &logged{}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	a2, err := Start(ctx, moved("a"), Options{Log: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a2.Close)
	if !logs.has("Releasing a lease this host no longer serves was refused by NATS; it expires instead") {
		t.Errorf("the refused release was not logged: %q", logs.msgs)
	}
	lb.ExpireFor(t, clock, la.Acquired(t, names.BindingLease(permSlack)))
	publishOn(t, b, permEvent(t, permSlack, "C1", "s-1", "s1"))
	runs := l.waitIDs(t, []string{"s-1"})
	if last := runs[len(runs)-1]; last.host != "b" {
		t.Errorf("s-1 ran on %s, want the new owner b", last.host)
	}
}

// checkReplies: the holder a stores the reply it is posting in a
// conversation; its standby b lists and reads it, and removes it once
// posted, but not a later reply of the conversation.
func checkReplies(ctx context.Context, t *testing.T, a, b *Node) {
	t.Helper()
	conv := names.Conversation("C1", "r")
	ra, rb := RepliesOf(a), RepliesOf(b)
	rev, err := ra.PutReply(ctx, permSlack, conv, []byte(`reply 1`))
	if err != nil {
		t.Fatalf("a storing the reply it posts: %v", err)
	}
	got, err := rb.Replies(ctx, permSlack)
	if err != nil || len(got) != 1 || got[0].Conversation != conv || string(got[0].Value) != "reply 1" || got[0].Revision != rev {
		t.Fatalf("b lists the replies being posted: %+v, %v; want reply 1 of %s at %d", got, err, conv, rev)
	}
	later, err := ra.PutReply(ctx, permSlack, conv, []byte(`reply 2`))
	if err != nil {
		t.Fatal(err)
	}
	if err := rb.RemoveReply(ctx, permSlack, conv, rev); err != nil {
		t.Fatalf("removing a reply replaced since: %v", err)
	}
	if r, err := rb.Reply(ctx, permSlack, conv); err != nil || string(r.Value) != "reply 2" || r.Revision != later {
		t.Fatalf("the later reply after removing the earlier: %+v, %v", r, err)
	}
	if err := rb.RemoveReply(ctx, permSlack, conv, later); err != nil {
		t.Fatalf("removing the posted reply: %v", err)
	}
	if r, err := ra.Reply(ctx, permSlack, conv); err != nil || r.Value != nil {
		t.Fatalf("a removed reply reads %+v, %v; want none", r, err)
	}
	if got, err := rb.Replies(ctx, permSlack); err != nil || len(got) != 0 {
		t.Fatalf("replies after the removal: %+v, %v; want none", got, err)
	}
}

// checkApprovals: the holder a keeps the requests a conversation's turn
// waits on; its standby b reads them back and removes them once answered.
func checkApprovals(ctx context.Context, t *testing.T, a, b *Node) {
	t.Helper()
	conv := names.Conversation("C1", "w")
	if err := ApprovalsOf(a).Put(ctx, permSlack, conv, []byte(`waiting 1`)); err != nil {
		t.Fatalf("a keeping the requests of its binding's conversation: %v", err)
	}
	if err := ApprovalsOf(a).Put(ctx, permSlack, conv, []byte(`waiting 2`)); err != nil {
		t.Fatal(err)
	}
	if v, err := ApprovalsOf(b).Get(ctx, permSlack, conv); err != nil || string(v) != "waiting 2" {
		t.Fatalf("b reads the waiting requests: %q, %v; want the latest", v, err)
	}
	if err := ApprovalsOf(b).Remove(ctx, permSlack, conv); err != nil {
		t.Fatalf("b removing the answered requests: %v", err)
	}
	if v, err := ApprovalsOf(a).Get(ctx, permSlack, conv); err != nil || v != nil {
		t.Fatalf("removed requests read %q, %v; want none", v, err)
	}
}

// TestStartRefusesAStreamKeptLongerThanTheRecords: a message read back
// and answered by one host is kept from running again under its own
// delivery only while the record of answered messages holds it
// (AnsweredTTL); a host whose stream keeps events longer (max age 0, set
// by hand) and who may not change it refuses to start, naming `cluster
// init`, which sets it back.
func TestStartRefusesAStreamKeptLongerThanTheRecords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxAge time.Duration
		ok     bool
	}{{ingress.MaxAge, true}, {AnsweredTTL - time.Hour, true}, {AnsweredTTL, false}, {0, false}, {90 * 24 * time.Hour, false}} {
		err := checkRetention("t-in", tc.maxAge)
		if (err == nil) != tc.ok || err != nil && !errors.Is(err, ErrRetention) {
			t.Errorf("max age %s: %v, want ok=%v", tc.maxAge, err, tc.ok)
		}
	}

	pc := newPermCluster(t)
	pc.url = configServer(t, pc.dir, pc.settings("a").ServerConfig(pc.keys["admin"]), pc.v)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	admin := Auth{NKeySeedFile: pc.seeds["admin"]}
	if err := Init(ctx, pc.settings("a"), admin, nil); err != nil {
		t.Fatal(err)
	}
	// The admin keeps events for ever, by hand.
	a := pc.settings("a")
	a.Auth = admin
	opts, _, err := natsOptions(a, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(pc.url, append(opts, nats.CustomInboxPrefix(AdminInbox))...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingress.StreamConfig(a.Names, a.Replicas)
	cfg.MaxAge = 0
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	pc.v.mu.Lock()
	pc.v.lines = nil
	pc.v.mu.Unlock()
	if _, err := Start(ctx, pc.settings("a"), Options{}); !errors.Is(err, ErrRetention) || !strings.Contains(err.Error(), "cluster init") {
		t.Fatalf("a host started on a stream that keeps events for ever, or failed otherwise: %v", err)
	}
	if err := Init(ctx, pc.settings("a"), admin, nil); err != nil {
		t.Fatal(err)
	}
	pc.start(pc.settings("a"))
}
