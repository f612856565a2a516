// Package discord is the Discord adapter: it holds a gateway connection
// (guild messages, direct messages, message content), turns messages in
// channels, threads and DMs into platform.Message values, and renders
// replies (split under 2,000 characters), progress edits, typing, reactions
// and permission buttons through the REST API. It owns nothing but the
// Discord wire: routing, access control and Claude Code belong to the
// engine.
package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// Type is the platform type name used in config and in platform.Message.
const Type = "discord"

// Intents are the gateway intents cc-connect asks for. MessageContent is
// privileged: it must be enabled for the bot in the developer portal, or
// Discord closes the gateway with 4014.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// Sentinel errors Run returns: no retry can fix them, the admin must.
var (
	// ErrUnauthorized means Discord refused the token.
	ErrUnauthorized = errors.New("discord refused the bot token (check platforms token)")
	// ErrIntentsDisallowed means the MESSAGE_CONTENT intent is not enabled
	// for the bot in the developer portal (gateway close code 4014).
	ErrIntentsDisallowed = errors.New("discord refused the gateway intents: enable MESSAGE CONTENT INTENT for the bot in the developer portal")
)

// Config configures one Discord bot.
type Config struct {
	// Name is the instance name from `[[platforms]] name`; it becomes
	// Target.Platform.
	Name string
	// Token is the bot token from the developer portal (without "Bot ").
	// Secret: never logged.
	Token string
	// APIURL replaces https://discord.com for REST calls and gateway
	// discovery (a proxy or a test server). Empty means Discord itself.
	APIURL string
	// ThreadPerMessage opens a thread for each top-level channel message the
	// bot answers, so each becomes its own session; without it a channel
	// is one session and existing threads are sessions of their own.
	ThreadPerMessage bool
	// EditInterval is the least time between two edits in one channel
	// (Discord's bucket is about five edits per five seconds a channel);
	// edits of a message in between are coalesced, latest wins. Zero
	// means 1s.
	EditInterval time.Duration
}

// Adapter is a running (or ready to run) Discord bot.
type Adapter struct {
	cfg        Config
	log        *slog.Logger
	httpClient *http.Client
	conns      *connTracker
	session    *discordgo.Session

	// Durations kept in fields so tests can shrink them.
	requestTimeout time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration

	edits *coalesce.Coalescer
	// interactions are the button presses answered lately, each once.
	interactions *recent.Map[struct{}]
	// prompts remembers recent prompts by message id; promptRefs maps
	// their buttons back to request ids.
	prompts    *recent.Map[postedPrompt]
	promptRefs *permbutton.Refs
	// replies posts and edits turns' replies (reply.go).
	replies *replykit.Kit
	threads *threadBook

	// handler is Run's, called from the gateway's reader (hand); nil
	// when Run is not running. handing counts the calls in flight, which
	// Run waits for before it returns.
	handler      platform.Handler
	handing      sync.WaitGroup
	disconnected chan struct{}
	runCtx       context.Context // set by Run; event handlers stop with it

	state *connstate.State // for !status and the metrics

	// gate, when set, says when this host holds the bot's gateway shard
	// (a cluster: gate.go).
	gate platform.Gate

	mu     sync.Mutex // guards selfID, runCtx and handler
	selfID string
}

var (
	_ platform.Adapter  = (*Adapter)(nil)
	_ platform.Editor   = (*Adapter)(nil)
	_ platform.Reactor  = (*Adapter)(nil)
	_ platform.Typer    = (*Adapter)(nil)
	_ platform.Prompter = (*Adapter)(nil)
	_ platform.Statuser = (*Adapter)(nil)
	_ platform.Observed = (*Adapter)(nil)

	_ platform.MentionSender = (*Adapter)(nil)
)

