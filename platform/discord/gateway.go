package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
)

// gateway is the adapter's gateway connection: it checks the token, holds
// the connection open (reopening it with backoff, or only while this host
// holds the shard: gate.go), keeps its state, and hands the events it
// delivers to the engine, in order, on the gateway's reader (events.go).
// It posts nothing: the REST calls it makes go through the wire.
type gateway struct {
	cfg   Config
	log   *slog.Logger
	wire  *wire
	self  *botSelf
	conns *connTracker
	// reader reads messages; buttons reads presses.
	reader  *reader
	buttons *prompts
	state   *connstate.State // for !status and the metrics

	// gate, when set, says when this host holds the bot's gateway shard
	// (a cluster: gate.go).
	gate platform.Gate

	// handler is Run's, called from the gateway's reader (hand); nil
	// when Run is not running. handing counts the calls in flight, which
	// Run waits for before it returns.
	mu           sync.Mutex // guards runCtx and handler
	handler      platform.Handler
	handing      sync.WaitGroup
	disconnected chan struct{}
	runCtx       context.Context // set by Run; event handlers stop with it
}

func (g *gateway) setStatus(s platform.ConnState, detail string) { g.state.Set(s, detail) }

// botSelf is the bot's own user id: learnt from READY, or asked over REST
// on a host that does not hold the gateway (gate.go).
type botSelf struct {
	mu sync.Mutex // guards id
	id string
}

func (b *botSelf) get() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.id
}

// setIfUnknown sets the id unless it was learnt already.
func (b *botSelf) setIfUnknown(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.id == "" {
		b.id = id
	}
}

func (b *botSelf) set(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.id = id
}

// run connects to the gateway and hands messages and button presses to h
// in order until ctx is cancelled, keeping the connection's state.
func (g *gateway) run(ctx context.Context, h platform.Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g.mu.Lock()
	g.runCtx, g.handler = ctx, h
	g.mu.Unlock()
	defer func() {
		cancel()
		g.mu.Lock()
		g.handler = nil
		g.mu.Unlock()
		g.handing.Wait()
	}()
	if g.gate != nil {
		defer g.gate.Close()
	}

	g.setStatus(platform.Connecting, "")
	if err := g.checkToken(ctx); err != nil {
		if ctx.Err() != nil {
			g.setStatus(platform.Stopped, "")
			return nil
		}
		g.state.Refused(err, ErrUnauthorized)
		return err
	}
	var err error
	if g.gate == nil {
		err = g.connect(ctx)
	} else {
		err = g.runGated(ctx)
	}
	if err != nil {
		return err
	}
	g.setStatus(platform.Stopped, "")
	return nil
}

// connect holds the gateway connection open, reopening it when it drops,
// until ctx ends (nil) or the gateway refuses the bot (the error). The
// connection is closed when it returns.
func (g *gateway) connect(ctx context.Context) error {
	g.conns.reset()
	drain(g.disconnected) // a late one of an earlier connection
	// Cutting the connections unblocks an Open waiting for HELLO or READY
	// (it has no context). An open connection is closed by Close instead:
	// cut under it, the library's reader would close the session itself,
	// possibly once a later Open has made a new connection, and close that.
	var opening atomic.Bool
	stopConns := context.AfterFunc(ctx, func() {
		if opening.Load() {
			g.conns.closeAll()
		}
	})
	defer stopConns()
	defer func() {
		g.wire.session.Close()
		g.conns.closeAll()
		drain(g.disconnected)
	}()
	failures := 0
	for ctx.Err() == nil {
		opening.Store(true)
		if ctx.Err() != nil {
			break
		}
		err := g.wire.session.Open()
		opening.Store(false)
		if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			err = nil
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			if fatal := gatewayFatal(err); fatal != nil {
				g.state.Refused(fatal, ErrUnauthorized)
				g.log.Error("Discord gateway refused the bot", "error", fatal)
				return fmt.Errorf("discord %s: %w", g.cfg.Name, fatal)
			}
			failures++
			g.setStatus(platform.TransientDisconnect, err.Error())
			g.log.Warn("Discord gateway connection failed, retrying", "error", err, "attempt", failures)
			_ = backoff.Sleep(ctx, backoff.Delay(failures, g.wire.backoffMin, g.wire.backoffMax))
			continue
		}
		g.conns.opened()
		if failures > 0 {
			g.log.Info("Discord gateway reconnected", "after_failures", failures)
		}
		failures = 0
		g.setStatus(platform.Connected, "")
		select {
		case <-ctx.Done():
		case <-g.disconnected:
			// The library dropped the connection (read error, missed
			// heartbeat ACKs, op 7). Close makes sure it is down and emits
			// one more disconnect event, drained so it cannot cut the next
			// connection short.
			g.wire.session.Close()
			drain(g.disconnected)
			g.setStatus(platform.TransientDisconnect, "connection lost")
			g.log.Warn("Discord gateway connection lost, reconnecting")
			failures = 1
			_ = backoff.Sleep(ctx, backoff.Delay(failures, g.wire.backoffMin, g.wire.backoffMax))
		}
	}
	return nil
}

// checkToken asks /gateway/bot once: it is the one discovery call that
// needs the token, so a wrong token fails here with a clear error instead
// of as a closed gateway.
func (g *gateway) checkToken(ctx context.Context) error {
	return backoff.Retry(ctx, g.wire.backoffMin, g.wire.backoffMax, func() (bool, error) {
		var gb *discordgo.GatewayBotResponse
		err := g.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			gb, err = g.wire.session.GatewayBot(opts...)
			return err
		})
		if err == nil {
			g.log.Debug("Discord gateway discovered", "shards", gb.Shards, "session_starts_left", gb.SessionStartLimit.Remaining)
			return true, nil
		}
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return true, fmt.Errorf("discord %s: %w", g.cfg.Name, ErrUnauthorized)
		}
		return false, err
	}, func(err error, attempt int) {
		g.setStatus(platform.TransientDisconnect, err.Error())
		g.log.Warn("Discord gateway discovery failed, retrying", "error", err, "attempt", attempt)
	})
}

// gatewayFatal maps the gateway close codes that no reconnect can fix.
func gatewayFatal(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case 4004:
		return ErrUnauthorized
	case 4013, 4014:
		return ErrIntentsDisallowed
	}
	return nil
}

// hand runs ev, which hands an event to Run's handler, on the gateway's
// reader: events reach the engine in the order Discord sent them, and the
// engine's accept path (dedupe, journal, return) is quick. Once Run is
// stopping nothing more is handed over; what comes then is dropped, as
// the gateway's events are not acknowledged one by one.
func (g *gateway) hand(ev func(context.Context, platform.Handler)) {
	g.mu.Lock()
	ctx, h := g.runCtx, g.handler
	if h == nil || ctx.Err() != nil {
		g.mu.Unlock()
		return
	}
	g.handing.Add(1) // under mu, so before Run's Wait
	g.mu.Unlock()
	defer g.handing.Done()
	ev(ctx, h)
}

func (g *gateway) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User == nil {
		return
	}
	g.self.set(r.User.ID)
	g.log.Info("Discord bot connected", "bot", r.User.Username, "guilds", len(r.Guilds))
}

func (g *gateway) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	select {
	case g.disconnected <- struct{}{}:
	default:
	}
}

func drain(c chan struct{}) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
