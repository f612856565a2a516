package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/ingress"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/cluster/names"
	"github.com/cc-connect/cc-connect/clusterlink"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/trigger"
)

// What `run` does with a [cluster] table (docs/cluster.md): join the
// cluster, run every adapter with the cluster's publisher as its handler,
// and consume the bindings this host owns or stands by for into the
// engine. The terminal is this host's own and talks to the engine
// directly, as without a cluster.

// clusterPlatformFunc prepares one platform of a type whose inbound
// connection the cluster must share out (one poller or one gateway shard
// at a time): it gets the node and the adapter, and returns the adapter to
// run (the same one, or one that follows its lease, or one that only
// sends on a host outside cluster.receivers). Platform types register
// theirs in clusterPlatforms; a type without an entry, other than the
// terminal, is refused in cluster mode.
type clusterPlatformFunc func(ctx context.Context, node *cluster.Node, a platform.Adapter, p config.Platform, log *slog.Logger) (platform.Adapter, error)

// clusterPlatforms are the registered clusterPlatformFuncs, by platform
// type: Telegram's poller lease and Discord's shard lease
// (cluster_pollers.go).
var clusterPlatforms = map[string]clusterPlatformFunc{
	config.TypeTelegram: gateTelegram,
	config.TypeDiscord:  gateDiscord,
	config.TypeSlack:    sendOnlySlack,
}

// checkClusterPlatforms refuses, naming the key, the platforms a cluster
// cannot run in this build.
func checkClusterPlatforms(cfg *config.Config) error {
	if cfg.Cluster == nil {
		return nil
	}
	for i, p := range cfg.Platforms {
		switch p.Type {
		case config.TypeLocal, config.TypeSlack:
			continue
		}
		if _, ok := clusterPlatforms[p.Type]; !ok {
			return fmt.Errorf("platforms[%d] (%s): a %s platform cannot run in a cluster with this build: "+
				"every host would poll or connect with the one token and answer everything (docs/cluster.md); "+
				"remove it, or the [cluster] table", i, p.Name, p.Type)
		}
	}
	return nil
}

// clusterHost is this host's part in the cluster while run runs.
type clusterHost struct {
	node      *cluster.Node
	eng       *engine.Engine
	clustered map[string]bool // platform instances whose events come through the cluster
	log       *slog.Logger
	wg        sync.WaitGroup
	// grace is how long a drain lets running turns finish
	// (agent.shutdown_grace, as a stop does).
	grace time.Duration
	// stopServing ends the serving loops: each hands its binding over
	// when the node was quiesced first.
	stopServing context.CancelFunc

	mu sync.Mutex // guards the fields below
	// fences are the tenures this host serves now, by binding.
	fences map[names.Binding]*kvlease.Fence
	// wake is told when a tenure starts (the scheduler's Wake); nil
	// without schedules.
	wake func()
}

// joinCluster starts the node and joins the engine to it; nil without a
// [cluster] table. Call it before the engine runs; serve starts consuming.
func joinCluster(ctx context.Context, cfg *config.Config, eng *engine.Engine, log *slog.Logger) (*clusterHost, *engine.ClusterIngress, error) {
	s, ok := clusterSettings(cfg)
	if !ok {
		return nil, nil, nil
	}
	node, err := cluster.Start(ctx, s, cluster.Options{Log: log, Version: version})
	if err != nil {
		return nil, nil, fmt.Errorf("joining the cluster: %w", err)
	}
	clustered := map[string]bool{}
	for _, p := range cfg.Platforms {
		if p.Type != config.TypeLocal {
			clustered[p.Name] = true
		}
	}
	standby := map[[2]string]bool{}
	for _, b := range s.Bindings {
		if role, _, ok := b.Role(s.Host); ok && role == kvlease.Standby {
			standby[[2]string{b.Binding.Platform, b.Binding.Channel}] = true
		}
	}
	inbound := node.Inbound()
	ci := eng.JoinCluster(engine.ClusterOptions{
		Host:      s.Host,
		Clustered: func(p string) bool { return clustered[p] },
		Standby:   func(p, ch string) bool { return standby[[2]string{p, ch}] },
		Inbound: func(p string) platform.Handler {
			if clustered[p] {
				return inbound
			}
			return nil
		},
		InStream:    node.InStream,
		Answers:     clusterlink.Answers{Node: node},
		AnsweredFor: cluster.AnsweredTTL,
		Contexts:    clusterlink.Contexts{Node: node},
		Replies:     clusterlink.Replies{Node: node},
		Approvals:   clusterlink.Approvals{Node: node},
		Status: func(ctx context.Context) (string, error) {
			r, err := node.Status(ctx)
			if err != nil {
				return "", err
			}
			return r.Text(), nil
		},
	})
	return &clusterHost{node: node, eng: eng, clustered: clustered, log: log, fences: map[names.Binding]*kvlease.Fence{},
		grace: cmp.Or(cfg.Agent.ShutdownGrace.D(), engine.DefaultShutdownGrace)}, ci, nil
}