// New validates cfg and prepares a session. It makes no network call.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("discord: name is required")
	}
	token := strings.TrimSpace(strings.TrimPrefix(cfg.Token, "Bot "))
	if token == "" {
		return nil, fmt.Errorf("discord %s: token is required", cfg.Name)
	}
	cfg.Token = token
	var base *url.URL
	if cfg.APIURL != "" {
		u, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord %s: api_url %q is not an http(s) URL", cfg.Name, cfg.APIURL)
		}
		base = u
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = platform.DefaultEditInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	transport := &rewriteTransport{base: base, next: http.DefaultTransport}
	a := &Adapter{
		cfg:            cfg,
		log:            log.With("platform", cfg.Name),
		httpClient:     &http.Client{Transport: transport},
		conns:          newConnTracker(),
		requestTimeout: 30 * time.Second,
		backoffMin:     time.Second,
		backoffMax:     2 * time.Minute,
		edits:          coalesce.New(coalesce.NewInterval(cfg.EditInterval)),
		interactions:   recent.New[struct{}](4096),
		prompts:        recent.New[postedPrompt](1024),
		promptRefs:     permbutton.NewRefs(maxCustomID, 1024),
		threads:        newThreadBook(4096),
		state:          connstate.New(cfg.Name),
		disconnected:   make(chan struct{}, 1),
		runCtx:         context.Background(),
	}
	a.replies = replykit.New(cfg.Name, replyWire{a}, a.log)
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord %s: %w", cfg.Name, err)
	}
	// REST calls carry ctx; the timeout bounds the few the library makes
	// without one (gateway discovery inside Open). Downloads use
	// httpClient, bounded by their ctx only.
	s.Client = &http.Client{Transport: transport, Timeout: time.Minute}
	s.Dialer = &websocket.Dialer{NetDialContext: a.conns.dial, HandshakeTimeout: 30 * time.Second, Proxy: http.ProxyFromEnvironment}
	s.Identify.Intents = Intents
	// Rate limits come back as errors that rest() waits out under ctx
	// (retryPolicy); the library's own retry sleeps without any way to
	// cancel it.
	s.ShouldRetryOnRateLimit = false
	// Reconnecting is Run's job, with capped backoff and status reporting;
	// the library's loop would outlive Run.
	s.ShouldReconnectOnError = false
	// Handlers run on the gateway reader, in order: each hands its event
	// to the engine and returns, so that the engine gets a conversation's
	// messages in the order Discord sent them.
	s.SyncEvents = true
	s.LogLevel = -1 // the library logs gateway URLs and payloads; we log ourselves
	s.AddHandler(a.onReady)
	s.AddHandler(a.onMessageCreate)
	s.AddHandler(a.onInteractionCreate)
	s.AddHandler(a.onDisconnect)
	a.session = s
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the gateway state for !status.
func (a *Adapter) Status() platform.ConnStatus { return a.state.Get() }

func (a *Adapter) setStatus(s platform.ConnState, detail string) { a.state.Set(s, detail) }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.state.SetObserver(o) }

func (a *Adapter) self() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.selfID
}

// Run connects to the gateway and hands messages and button presses to h
// in order until ctx is cancelled. A dropped connection is reopened
// (resuming the session when Discord allows) with capped, jittered backoff
// and reported through Status and the log; a refused token or intents end
// Run with an error.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a.mu.Lock()
	a.runCtx, a.handler = ctx, h
	a.mu.Unlock()
	defer func() {
		cancel()
		a.mu.Lock()
		a.handler = nil
		a.mu.Unlock()
		a.handing.Wait()
	}()
	if a.gate != nil {
		defer a.gate.Close()
	}

	a.setStatus(platform.Connecting, "")
	if err := a.checkToken(ctx); err != nil {
		if ctx.Err() != nil {
			a.setStatus(platform.Stopped, "")
			return nil
		}
		a.setStatus(refusal(err), err.Error())
		return err
	}
	var err error
	if a.gate == nil {
		err = a.connect(ctx)
	} else {
		err = a.runGated(ctx)
	}
	if err != nil {
		return err
	}
	a.setStatus(platform.Stopped, "")
	return nil
}

