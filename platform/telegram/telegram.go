// Package telegram is the Telegram adapter: it long-polls the Bot API,
// turns private, group, supergroup and forum-topic messages into
// platform.Message values, and renders replies (Telegram HTML, split under
// 4,096 characters), progress edits, typing and permission buttons. It owns
// nothing but the Telegram wire: routing, access control and Claude Code
// belong to the engine.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
	"github.com/cc-connect/cc-connect/platform/internal/seenlog"
)

// Type is the platform type name used in config and in platform.Message.
const Type = "telegram"

// DefaultAPIURL is Telegram's hosted Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// Config configures one Telegram bot.
type Config struct {
	// Name is the instance name from `[[platforms]] name`; it becomes
	// Target.Platform.
	Name string
	// Token is the bot token from @BotFather ("123456:ABC-..."). Secret: it
	// is part of every Bot API URL and is never logged.
	Token string
	// APIURL is the Bot API base URL. Empty means https://api.telegram.org;
	// set it to use a local Bot API server (e.g. "http://127.0.0.1:8081").
	APIURL string
	// PollTimeout is the long-poll timeout of getUpdates. Zero means 30s.
	PollTimeout time.Duration
	// EditInterval is the least time between two edits in one private
	// chat, three times it in a group (Telegram's flood control); edits of
	// a message in between are coalesced, latest wins. Zero means 1s.
	EditInterval time.Duration
}

// Adapter is a running (or ready to run) Telegram bot.
type Adapter struct {
	cfg        Config
	log        *slog.Logger
	apiURL     string
	httpClient *http.Client
	base       *tgbotapi.BotAPI

	// Durations kept in fields so tests can shrink them.
	requestTimeout      time.Duration
	retryAfterUnit      time.Duration
	backoffMin          time.Duration
	backoffMax          time.Duration
	maxTransientRetries int
	// retryPause is how long polling waits before it asks again for an
	// update the handler did not take.
	retryPause time.Duration

	edits      *coalesce.Coalescer
	prompts    *recent.Map[string] // "chat:message" -> prompt HTML, shown again with the outcome
	promptRefs *permbutton.Refs
	// replies posts and edits turns' replies (reply.go).
	replies *replykit.Kit
	// reactions remembers the one reaction the bot holds on each message
	// ("chat:message" -> name): Telegram gives a bot a single reaction per
	// message, so a new one replaces the old, and removing a reaction that
	// was already replaced must not clear its successor.
	reactions *recent.Map[string]
	// history is what the bot saw and posted, for History (history.go).
	history *seenlog.Log

	state *connstate.State // for !status and the metrics

	// gate, when set, says when this host is the bot's one poller (a
	// cluster: gate.go).
	gate platform.Gate

	mu   sync.Mutex // guards self
	self tgbotapi.User
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

// New validates cfg and returns an adapter. It makes no network call: the
// token is checked when Run starts.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("telegram: name is required")
	}
	if cfg.Token == "" {
		return nil, fmt.Errorf("telegram %s: token is required", cfg.Name)
	}
	if !strings.Contains(cfg.Token, ":") || strings.ContainsAny(cfg.Token, "/ \t\n") {
		return nil, fmt.Errorf("telegram %s: token does not look like a BotFather token (\"<bot id>:<secret>\")", cfg.Name)
	}
	apiURL := strings.TrimRight(cfg.APIURL, "/")
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram %s: api_url %q is not an http(s) URL", cfg.Name, cfg.APIURL)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = platform.DefaultEditInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := &http.Client{}
	// Built by hand rather than with tgbotapi.NewBotAPI, which calls getMe:
	// a constructor must not touch the network.
	base := &tgbotapi.BotAPI{Token: cfg.Token, Client: client}
	base.SetAPIEndpoint(apiURL + "/bot%s/%s")
	a := &Adapter{
		cfg:                 cfg,
		log:                 log.With("platform", cfg.Name),
		apiURL:              apiURL,
		httpClient:          client,
		base:                base,
		requestTimeout:      60 * time.Second,
		retryAfterUnit:      time.Second,
		backoffMin:          time.Second,
		backoffMax:          time.Minute,
		maxTransientRetries: 3,
		retryPause:          defaultRetryPause,
		edits:               coalesce.New(coalesce.NewScopedInterval(editSpacing(cfg.EditInterval))),
		prompts:             recent.New[string](1024),
		promptRefs:          permbutton.NewRefs(maxCallbackData, 1024),
		reactions:           recent.New[string](4096),
		history:             seenlog.New(historyConversations, historyPerChat),
		state:               connstate.New(cfg.Name),
	}
	a.replies = replykit.New(cfg.Name, replyWire{a}, a.log)
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the polling state for !status.
func (a *Adapter) Status() platform.ConnStatus { return a.state.Get() }

func (a *Adapter) setStatus(s platform.ConnState, detail string) { a.state.Set(s, detail) }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.state.SetObserver(o) }

func (a *Adapter) botUser() tgbotapi.User {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.self
}

