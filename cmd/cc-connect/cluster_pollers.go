package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/cc-connect/cc-connect/cluster"
	"github.com/cc-connect/cc-connect/config"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/discord"
	"github.com/cc-connect/cc-connect/platform/slack"
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

// A host outside cluster.receivers receives nothing from the platforms:
// its NATS user may publish events only for the bindings it serves. Its
// Telegram and Discord gates never open (cluster.Gate); its Slack adapter
// opens no Socket Mode connection (Slack would spread envelopes over it
// that it could not publish) and still sends replies, edits, reactions and
// buttons through the Web API.

// slackSendOnly is a Slack adapter that does not receive: Run waits
// until ctx ends; everything else is the adapter's.
type slackSendOnly struct{ *slack.Adapter }

var (
	_ platform.Adapter  = slackSendOnly{}
	_ platform.Editor   = slackSendOnly{}
	_ platform.Reactor  = slackSendOnly{}
	_ platform.Prompter = slackSendOnly{}
	_ platform.Statuser = slackSendOnly{}
)

// Run receives nothing.
func (a slackSendOnly) Run(ctx context.Context, _ platform.Handler) error {
	<-ctx.Done()
	return nil
}

// Status says why it does not connect.
func (a slackSendOnly) Status() platform.ConnStatus {
	return platform.ConnStatus{State: platform.Standby, Detail: "this host does not receive (cluster.receivers); it sends through the Web API"}
}

// sendOnlySlack makes a Slack adapter of a host outside cluster.receivers
// send only; a receiver's runs as it is.
func sendOnlySlack(_ context.Context, node *cluster.Node, a platform.Adapter, p config.Platform, log *slog.Logger) (platform.Adapter, error) {
	s := node.Settings()
	if s.Receives(s.Host) {
		return a, nil
	}
	sa, ok := a.(*slack.Adapter)
	if !ok {
		return nil, fmt.Errorf("a %s platform whose adapter is %T", p.Type, a)
	}
	log.Info("Slack: this host does not receive (cluster.receivers); no Socket Mode connection, replies through the Web API",
		"platform", sa.Name())
	return slackSendOnly{sa}, nil
}
