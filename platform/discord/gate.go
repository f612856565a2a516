package discord

import (
	"context"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// In a cluster, every gateway connection of a shard gets every event, so
// two hosts connected would both answer everything. The hosts elect one
// holder per shard through a gate (platform.Gate, a lease): only it opens
// the gateway; the others only call REST (replies, edits, reactions,
// threads, history), which any host may with the token. This adapter is
// one shard (shard 0 of 1): Discord requires more only past 2,500 guilds.
//
// When the tenure ends the connection is closed; the next holder opens
// its own with a new IDENTIFY. Discord sends a new session only what
// happens after it is READY: the events of the gap (from the old
// connection's close to the new READY) are not delivered to anybody. A
// RESUME would replay them, but it needs the old session's id and
// sequence, which discordgo keeps to itself (so only a host that gets the
// shard back resumes, its own session); events queued on the old holder
// when it lost the tenure are still handed on (nobody else has them). So
// a shard that moves loses the messages of the gap: about the lease TTL
// when the holder dies, about a second when it stops (discordgo's close
// waits a second, then the lease is released). The users of those
// messages see no answer and send again.

// runGated holds the gateway through one tenure after another until ctx
// ends.
func (g *gateway) runGated(ctx context.Context) error {
	// The bot's own id is learnt from READY on the holder; the other
	// hosts post and read history, which need it, so they ask REST.
	if err := g.learnSelf(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for {
		g.setStatus(platform.Standby, "another host holds the gateway")
		t, err := g.gate.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			g.state.Refused(err, ErrUnauthorized)
			return fmt.Errorf("discord %s: waiting for the gateway shard: %w", g.cfg.Name, err)
		}
		g.log.Info("Discord gateway on this host")
		tctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-t.Lost():
				cancel()
			case <-tctx.Done():
			}
		}()
		err = g.connect(tctx)
		cancel()
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		g.log.Warn("Discord gateway moved off this host", "error", t.Check())
	}
}

// learnSelf reads the bot's user (GET /users/@me), retrying passing
// failures.
func (g *gateway) learnSelf(ctx context.Context) error {
	return backoff.Retry(ctx, g.wire.backoffMin, g.wire.backoffMax, func() (bool, error) {
		var u *discordgo.User
		err := g.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			u, err = g.wire.session.User("@me", opts...)
			return err
		})
		if err != nil {
			return false, fmt.Errorf("discord %s: reading the bot's user: %w", g.cfg.Name, err)
		}
		g.self.set(u.ID)
		return true, nil
	}, func(err error, attempt int) {
		g.setStatus(platform.TransientDisconnect, err.Error())
		g.log.Warn("Reading the Discord bot's user failed, retrying", "error", err, "attempt", attempt)
	})
}