// Run checks the token (getMe), then long-polls getUpdates until ctx is
// cancelled, handing messages and button presses to h in order (with a
// gate, only while this host is the bot's poller: gate.go). Polling
// trouble is retried with capped, jittered backoff and reported through
// Status and the log; only a refused token ends Run with an error.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if a.gate != nil {
		defer a.gate.Close()
	}
	a.setStatus(platform.Connecting, "")
	if err := a.identify(ctx); err != nil {
		if ctx.Err() != nil {
			a.setStatus(platform.Stopped, "")
			return nil
		}
		a.setStatus(refusal(err), err.Error())
		return err
	}
	a.setStatus(platform.Connected, "")
	a.log.Info("Telegram bot connected", "bot", "@"+a.botUser().UserName)

	var err error
	if a.gate == nil {
		err = a.poll(ctx, h, 0, nil)
	} else {
		err = a.runGated(ctx, h)
	}
	if err != nil {
		return err
	}
	a.setStatus(platform.Stopped, "")
	return nil
}

// poll long-polls getUpdates from offset until ctx ends (nil), the token
// is refused, or before, called with the offset before each getUpdates,
// fails (its error is returned). It hands the updates to h itself, in
// order, and confirms only those h returned for (poll.go).
func (a *Adapter) poll(ctx context.Context, h platform.Handler, offset int, before func(ctx context.Context, offset int) error) error {
	// The answers to button presses (answerCallbackQuery) go out on
	// goroutines of their own, waited for here.
	var answers sync.WaitGroup
	defer answers.Wait()
	failures := 0
	for ctx.Err() == nil {
		if before != nil {
			if err := before(ctx, offset); err != nil {
				return err
			}
		}
		timeout := a.cfg.PollTimeout
		raw, err := a.request(ctx, "getUpdates", tgbotapi.Params{
			"offset":          strconv.Itoa(offset),
			"timeout":         strconv.Itoa(int(timeout / time.Second)),
			"allowed_updates": `["message","callback_query"]`,
		}, timeout+a.requestTimeout, 0)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, ErrUnauthorized) {
				// The token was revoked while running: no retry helps.
				a.setStatus(platform.BadCredentials, ErrUnauthorized.Error())
				return fmt.Errorf("telegram %s: %w", a.cfg.Name, ErrUnauthorized)
			}
			failures++
			a.reportPollError(err, failures)
			if err := backoff.Sleep(ctx, backoff.Delay(failures, a.backoffMin, a.backoffMax)); err != nil {
				break
			}
			continue
		}
		if failures > 0 {
			a.log.Info("Telegram polling recovered", "after_failures", failures)
			failures = 0
			a.setStatus(platform.Connected, "")
		}
		var updates []json.RawMessage
		if err := json.Unmarshal(raw, &updates); err != nil {
			a.log.Warn("Telegram getUpdates answer not understood", "error", err)
			continue
		}
		var ok bool
		if offset, ok = a.handUpdates(ctx, h, &answers, updates, offset); !ok {
			// The handler did not take an update: it comes again, with
			// the ones after it, from the next getUpdates.
			if backoff.Sleep(ctx, a.retryPause) != nil {
				break
			}
		}
	}
	return nil
}

// identify calls getMe until it succeeds, the token is refused, or ctx ends.
func (a *Adapter) identify(ctx context.Context) error {
	return backoff.Retry(ctx, a.backoffMin, a.backoffMax, func() (bool, error) {
		raw, err := a.request(ctx, "getMe", nil, a.requestTimeout, 0)
		if errors.Is(err, ErrUnauthorized) {
			return true, fmt.Errorf("telegram %s: %w", a.cfg.Name, ErrUnauthorized)
		}
		if err != nil {
			return false, err
		}
		var me tgbotapi.User
		if err := json.Unmarshal(raw, &me); err != nil {
			return true, fmt.Errorf("telegram getMe: decoding: %w", err)
		}
		a.mu.Lock()
		a.self = me
		a.mu.Unlock()
		return true, nil
	}, func(err error, attempt int) {
		a.setStatus(platform.TransientDisconnect, err.Error())
		a.log.Warn("Telegram getMe failed, retrying", "error", err, "attempt", attempt)
	})
}

// refusal is the state for an error no retry fixes: a refused token is
// bad credentials, anything else (the cluster's gate, an answer that does
// not decode) a failure the admin must look at.
func refusal(err error) platform.ConnState {
	if errors.Is(err, ErrUnauthorized) {
		return platform.BadCredentials
	}
	return platform.Failing
}

func (a *Adapter) reportPollError(err error, failures int) {
	switch {
	case errors.Is(err, ErrConflict):
		a.setStatus(platform.Failing, ErrConflict.Error())
		if failures == 1 {
			a.log.Error("Telegram polling conflict: another process is polling this bot token; stop it or use another bot", "error", err)
		}
	case errors.Is(err, ErrWebhookActive):
		a.setStatus(platform.Failing, ErrWebhookActive.Error())
		if failures == 1 {
			a.log.Error("Telegram polling refused: a webhook is set for this bot token", "error", err)
		}
	default:
		a.setStatus(platform.TransientDisconnect, err.Error())
		a.log.Warn("Telegram polling failed, retrying", "error", err, "attempt", failures)
	}
}
