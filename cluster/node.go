package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/embedded"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/cluster/offsets"
	"github.com/cc-connect/cc-connect/cluster/pauses"
)

// ErrNotServed: this host neither owns the binding nor stands by for it;
// its events are only published here, never consumed.
var ErrNotServed = errors.New("this host does not serve the binding")

// Options are what a Node needs beyond the settings.
type Options struct {
	Log     *slog.Logger
	Version string
	// Clock is the hosts' clock for leases; nil is the real one.
	Clock kvlease.Clock
	// Observe is told of lease events (tests).
	Observe func(kvlease.Event)
}

// Node is this host's part in the cluster.
type Node struct {
	s   Settings
	log *slog.Logger

	srv    *embedded.Server // nil unless embedded
	nc     *nats.Conn
	closed <-chan struct{} // the connection's last callback ran
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	ctxKV  jetstream.KeyValue // the conversations' context (context.go)
	leases *kvlease.Manager
	pub    *ingress.Publisher
	// refused are the subjects the server refused this host's user.
	refused refusals

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	// quiet is closed by Quiesce: the host stops, and hands its bindings
	// over (handover.go).
	quiet     chan struct{}
	quietOnce sync.Once
}

// Start starts the embedded server (if configured), connects, makes sure
// the stream and the bucket exist (waiting, within ctx, for a NATS cluster
// still electing its leader), and starts the lease manager.
func Start(ctx context.Context, s Settings, o Options) (*Node, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("host", s.Host)
	n := &Node{s: s, log: log, done: make(chan struct{}), quiet: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			n.shutdown()
		}
	}()
	if s.Embedded != nil {
		srv, err := startEmbedded(ctx, s, log)
		if err != nil {
			return nil, err
		}
		n.srv = srv
	}
	nc, closed, err := connect(s, n.srv, log, &n.refused)
	if err != nil {
		return nil, err
	}
	n.nc, n.closed = nc, closed
	if n.js, err = jetstream.New(nc); err != nil {
		return nil, fmt.Errorf("opening JetStream: %w", err)
	}
	if n.kv, n.ctxKV, err = setup(ctx, n.js, s, log, &n.refused); err != nil {
		return nil, err
	}
	if err := n.checkFormats(ctx); err != nil {
		return nil, err
	}
	stateID, err := StateID(s.StateDir)
	if err != nil {
		return nil, err
	}
	n.leases = kvlease.New(n.kv, kvlease.Options{Host: s.Host, StateID: stateID, TTL: s.LeaseTTL, Version: o.Version,
		ConfigHash: s.ConfigHash, Log: log, Clock: o.Clock, Observe: o.Observe})
	rctx, rcancel := context.WithTimeout(ctx, releaseTimeout)
	err = n.releaseMoved(rctx)
	rcancel()
	if err != nil {
		log.Warn("Releasing the leases of bindings this host no longer serves failed; they expire instead", "error", err)
	}
	n.pub = ingress.NewPublisher(n.js, s.Names, s.Host)
	runCtx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() {
		defer close(n.done)
		if err := n.leases.Run(runCtx); err != nil && runCtx.Err() == nil {
			log.Error("The lease manager stopped", "error", err)
		}
	}()
	ok = true
	log.Info("Joined the cluster", "members", s.Members, "servers", nc.ConnectedUrlRedacted(), "config_hash", s.ConfigHash)
	return n, nil
}

// startEmbedded starts the embedded server of s: it admits the members'
// NKeys, each user with its Permissions, and, when it checks NKeys at
// all, makes the stream and the bucket as its own setup user (a key that
// exists only in this process), since no host's user may.
func startEmbedded(ctx context.Context, s Settings, log *slog.Logger) (*embedded.Server, error) {
	eo := *s.Embedded
	eo.Log = log
	tc, err := s.Auth.serverTLS()
	if err != nil {
		return nil, err
	}
	eo.TLS, eo.RouteTLS = tc, tc
	hosts := slices.Sorted(maps.Keys(s.NKeys))
	for _, h := range hosts {
		p := s.Permissions(h)
		eo.Users = append(eo.Users, embedded.User{NKey: s.NKeys[h], Publish: p.Publish, Subscribe: p.Subscribe})
	}
	if len(eo.Users) > 0 {
		p := s.SetupPermissions()
		eo.Setup = &embedded.User{Publish: p.Publish, Subscribe: p.Subscribe}
	}
	srv, err := embedded.Start(eo)
	if err != nil {
		return nil, err
	}
	log.Info("Embedded NATS server started", "listen", srv.ClientURL(), "routes", srv.RouteURL(), "store", eo.StoreDir,
		"users", hosts)
	if opts := srv.SetupOptions(); opts != nil {
		if err := setupAs(ctx, s, "", log, append(opts, nats.CustomInboxPrefix(AdminInbox))...); err != nil {
			srv.Shutdown()
			return nil, err
		}
	}
	return srv, nil
}

