package telegram

import (
	"context"
	"errors"
	"fmt"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
)

// In a cluster, Telegram allows one getUpdates poller per bot token, so
// the hosts elect one through a gate (platform.Gate, a lease). Only the
// holder polls; the others only send (replies, edits and reactions are
// plain Bot API calls any host may make with the token).
//
// getUpdates with offset n confirms, for good, every update below n, and
// nothing else: the updates an answer carries are not confirmed by being
// sent, only by a later call with a higher offset. The poller asks from
// the oldest update it has not handed over (poll.go), and handing over
// means, in a cluster, that the ingress stream acknowledged the publish;
// so no getUpdates of any poller, even one still in flight when its
// tenure ends, confirms an update that was not published. Before each
// getUpdates the poller stores that offset under its tenure, so that the
// next poller starts there: what it reads again (published, not yet
// stored) the stream drops as duplicates of the same message id.
//
// When the tenure ends the poller stops at once: the getUpdates in flight
// is cancelled, nothing more is handed over (each hand-over checks the
// tenure first), and updates read but not handed over are left to the
// next poller, which gets them again from Telegram. A poller that went on
// would publish old updates after the next one's newer ones.

// runGated polls through one tenure after another until ctx ends.
func (p *poller) runGated(ctx context.Context, h platform.Handler) error {
	for {
		p.setStatus(platform.Standby, "another host polls")
		t, err := p.gate.Acquire(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			p.state.Refused(err, ErrUnauthorized)
			return fmt.Errorf("telegram %s: waiting to become the poller: %w", p.cfg.Name, err)
		}
		p.setStatus(platform.Connected, "")
		p.log.Info("Telegram polling on this host")
		err = p.pollTenure(ctx, h, t)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrUnauthorized):
			return err
		}
		p.log.Warn("Telegram polling moved off this host", "error", err)
	}
}

// pollTenure polls while t holds, from the stored offset; it returns why
// it stopped (nil when ctx ended).
func (p *poller) pollTenure(ctx context.Context, h platform.Handler, t platform.Tenure) error {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-t.Lost():
			cancel(t.Check())
		case <-stop:
		}
	}()
	var start int64
	err := backoff.Retry(tctx, p.api.backoffMin, p.api.backoffMax, func() (bool, error) {
		if err := t.Check(); err != nil {
			return true, err
		}
		off, err := t.Offset(tctx)
		start = off
		return err == nil, err
	}, func(err error, attempt int) {
		p.log.Warn("Reading the stored Telegram offset failed, retrying", "error", err, "attempt", attempt)
	})
	if err != nil {
		return ended(tctx, err)
	}
	saved := start
	before := func(ctx context.Context, offset int) error {
		if err := t.Check(); err != nil {
			return err
		}
		if int64(offset) <= saved {
			return nil
		}
		sctx, scancel := context.WithTimeout(ctx, p.api.requestTimeout)
		err := t.SaveOffset(sctx, int64(offset))
		scancel()
		switch {
		case err == nil:
			saved = int64(offset)
		case errors.Is(err, platform.ErrTenureLost):
			return err
		case ctx.Err() == nil:
			// Polling on is safe: the offset asked of Telegram confirms
			// only what was published; the next poller reads more again.
			p.log.Warn("Storing the Telegram offset failed; polling on", "error", err, "offset", offset)
		}
		return nil
	}
	err = p.poll(tctx, tenureHandler{h: h, t: t, end: cancel}, int(start), before)
	return ended(tctx, err)
}

// ended is why a tenure's polling stopped: err, else the tenure's end.
func ended(tctx context.Context, err error) error {
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if c := context.Cause(tctx); c != nil && !errors.Is(c, context.Canceled) {
		return c
	}
	return err
}

// tenureHandler hands updates over only while the tenure holds; the first
// refusal ends the tenure's polling, so nothing read after is handed over
// and no offset is stored past it.
type tenureHandler struct {
	h   platform.Handler
	t   platform.Tenure
	end context.CancelCauseFunc
}

func (g tenureHandler) check() error {
	if err := g.t.Check(); err != nil {
		g.end(err)
		return err
	}
	return nil
}

func (g tenureHandler) HandleMessage(ctx context.Context, m platform.Message) (platform.Result, error) {
	if err := g.check(); err != nil {
		return platform.Result{}, err
	}
	return g.h.HandleMessage(ctx, m)
}

func (g tenureHandler) HandleAction(ctx context.Context, act platform.Action) error {
	if err := g.check(); err != nil {
		return err
	}
	return g.h.HandleAction(ctx, act)
}
