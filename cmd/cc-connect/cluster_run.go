package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/cluster/kvlease"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/engine"
	"github.com/cc-connect/cc-connect/platform"
)

// What `run` does with a [cluster] table (docs/cluster.md): join the
// cluster, run every adapter with the cluster's publisher as its handler,
// and consume the bindings this host owns or stands by for into the
// engine. The terminal is this host's own and talks to the engine
// directly, as without a cluster.

// clusterPlatformFunc prepares one platform of a type whose inbound
// connection the cluster must share out (one poller or one gateway shard
// at a time): it gets the node and the adapter, and returns the adapter to
// run (the same one, or one that follows its lease). Platform types
// register theirs in clusterPlatforms; a type without an entry, other than
// Slack (every host opens its own Socket Mode connection) and the
// terminal, is refused in cluster mode.
type clusterPlatformFunc func(ctx context.Context, node *cluster.Node, a platform.Adapter, p config.Platform, log *slog.Logger) (platform.Adapter, error)

// clusterPlatforms are the registered clusterPlatformFuncs, by platform
// type: Telegram's poller lease and Discord's shard lease
// (cluster_pollers.go).
var clusterPlatforms = map[string]clusterPlatformFunc{
	config.TypeTelegram: gateTelegram,
	config.TypeDiscord:  gateDiscord,
}

// checkClusterPlatforms refuses, naming the key, the platforms a cluster
// cannot run in this build.
func checkClusterPlatforms(cfg *config.Config) error {
	if cfg.Cluster == nil {
		return nil
	}
	// Every host reads the same file: each would fire every schedule.
	if len(cfg.Schedules) > 0 {
		return fmt.Errorf("schedules: scheduled runs cannot run in a cluster with this build: every host would fire " +
			"them (docs/cluster.md); run them on a cc-connect outside the cluster")
	}
	if len(cfg.Webhooks.Hooks) > 0 || cfg.Webhooks.Addr != "" {
		return fmt.Errorf("webhooks: webhook runs cannot run in a cluster with this build (docs/cluster.md); " +
			"run them on a cc-connect outside the cluster")
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
	node *cluster.Node
	log  *slog.Logger
	wg   sync.WaitGroup
}

// joinCluster starts the node and joins the engine to it; nil without a
// [cluster] table. Call it before the engine runs; serve starts consuming.
func joinCluster(ctx context.Context, cfg *config.Config, eng *engine.Engine, log *slog.Logger) (*clusterHost, *engine.ClusterIngress, error) {
	s, ok := cluster.FromConfig(cfg)
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
		InStream: node.InStream,
		Status: func(ctx context.Context) (string, error) {
			r, err := node.Status(ctx)
			if err != nil {
				return "", err
			}
			return r.Text(), nil
		},
	})
	return &clusterHost{node: node, log: log}, ci, nil
}

// serve consumes, until ctx ends, every binding this host owns or stands
// by for.
func (c *clusterHost) serve(ctx context.Context, ci *engine.ClusterIngress) {
	s := c.node.Settings()
	for _, b := range s.Bindings {
		if _, _, ok := b.Role(s.Host); !ok {
			continue
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if err := c.node.ServeBinding(ctx, b.Binding, ci); err != nil && ctx.Err() == nil {
				c.log.Error("Serving a cluster binding stopped", "binding", b.Binding.String(), "error", err)
			}
		}()
	}
}

// close waits for the serving loops (their ctx ended) and leaves the
// cluster: the acks of finished turns are flushed, held leases are left to
// expire or to this host's next start.
func (c *clusterHost) close() {
	if c == nil {
		return
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

// clusterHeld names what a reload of a cluster host does not apply: any
// change of the [cluster] table, the bindings or the platforms.
func clusterHeld(running, next *config.Config, ch config.Changes) []string {
	if running.Cluster == nil && next.Cluster == nil {
		return nil
	}
	var held []string
	if (running.Cluster == nil) != (next.Cluster == nil) || (running.Cluster != nil && !reflect.DeepEqual(*running.Cluster, *next.Cluster)) {
		held = append(held, "cluster")
	}
	if len(ch.Bindings) > 0 {
		held = append(held, "bindings")
	}
	if len(ch.PlatformsAdded)+len(ch.PlatformsRemoved)+len(ch.PlatformsChanged) > 0 {
		held = append(held, "platforms")
	}
	return held
}

func platformNamed(cfg *config.Config, name string) *config.Platform {
	for i := range cfg.Platforms {
		if cfg.Platforms[i].Name == name {
			return &cfg.Platforms[i]
		}
	}
	return nil
}