// releaseTimeout bounds releaseMoved: a server that holds this host to
// the permissions of its new config refuses its writes of a lease it no
// longer serves, and a refused write is never answered.
const releaseTimeout = 5 * time.Second

// releaseMoved releases the binding leases an earlier run of this host
// held and that the config no longer gives it (moved to another host, or
// removed), so that their new owners take them at once.
func (n *Node) releaseMoved(ctx context.Context) error {
	serves := map[string]bool{}
	for _, b := range n.s.Bindings {
		if _, _, ok := b.Role(n.s.Host); ok {
			serves[names.BindingLease(b.Binding)] = true
		}
	}
	keys, err := n.kv.ListKeysFiltered(ctx, names.LeasePrefix+"binding.>")
	if err != nil {
		return err
	}
	var stale []string
	for k := range keys.Keys() {
		if !serves[k] {
			stale = append(stale, k)
		}
	}
	var errs []error
	for _, k := range stale {
		err := call(ctx, &n.refused, func(ctx context.Context) error {
			_, err := n.leases.ReleaseIfMine(ctx, k)
			return err
		})
		var refused *errRefused
		switch {
		case errors.As(err, &refused):
			// The server holds this host to its new config already.
			n.log.Warn("Releasing a lease this host no longer serves was refused by NATS; it expires instead", "lease", k)
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// Publisher publishes what this host's adapters receive.
func (n *Node) Publisher() *ingress.Publisher { return n.pub }

// Leases is this host's lease manager: the poller and shard leases are
// claimed on it (names.PollerLease, names.ShardLease, kvlease.Candidate).
func (n *Node) Leases() *kvlease.Manager { return n.leases }

// Offsets is the stored offset of a platform's poller.
func (n *Node) Offsets(platform string) *offsets.Store {
	return offsets.New(n.kv, names.Offset(platform))
}

// Pauses is where the schedules' pauses are kept for every host.
func (n *Node) Pauses() *pauses.Store { return pauses.New(n.kv) }

// InStream says whether the ingress stream still holds the event of
// sequence seq: a work queue drops an event once it is acknowledged, so
// false means it was settled and no host gets it again.
func (n *Node) InStream(ctx context.Context, seq uint64) (bool, error) {
	st, err := n.js.Stream(ctx, n.s.Names.Stream())
	if err != nil {
		return false, fmt.Errorf("reading the ingress stream: %w", err)
	}
	if _, err := st.GetMsg(ctx, seq); err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("reading event %d of the ingress stream: %w", seq, err)
	}
	return true, nil
}

// Settings are the node's settings.
func (n *Node) Settings() Settings { return n.s }

// TenureHandler is implemented by a Handler that must know when this host
// starts and stops serving a binding: the engine drops journal entries of
// an older tenure when one starts, and stops the binding's running turns
// (and keeps their messages unacknowledged) when one ends.
type TenureHandler interface {
	// StartTenure is called once the lease is held, before any event of
	// the tenure is delivered. An error ends the tenure's serving (the
	// lease is kept) and is retried.
	StartTenure(ctx context.Context, b names.Binding, f *kvlease.Fence) error
	// EndTenure is called when serving stops: the fence lost, ctx ended,
	// or the consumer failed.
	EndTenure(b names.Binding, f *kvlease.Fence, why error)
}

// ServeBinding consumes binding b's events while this host holds its
// lease, handing them to h, and waits for the lease between tenures. It
// returns when ctx ends or the node is closed, or at once with
// ErrNotServed.
func (n *Node) ServeBinding(ctx context.Context, b names.Binding, h ingress.Handler) error {
	spec, ok := n.s.Spec(b)
	if !ok {
		return fmt.Errorf("%w: %s is not a cluster binding", ErrNotServed, b)
	}
	role, rank, ok := spec.Role(n.s.Host)
	if !ok {
		return fmt.Errorf("%w: %s (owner %s, standby %v)", ErrNotServed, b, spec.Host, spec.Standby)
	}
	claim := n.leases.Claim(names.BindingLease(b), role, rank)
	cons := ingress.NewConsumer(n.js, ingress.ConsumerOptions{Names: n.s.Names, Binding: b, AckWait: n.s.LeaseTTL, Log: n.log,
		Allow: n.allow(b), Quiet: n.quiet})
	th, _ := h.(TenureHandler)
	log := n.log.With("binding", b.String())
	for {
		if n.quieted() {
			return n.handOver(claim, log, nil)
		}
		f, err := n.waitLease(ctx, claim)
		if err != nil {
			if n.quieted() {
				return n.handOver(claim, log, nil)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err // the node was closed
		}
		log.Info("Serving the binding", "role", role.String(), "token", f.Token())
		if th != nil {
			if err := th.StartTenure(ctx, b, f); err != nil {
				log.Error("Starting to serve the binding failed; retrying", "error", err)
				if !pause(ctx, n.s.LeaseTTL/10) {
					return ctx.Err()
				}
				continue
			}
		}
		err = cons.Serve(ctx, f, h)
		if th != nil {
			th.EndTenure(b, f, err)
		}
		switch {
		case ctx.Err() != nil && n.quieted():
			return n.handOver(claim, log, f)
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ingress.ErrNewerVersion):
			log.Error("An event of this binding is in a newer format than this cc-connect reads: handing the binding over "+
				"and serving it no more until this host is upgraded", "error", err)
			n.handOver(claim, log, f)
			return err
		case f.Check() != nil:
			log.Warn("Stopped serving the binding: its lease was lost", "token", f.Token(), "error", err)
		default:
			log.Warn("Consuming the binding's events failed; retrying", "error", err)
			if !pause(ctx, n.s.LeaseTTL/10) {
				return ctx.Err()
			}
		}
	}
}

// waitLease waits for claim's next tenure, or until the host stops
// (Quiesce): a stopping host takes no binding.
func (n *Node) waitLease(ctx context.Context, claim *kvlease.Claim) (*kvlease.Fence, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-n.quiet:
			cancel()
		case <-ctx.Done():
		}
	}()
	return claim.Wait(ctx)
}

