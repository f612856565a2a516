package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/format"
)

// A host that stops or is drained hands its bindings over (docs/cluster.md,
// "A stop hands over"): Quiesce first, so that no binding's consumer pulls
// or hands on anything more while the engine finishes its running turns;
// then ending the serving loops' ctx gives what is still in hand back to
// the server (ingress.ConsumerOptions.Quiet) and releases each lease
// marked handed over, so that the standbys take it at once instead of
// after lease_ttl. A drain (`cc-connect cluster drain <host>`) is a key of
// the bucket the host watches: the binary then does the same without
// exiting, and serves nothing until it restarts.

// Quiesce stops every binding's consumer from pulling or handing on more
// events, keeping alive what is in hand; the hand-over itself happens when
// the serving loops' ctx ends. Calling it again does nothing.
func (n *Node) Quiesce() {
	n.quietOnce.Do(func() { close(n.quiet) })
}

func (n *Node) quieted() bool {
	select {
	case <-n.quiet:
		return true
	default:
		return false
	}
}

// handOverTimeout bounds the release of one lease at a hand-over.
const handOverTimeout = 5 * time.Second

// handOver stops contending for claim and, when this host holds it,
// releases it handed over. f is the tenure it held (nil: none).
func (n *Node) handOver(claim *kvlease.Claim, log *slog.Logger, f *kvlease.Fence) error {
	ctx, cancel := context.WithTimeout(context.Background(), handOverTimeout)
	defer cancel()
	if err := claim.HandOver(ctx); err != nil {
		log.Warn("Handing the binding over did not finish; its lease expires instead", "error", err)
		return err
	}
	if f != nil {
		log.Info("Handed the binding over to its next holder", "token", f.Token())
	}
	return nil
}

// DrainRequest is the value of a host's drain key.
type DrainRequest struct {
	V  int       `json:"v"`
	At time.Time `json:"at"` // the requester's wall clock, for people
}

// RequestDrain asks host to hand its bindings over, by writing its drain
// key; with the per-host NATS permissions only that host's own credential
// may. It returns the key's revision.
func (n *Node) RequestDrain(ctx context.Context, host string) (uint64, error) {
	return requestDrain(ctx, n.kv, &n.refused, host)
}

func requestDrain(ctx context.Context, kv jetstream.KeyValue, ref *refusals, host string) (uint64, error) {
	data, _ := json.Marshal(DrainRequest{V: format.Written(), At: time.Now()})
	var rev uint64
	err := call(ctx, ref, func(ctx context.Context) error {
		var err error
		rev, err = kv.Put(ctx, names.Drain(host), data)
		return err
	})
	var refused *errRefused
	if errors.As(err, &refused) {
		return 0, fmt.Errorf("NATS refused writing host %s's drain key: run cluster drain with that host's own config and credential: %w", host, err)
	}
	if err != nil {
		return 0, fmt.Errorf("writing host %s's drain key: %w", host, err)
	}
	return rev, nil
}

// Drained returns a channel closed when a drain of this host is asked for
// after this call (a drain asked before this run started is the one this
// run rejoins after). It watches until ctx ends.
func (n *Node) Drained(ctx context.Context) (<-chan struct{}, error) {
	w, err := n.kv.Watch(ctx, names.Drain(n.s.Host), jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("watching this host's drain key: %w", err)
	}
	out := make(chan struct{})
	go func() {
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				n.log.Info("A drain of this host was asked for: handing its bindings over", "revision", e.Revision())
				close(out)
				return
			}
		}
	}()
	return out, nil
}

// DrainProgress is what Drain reports of one binding host served or
// could serve.
type DrainProgress struct {
	Binding string
	// Holder is who holds its lease now ("" nobody).
	Holder string
	// Stuck: nobody else may serve it (no standby but host): its events
	// wait in the stream until host is back.
	Stuck bool
}

// drainPoll is how often Drain reads the leases while it waits.
const drainPoll = 200 * time.Millisecond

// Drain asks host (as s's credential; with the per-host permissions, only
// host's own may) to hand its bindings over, and waits, within ctx, until
// it holds none of them and each it held is held by another host, or has
// no other host that may serve it. It returns where each binding host
// could serve is served.
func Drain(ctx context.Context, s Settings, host string, log *slog.Logger) ([]DrainProgress, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if s.Embedded != nil && s.Embedded.Listen != "" {
		s.URLs = append([]string{"nats://" + dialable(s.Embedded.Listen)}, s.URLs...)
	}
	var ref refusals
	opts, closed, err := natsOptions(s, log, &ref)
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.MaxReconnects(0), nats.Name("cc-connect cluster drain"))
	nc, err := nats.Connect(strings.Join(s.URLs, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	defer closeConn(nc, closed)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, s.Names.Bucket())
	if err != nil {
		return nil, fmt.Errorf("opening the cluster bucket: %w", err)
	}
	var mine []BindingSpec
	for _, b := range s.Bindings {
		if _, _, ok := b.Role(host); ok {
			mine = append(mine, b)
		}
	}
	if len(mine) == 0 {
		return nil, fmt.Errorf("host %q serves no binding under this config: nothing to drain", host)
	}
	if _, err := requestDrain(ctx, kv, &ref, host); err != nil {
		return nil, err
	}
	for {
		out, done, err := drainState(ctx, kv, mine, host)
		if err == nil && done {
			return out, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("host %s still holds a binding: is it running, and does it watch its drain key? %w", host, ctx.Err())
			}
			return out, err
		case <-time.After(drainPoll):
		}
	}
}

// drainState reads the leases of mine: done when host holds none and each
// is held by another host or has none that may take it.
func drainState(ctx context.Context, kv jetstream.KeyValue, mine []BindingSpec, host string) ([]DrainProgress, bool, error) {
	out := make([]DrainProgress, 0, len(mine))
	done := true
	for _, b := range mine {
		p := DrainProgress{Binding: b.Binding.String()}
		// Whoever host is of the binding, the others are as many as its
		// standbys: none only for an owner without one.
		p.Stuck = len(b.Standby) == 0
		e, err := kv.Get(ctx, names.BindingLease(b.Binding))
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return nil, false, err
		default:
			var v kvlease.Value
			if json.Unmarshal(e.Value(), &v) == nil {
				p.Holder = v.Holder
			}
		}
		if p.Holder == host || (p.Holder == "" && !p.Stuck) {
			done = false
		}
		out = append(out, p)
	}
	return out, done, nil
}