// Runs without a person in a cluster (docs/cluster.md): every host reads
// the same [[schedules]] and [webhooks], so each runs the scheduler and
// the webhook listener, but a schedule fires only on the host that holds
// its binding's lease (serves), and a run, wherever it starts, is
// published to the ingress stream like a platform message (Submit), with
// its id as Nats-Msg-Id: the binding's owner journals it, and a run
// published twice (a webhook delivered to two hosts, a schedule that the
// next holder fires again after a failover) is stored once.

var _ trigger.Submitter = (*clusterHost)(nil)

// Submit publishes r to its binding's owner (trigger.Submitter). A run of
// a platform outside the cluster (the terminal, this host's own) goes to
// this host's engine. A host outside cluster.receivers publishes only the
// runs of bindings it serves: a webhook for another is answered 503
// (cluster.ErrNotReceiver), to be sent to a receiver.
func (c *clusterHost) Submit(ctx context.Context, r trigger.Run) error {
	if !c.clustered[r.Platform] {
		return c.eng.Submit(ctx, r)
	}
	dup, err := c.node.PublishRun(ctx, r)
	switch {
	case errors.Is(err, cluster.ErrUnbound), errors.Is(err, ingress.ErrMalformed):
		return fmt.Errorf("%w: %v", trigger.ErrRefused, err)
	case err != nil:
		return err
	case dup:
		return trigger.ErrDuplicate
	}
	return nil
}

// Working says whether this host's engine holds run id, queued or running
// (trigger.Submitter): a schedule fires on the binding's holder, which is
// the one that runs it, so its overlap check asks the right engine (a run
// still on its way through the stream is not counted yet).
func (c *clusterHost) Working(id string) bool { return c.eng.Working(id) }

// serves says whether this host may fire a schedule of platform and
// channel now (schedule.Options.Serves): it holds the lease of their
// binding and its fence holds, or the platform is this host's own.
func (c *clusterHost) serves(platform, channel string) bool {
	if !c.clustered[platform] {
		return true
	}
	b, ok := c.node.Settings().Route(platform, channel)
	if !ok {
		return true // the engine refuses it, once, as without a cluster
	}
	c.mu.Lock()
	f := c.fences[b]
	c.mu.Unlock()
	return f != nil && f.Check() == nil
}

// setWake names what to tell when a tenure starts; call it before serve.
func (c *clusterHost) setWake(f func()) {
	c.mu.Lock()
	c.wake = f
	c.mu.Unlock()
}

// handler is the engine's ingress as the cluster's handler, noting on the
// host which tenures it serves and waking the schedules of a binding
// taken up.
func (c *clusterHost) handler(ci *engine.ClusterIngress) clusterlink.Handler {
	return clusterlink.Handler{Ingress: ci,
		Started: func(b names.Binding, f *kvlease.Fence) {
			c.mu.Lock()
			c.fences[b] = f
			wake := c.wake
			c.mu.Unlock()
			if wake != nil {
				wake() // the binding's schedules fire here now
			}
		},
		Ended: func(b names.Binding, f *kvlease.Fence) {
			c.mu.Lock()
			if c.fences[b] == f {
				delete(c.fences, b)
			}
			c.mu.Unlock()
		}}
}

// serve consumes every binding this host owns or stands by for. When ctx
// ends (the host stops), nothing more is taken from the stream while the
// engine finishes its running turns within the grace, and close hands the
// bindings over. A drain of this host (`cluster drain`) does the same
// without the engine stopping: running turns get the grace, then the
// bindings are handed over and this host serves none until it restarts.
func (c *clusterHost) serve(ctx context.Context, ci *engine.ClusterIngress) {
	sctx, stop := context.WithCancel(context.Background())
	c.stopServing = stop
	drained, err := c.node.Drained(ctx)
	if err != nil {
		c.log.Warn("Watching for a drain of this host failed; cluster drain cannot reach it", "error", err)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		select {
		case <-ctx.Done():
			c.node.Quiesce() // the engine finishes its turns; close hands over
		case <-drained:
			c.drain(ctx)
		case <-sctx.Done():
		}
	}()
	s := c.node.Settings()
	for _, b := range s.Bindings {
		if _, _, ok := b.Role(s.Host); !ok {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := c.node.ServeBinding(sctx, b.Binding, c.handler(ci)); err != nil && sctx.Err() == nil {
				c.log.Error("Serving a cluster binding stopped", "binding", b.Binding.String(), "error", err)
			}
		}()
	}
}