// connect holds the gateway connection open, reopening it when it drops,
// until ctx ends (nil) or the gateway refuses the bot (the error). The
// connection is closed when it returns.
func (a *Adapter) connect(ctx context.Context) error {
	a.conns.reset()
	drain(a.disconnected) // a late one of an earlier connection
	// Cutting the connections unblocks an Open waiting for HELLO or READY
	// (it has no context). An open connection is closed by Close instead:
	// cut under it, the library's reader would close the session itself,
	// possibly once a later Open has made a new connection, and close that.
	var opening atomic.Bool
	stopConns := context.AfterFunc(ctx, func() {
		if opening.Load() {
			a.conns.closeAll()
		}
	})
	defer stopConns()
	defer func() {
		a.session.Close()
		a.conns.closeAll()
		drain(a.disconnected)
	}()
	failures := 0
	for ctx.Err() == nil {
		opening.Store(true)
		if ctx.Err() != nil {
			break
		}
		err := a.session.Open()
		opening.Store(false)
		if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
			err = nil
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			if fatal := gatewayFatal(err); fatal != nil {
				a.setStatus(refusal(fatal), fatal.Error())
				a.log.Error("Discord gateway refused the bot", "error", fatal)
				return fmt.Errorf("discord %s: %w", a.cfg.Name, fatal)
			}
			failures++
			a.setStatus(platform.TransientDisconnect, err.Error())
			a.log.Warn("Discord gateway connection failed, retrying", "error", err, "attempt", failures)
			_ = backoff.Sleep(ctx, backoff.Delay(failures, a.backoffMin, a.backoffMax))
			continue
		}
		a.conns.opened()
		if failures > 0 {
			a.log.Info("Discord gateway reconnected", "after_failures", failures)
		}
		failures = 0
		a.setStatus(platform.Connected, "")
		select {
		case <-ctx.Done():
		case <-a.disconnected:
			// The library dropped the connection (read error, missed
			// heartbeat ACKs, op 7). Close makes sure it is down and emits
			// one more disconnect event, drained so it cannot cut the next
			// connection short.
			a.session.Close()
			drain(a.disconnected)
			a.setStatus(platform.TransientDisconnect, "connection lost")
			a.log.Warn("Discord gateway connection lost, reconnecting")
			failures = 1
			_ = backoff.Sleep(ctx, backoff.Delay(failures, a.backoffMin, a.backoffMax))
		}
	}
	return nil
}

// checkToken asks /gateway/bot once: it is the one discovery call that
// needs the token, so a wrong token fails here with a clear error instead
// of as a closed gateway.
func (a *Adapter) checkToken(ctx context.Context) error {
	return backoff.Retry(ctx, a.backoffMin, a.backoffMax, func() (bool, error) {
		var gb *discordgo.GatewayBotResponse
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			var err error
			gb, err = a.session.GatewayBot(opts...)
			return err
		})
		if err == nil {
			a.log.Debug("Discord gateway discovered", "shards", gb.Shards, "session_starts_left", gb.SessionStartLimit.Remaining)
			return true, nil
		}
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized {
			return true, fmt.Errorf("discord %s: %w", a.cfg.Name, ErrUnauthorized)
		}
		return false, err
	}, func(err error, attempt int) {
		a.setStatus(platform.TransientDisconnect, err.Error())
		a.log.Warn("Discord gateway discovery failed, retrying", "error", err, "attempt", attempt)
	})
}

// refusal is the state for an error no reconnect fixes: a refused token
// is bad credentials, anything else (the intents, the cluster's gate) a
// failure the admin must look at.
func refusal(err error) platform.ConnState {
	if errors.Is(err, ErrUnauthorized) {
		return platform.BadCredentials
	}
	return platform.Failing
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
func (a *Adapter) hand(ev func(context.Context, platform.Handler)) {
	a.mu.Lock()
	ctx, h := a.runCtx, a.handler
	if h == nil || ctx.Err() != nil {
		a.mu.Unlock()
		return
	}
	a.handing.Add(1) // under mu, so before Run's Wait
	a.mu.Unlock()
	defer a.handing.Done()
	ev(ctx, h)
}

func (a *Adapter) onReady(_ *discordgo.Session, r *discordgo.Ready) {
	if r.User == nil {
		return
	}
	a.mu.Lock()
	a.selfID = r.User.ID
	a.mu.Unlock()
	a.log.Info("Discord bot connected", "bot", r.User.Username, "guilds", len(r.Guilds))
}

func (a *Adapter) onDisconnect(_ *discordgo.Session, _ *discordgo.Disconnect) {
	select {
	case a.disconnected <- struct{}{}:
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
