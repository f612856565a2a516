package main

import (
	"log/slog"

	"github.com/cc-connect/cc-connect/cluster"
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

// gateReceivers gives each Telegram adapter its poller gate and each
// Discord adapter its shard gate. Call it once the node is started and the
// adapters are built, before any adapter runs; an adapter stopping
// releases its lease (the next host takes over at once), and Node.Close
// ends every claim. It returns the names of the adapters it gated.
func gateReceivers(node *cluster.Node, adapters []platform.Adapter, log *slog.Logger) []string {
	var gated []string
	for _, ad := range adapters {
		switch a := ad.(type) {
		case *telegram.Adapter:
			g := node.PollerGate(a.Name())
			a.SetGate(g)
			log.Info("Telegram polls from one host at a time", "platform", a.Name(), "lease", g.Key())
		case *discord.Adapter:
			g := node.ShardGate(a.Name(), 0)
			a.SetGate(g)
			log.Info("Discord's gateway is held by one host at a time", "platform", a.Name(), "lease", g.Key())
		default:
			continue
		}
		gated = append(gated, ad.Name())
	}
	return gated
}