// drain hands every binding over while the engine runs on: nothing more
// is taken from the stream, running turns get the grace, then what is
// left (a turn the grace cut, unanswered) goes back to the stream for the
// next holder with the leases.
func (c *clusterHost) drain(ctx context.Context) {
	c.node.Quiesce()
	wctx, cancel := context.WithTimeout(ctx, c.grace)
	err := c.eng.WaitIdle(wctx)
	cancel()
	if err != nil {
		c.log.Warn("Drain: running turns did not end within the grace; they go to the bindings' next holders", "grace", c.grace)
	}
	c.stopServing()
	c.log.Info("Drained: this host hands its bindings over and serves none until it restarts")
}

// close ends the serving loops, which hand their bindings over (the
// engine stopped: what it did not finish goes back to the stream, and the
// leases are released for the standbys to take at once), and leaves the
// cluster: the acks of finished turns are flushed.
func (c *clusterHost) close() {
	if c == nil {
		return
	}
	if c.stopServing != nil {
		c.stopServing()
	}
	c.wg.Wait()
	c.node.Close()
}

// prepareClusterAdapters hands each adapter of a registered platform type
// to its clusterPlatformFunc.
func prepareClusterAdapters(ctx context.Context, c *clusterHost, cfg *config.Config, adapters []platform.Adapter, log *slog.Logger) ([]platform.Adapter, error) {
	if c == nil {
		return adapters, nil
	}
	out := make([]platform.Adapter, len(adapters))
	for i, a := range adapters {
		out[i] = a
		p := platformNamed(cfg, a.Name())
		if p == nil {
			continue
		}
		f, ok := clusterPlatforms[p.Type]
		if !ok {
			continue
		}
		na, err := f(ctx, c.node, a, *p, log)
		if err != nil {
			return nil, fmt.Errorf("platforms (%s): %w", p.Name, err)
		}
		out[i] = na
	}
	return out, nil
}

// clusterRoutingKeys are the keys of a binding that decide where its
// events go and who serves them: every host of a cluster must read them
// alike, so a reload holds their changes until a restart. The binding's
// other keys (allow_users, admins, approvers, allow_shell, the agent's
// options) concern only the host that serves it and reload as on a host
// alone.
var clusterRoutingKeys = []string{"platform", "channel", "workspace", "host", "standby"}

// clusterHold returns the config a reload of a cluster host applies, and
// the keys it holds back until a restart: next, except that the [cluster]
// table, the platforms, which bindings exist, and each binding's routing
// keys stay as running has them. Applied by one host alone, a change of
// these would split the bot (another host would route an event to a
// binding this one does not serve, or two would serve one). Without a
// [cluster] table in either config it returns next whole.
func clusterHold(running, next *config.Config, ch config.Changes) (*config.Config, []string) {
	if running.Cluster == nil && next.Cluster == nil {
		return next, nil
	}
	out := *next
	var held []string
	if (running.Cluster == nil) != (next.Cluster == nil) || (running.Cluster != nil && !reflect.DeepEqual(*running.Cluster, *next.Cluster)) {
		out.Cluster, held = running.Cluster, append(held, "cluster")
	}
	if len(ch.PlatformsAdded)+len(ch.PlatformsRemoved)+len(ch.PlatformsChanged) > 0 {
		out.Platforms, held = slices.Clone(running.Platforms), append(held, "platforms")
	}
	out.Bindings = make([]config.Binding, 0, len(running.Bindings))
	for i, was := range running.Bindings {
		j := slices.IndexFunc(next.Bindings, func(b config.Binding) bool { return b.Platform == was.Platform && b.Channel == was.Channel })
		if j < 0 {
			out.Bindings, held = append(out.Bindings, was), append(held, fmt.Sprintf("bindings[%d] (%s/%s removed)", i, was.Platform, was.Channel))
			continue
		}
		b := next.Bindings[j]
		for _, c := range ch.Bindings {
			if c.Platform != b.Platform || c.Channel != b.Channel {
				continue
			}
			for _, k := range c.Keys {
				if slices.Contains(clusterRoutingKeys, k) {
					held = append(held, fmt.Sprintf("bindings[%d].%s", j, k))
				}
			}
		}
		b.Workspace, b.Host, b.Standby = was.Workspace, was.Host, was.Standby
		out.Bindings = append(out.Bindings, b)
	}
	for j, b := range next.Bindings {
		if !slices.ContainsFunc(running.Bindings, func(w config.Binding) bool { return w.Platform == b.Platform && w.Channel == b.Channel }) {
			held = append(held, fmt.Sprintf("bindings[%d] (%s/%s added)", j, b.Platform, b.Channel))
		}
	}
	return &out, held
}

func platformNamed(cfg *config.Config, name string) *config.Platform {
	for i := range cfg.Platforms {
		if cfg.Platforms[i].Name == name {
			return &cfg.Platforms[i]
		}
	}
	return nil
}
