package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/discord"
	"github.com/cc-connect/cc-connect/platform/telegram"
)

// In a cluster the platforms that allow one receiver get a gate (a lease
// in the cluster's bucket) so that one host receives and the others only
// send: Telegram's getUpdates poller (lease.poller.<platform>, with its
// offset in offset.<platform>) and Discord's gateway shard
// (lease.shard.<platform>.0). Slack needs none: every host opens its own
// Socket Mode connection and the ingress stream drops the duplicates.
// What a receiver hands on goes to the handler the adapter runs with,
// which in a cluster publishes to the ingress stream and returns once the
// stream acknowledged it: Telegram stores its offset only past what that
// handler took.
//
// Each function below prepares one adapter: call it once the node is
// started and the adapter built, before the adapter runs, and run the
// adapter it returns (the same one, gated). An adapter that stops releases
// its lease, so the next host takes over at once; Node.Close ends every
// claim.

// gateTelegram makes a Telegram adapter poll only while this host holds
// the platform's poller lease.
func gateTelegram(_ context.Context, node *cluster.Node, a platform.Adapter, p config.Platform, log *slog.Logger) (platform.Adapter, error) {
	tg, ok := a.(*telegram.Adapter)
	if !ok {
		return nil, fmt.Errorf("a %s platform whose adapter is %T", p.Type, a)
	}
	g := node.PollerGate(tg.Name())
	tg.SetGate(g)
	log.Info("Telegram polls from one cluster host at a time", "platform", tg.Name(), "lease", g.Key())
	return tg, nil
}

// gateDiscord makes a Discord adapter open the gateway only while this
// host holds the platform's shard lease (shard 0: the adapter is one
// shard).
func gateDiscord(_ context.Context, node *cluster.Node, a platform.Adapter, p config.Platform, log *slog.Logger) (platform.Adapter, error) {
	dc, ok := a.(*discord.Adapter)
	if !ok {
		return nil, fmt.Errorf("a %s platform whose adapter is %T", p.Type, a)
	}
	g := node.ShardGate(dc.Name(), 0)
	dc.SetGate(g)
	log.Info("Discord's gateway is held by one cluster host at a time", "platform", dc.Name(), "lease", g.Key())
	return dc, nil
}