// allow is the owner's check of each event of binding b: its
// conversation routes to b as this host routes it (an event published on
// a "*" binding's subject for a channel that has a binding of its own is
// not b's), and its publisher, where the subject names it, may publish
// for b under this config. Where the server holds every host to its
// permissions, nothing else reaches the stream; the check keeps the
// owner from taking a forged event where a server's permissions are
// wider.
func (n *Node) allow(b names.Binding) func(ingress.Event, string) error {
	return func(ev ingress.Event, publisher string) error {
		t := ev.Target()
		if rb, ok := n.s.Route(t.Platform, t.Channel); !ok || rb != b {
			return fmt.Errorf("channel %s/%s does not route to %s", t.Platform, t.Channel, b)
		}
		if publisher != "" && !n.s.MayPublish(publisher, b) {
			return fmt.Errorf("host %q may not publish for %s (not a receiver, and it does not serve it)", publisher, b)
		}
		return nil
	}
}

func pause(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// Close stops the lease manager, closes the connection and shuts the
// embedded server down. Leases still held are left to expire, or to be
// taken back at once by this host's next start: a host that stops on
// purpose hands them over first (Quiesce, then the serving loops' end).
func (n *Node) Close() { n.shutdown() }

func (n *Node) shutdown() {
	n.once.Do(func() {
		if n.cancel != nil {
			n.cancel()
			<-n.done
		}
		if n.nc != nil {
			closeConn(n.nc, n.closed) // flushes what is buffered: acks of finished turns
		}
		if n.srv != nil {
			n.srv.Shutdown()
		}
	})
}
