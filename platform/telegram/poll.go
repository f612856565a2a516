package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
)

// poller is the adapter's connection to Telegram: it checks the token,
// long-polls getUpdates (or only while this host is the bot's poller:
// gate.go), keeps the connection's state, and hands the updates to the
// engine in order (events.go). It posts nothing: its Bot API calls go
// through api.
type poller struct {
	cfg  Config
	log  *slog.Logger
	api  *api
	self *botSelf
	seen *seen // notes each message received, for History
	// norm reads messages; buttons reads presses.
	norm    normalizer
	buttons *prompts
	state   *connstate.State // for !status and the metrics

	// gate, when set, says when this host is the bot's one poller (a
	// cluster: gate.go).
	gate platform.Gate
	// retryPause is how long polling waits before it asks again for an
	// update the handler did not take.
	retryPause time.Duration
}

func (p *poller) setStatus(s platform.ConnState, detail string) { p.state.Set(s, detail) }

// botSelf is the bot's own user, learnt from getMe.
type botSelf struct {
	mu   sync.Mutex // guards user
	user tgbotapi.User
}

func (b *botSelf) get() tgbotapi.User {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.user
}

func (b *botSelf) set(u tgbotapi.User) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.user = u
}

// run checks the token (getMe), then long-polls getUpdates until ctx is
// cancelled, handing messages and button presses to h in order, keeping
// the connection's state.
func (p *poller) run(ctx context.Context, h platform.Handler) error {
	if p.gate != nil {
		defer p.gate.Close()
	}
	p.setStatus(platform.Connecting, "")
	if err := p.identify(ctx); err != nil {
		if ctx.Err() != nil {
			p.setStatus(platform.Stopped, "")
			return nil
		}
		p.state.Refused(err, ErrUnauthorized)
		return err
	}
	p.setStatus(platform.Connected, "")
	p.log.Info("Telegram bot connected", "bot", "@"+p.self.get().UserName)

	var err error
	if p.gate == nil {
		err = p.poll(ctx, h, 0, nil)
	} else {
		err = p.runGated(ctx, h)
	}
	if err != nil {
		return err
	}
	p.setStatus(platform.Stopped, "")
	return nil
}

// poll long-polls getUpdates from offset until ctx ends (nil), the token
// is refused, or before, called with the offset before each getUpdates,
// fails (its error is returned). It hands the updates to h itself, in
// order, and confirms only those h returned for (poll.go).
func (p *poller) poll(ctx context.Context, h platform.Handler, offset int, before func(ctx context.Context, offset int) error) error {
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
		timeout := p.cfg.PollTimeout
		raw, err := p.api.request(ctx, "getUpdates", tgbotapi.Params{
			"offset":          strconv.Itoa(offset),
			"timeout":         strconv.Itoa(int(timeout / time.Second)),
			"allowed_updates": `["message","callback_query"]`,
		}, timeout+p.api.requestTimeout, 0)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, ErrUnauthorized) {
				// The token was revoked while running: no retry helps.
				p.setStatus(platform.BadCredentials, ErrUnauthorized.Error())
				return fmt.Errorf("telegram %s: %w", p.cfg.Name, ErrUnauthorized)
			}
			failures++
			p.reportPollError(err, failures)
			if err := backoff.Sleep(ctx, backoff.Delay(failures, p.api.backoffMin, p.api.backoffMax)); err != nil {
				break
			}
			continue
		}
		if failures > 0 {
			p.log.Info("Telegram polling recovered", "after_failures", failures)
			failures = 0
			p.setStatus(platform.Connected, "")
		}
		var updates []json.RawMessage
		if err := json.Unmarshal(raw, &updates); err != nil {
			p.log.Warn("Telegram getUpdates answer not understood", "error", err)
			continue
		}
		var ok bool
		if offset, ok = p.handUpdates(ctx, h, &answers, updates, offset); !ok {
			// The handler did not take an update: it comes again, with
			// the ones after it, from the next getUpdates.
			if backoff.Sleep(ctx, p.retryPause) != nil {
				break
			}
		}
	}
	return nil
}

// identify calls getMe until it succeeds, the token is refused, or ctx ends.
func (p *poller) identify(ctx context.Context) error {
	return backoff.Retry(ctx, p.api.backoffMin, p.api.backoffMax, func() (bool, error) {
		raw, err := p.api.request(ctx, "getMe", nil, p.api.requestTimeout, 0)
		if errors.Is(err, ErrUnauthorized) {
			return true, fmt.Errorf("telegram %s: %w", p.cfg.Name, ErrUnauthorized)
		}
		if err != nil {
			return false, err
		}
		var me tgbotapi.User
		if err := json.Unmarshal(raw, &me); err != nil {
			return true, fmt.Errorf("telegram getMe: decoding: %w", err)
		}
		p.self.set(me)
		return true, nil
	}, func(err error, attempt int) {
		p.setStatus(platform.TransientDisconnect, err.Error())
		p.log.Warn("Telegram getMe failed, retrying", "error", err, "attempt", attempt)
	})
}

func (p *poller) reportPollError(err error, failures int) {
	switch {
	case errors.Is(err, ErrConflict):
		p.setStatus(platform.Failing, ErrConflict.Error())
		if failures == 1 {
			p.log.Error("Telegram polling conflict: another process is polling this bot token; stop it or use another bot", "error", err)
		}
	case errors.Is(err, ErrWebhookActive):
		p.setStatus(platform.Failing, ErrWebhookActive.Error())
		if failures == 1 {
			p.log.Error("Telegram polling refused: a webhook is set for this bot token", "error", err)
		}
	default:
		p.setStatus(platform.TransientDisconnect, err.Error())
		p.log.Warn("Telegram polling failed, retrying", "error", err, "attempt", failures)
	}
}

// Telegram confirms updates by offset: a getUpdates with offset n drops
// every update below n for good. The poll loop hands each update to the
// handler itself, in the order Telegram sent them (the handler does only
// what durability needs: it journals a message with one fsync and
// returns, and the conversation's own goroutine does the rest), and asks
// next from one past the last update the handler returned for: an update
// is confirmed only once the handler has returned for it and for every
// update before it, so that a crash loses nothing that was not handed
// over. An update the handler did not take (HandleMessage failed) stops
// the batch: it is asked for again, with the updates after it, after a
// pause (retryPause), and handed over again.

// defaultRetryPause is how long polling waits before it asks again for
// an update the handler did not take.
const defaultRetryPause = 500 * time.Millisecond

// handUpdates hands each update at or past offset to h, in order, and
// returns the offset that confirms those h returned for; ok is false when
// h did not take one (the offset stays at it, and the updates after it
// are not handed over).
func (p *poller) handUpdates(ctx context.Context, h platform.Handler, answers *sync.WaitGroup, updates []json.RawMessage, offset int) (next int, ok bool) {
	for _, raw := range updates {
		var head struct {
			UpdateID *int `json:"update_id"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.UpdateID == nil {
			// Without an id it cannot be confirmed by itself: the next
			// update's confirms it.
			p.log.Warn("Telegram update without an id", "error", err)
			continue
		}
		id := *head.UpdateID
		if id < offset {
			continue // confirmed already (by an earlier poller, in a cluster)
		}
		if ctx.Err() != nil || !p.handUpdate(ctx, h, answers, raw) {
			return offset, false
		}
		offset = id + 1
	}
	return offset, true
}
