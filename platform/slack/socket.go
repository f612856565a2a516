package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
)

// socket is the adapter's connection to Slack: it learns who the bot is,
// runs the Socket Mode client with its own backoff, keeps the connection's
// state, and pumps the events it delivers to the engine (events.go). It
// posts nothing: what it calls of the Web API goes through the wire.
type socket struct {
	cfg   Config
	log   *slog.Logger
	wire  *wire
	self  *botSelf
	state *connstate.State // for !status and the metrics
	// norm reads events into messages; buttons reads presses into actions.
	norm    normalizer
	buttons *prompts

	// drainGrace bounds how long Run, once stopped, lets a handler call in
	// flight go on (its event may be acked already, at the ack deadline).
	drainGrace time.Duration
	// ackWait bounds how long a message's ack waits for the handler to
	// accept it (Slack wants an ack within 3 s).
	ackWait time.Duration
}

// run connects to Slack and delivers events to h until ctx is cancelled
// (then it returns nil) or Slack rejects the tokens (then it returns the
// error), keeping the connection's state.
func (s *socket) run(ctx context.Context, h platform.Handler) error {
	s.setStatus(platform.Connecting, "")
	err := s.runLoop(ctx, h)
	switch {
	case err == nil || ctx.Err() != nil:
		s.setStatus(platform.Stopped, "")
		s.log.Info("Slack adapter stopped")
		return nil
	default:
		s.setStatus(platform.BadCredentials, err.Error())
		s.log.Error("Slack adapter stopped", "error", err)
		return err
	}
}

func (s *socket) setStatus(st platform.ConnState, detail string) { s.state.Set(st, detail) }

func (s *socket) runLoop(ctx context.Context, h platform.Handler) error {
	if err := s.identify(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	smc := socketmode.New(s.wire.api, socketmode.OptionLog(slogOutput{s.log}))
	in := inbound{h: h}
	var giveUp context.CancelFunc
	in.ctx, giveUp = context.WithCancel(context.WithoutCancel(ctx))
	defer giveUp()
	pumped := make(chan struct{})
	runErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { giveUpAfterGrace(ctx, pumped, s.drainGrace, giveUp) })
	sig := newSocketSignals()
	wg.Go(func() { runErr <- s.runSocket(ctx, smc, sig) })
	err := s.pump(ctx, smc, in, runErr, sig)
	// The pump calls the handler itself: once it returned, no call is in
	// flight, and the goroutines are waited for.
	close(pumped)
	cancel()
	wg.Wait()
	return err
}

// defaultDrainGrace is how long a stopping adapter lets a handler call in
// flight go on: long enough for the engine to journal a message, short
// enough not to hold up a shutdown or a reload.
const defaultDrainGrace = 5 * time.Second

// inbound is the handler as the pump calls it. Slack never redelivers an
// acked event, and a message's envelope is acked at the ack deadline even
// while its handler still runs (a slow disk): so the handler's context is
// not Run's, which would cut that call short when Run stops, but one that
// ends a grace after it (giveUpAfterGrace).
type inbound struct {
	h   platform.Handler
	ctx context.Context
}

// giveUpAfterGrace cancels the handler's context (giveUp) once Run's ctx
// has ended and the pump has not returned within grace; it returns when
// the pump has.
func giveUpAfterGrace(ctx context.Context, pumped <-chan struct{}, grace time.Duration, giveUp context.CancelFunc) {
	select {
	case <-pumped:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-pumped:
	case <-t.C:
		giveUp()
	}
}

// identify learns the bot's own user and bot ids, retrying network trouble
// with backoff; Slack refusing the token is final.
func (s *socket) identify(ctx context.Context) error {
	bo := &backoff.Backoff{Min: s.cfg.ReconnectMin, Max: s.cfg.ReconnectMax}
	for {
		var resp *slack.AuthTestResponse
		err := s.wire.call(ctx, "auth.test", true, func(ctx context.Context) error {
			var err error
			resp, err = s.wire.api.AuthTestContext(ctx)
			return err
		})
		if err == nil {
			s.self.set(resp.UserID, resp.BotID)
			s.log.Info("Slack bot identified", "bot_user", resp.UserID, "bot_id", resp.BotID, "team", resp.Team)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var apiErr slack.SlackErrorResponse
		if errors.As(err, &apiErr) {
			return fmt.Errorf("checking the bot token: %w", err)
		}
		d := bo.Next()
		s.setStatus(platform.TransientDisconnect, err.Error())
		s.log.Warn("Slack unreachable, retrying", "error", err, "backoff", d)
		if err := s.wire.sleep(ctx, d); err != nil {
			return err
		}
	}
}

// socketSignals carry what the event pump learns about connection
// attempts to runSocket, which owns the retry policy.
type socketSignals struct {
	failed    chan struct{} // an attempt to connect failed
	connected chan struct{} // a connection is up
}

func newSocketSignals() socketSignals {
	return socketSignals{failed: make(chan struct{}, 1), connected: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// runSocket runs the Socket Mode client. A dropped connection is redialled
// by the client at once; when an attempt to connect fails, runSocket stops
// the client and waits with its own capped, jittered backoff (the client's
// own has no jitter and waits up to five minutes), so many instances do not
// hammer Slack in step after an outage. It returns nil when ctx ends and an
// error when Slack refuses the app token.
func (s *socket) runSocket(ctx context.Context, smc *socketmode.Client, sig socketSignals) error {
	bo := &backoff.Backoff{Min: s.cfg.ReconnectMin, Max: s.cfg.ReconnectMax}
	for {
		drain(sig.failed)
		runCtx, cancelRun := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() { errc <- smc.RunContext(runCtx) }()
		var err error
		attemptFailed := false
	wait:
		for {
			select {
			case err = <-errc:
				break wait
			case <-sig.connected:
				bo.Reset()
			case <-sig.failed:
				attemptFailed = true
				cancelRun()
			}
		}
		cancelRun()
		if ctx.Err() != nil {
			return nil
		}
		if !attemptFailed && isAuthError(err) {
			return fmt.Errorf("opening socket mode connection: %w", err)
		}
		d := bo.Next()
		if attemptFailed {
			// The pump has logged the failure and set the status.
			s.log.Info("Slack backing off before reconnecting", "backoff", d)
		} else {
			s.setStatus(platform.TransientDisconnect, errText(err))
			s.log.Warn("Slack socket mode stopped, backing off", "error", errText(err), "backoff", d)
		}
		if s.wire.sleep(ctx, d) != nil {
			return nil
		}
	}
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

func isAuthError(err error) bool {
	if err == nil {
		return false
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == http.StatusNotFound {
		return true
	}
	switch err.Error() {
	case "invalid_auth", "account_inactive", "not_authed", "token_revoked", "not_allowed_token_type":
		return true
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return "connection closed"
	}
	return err.Error()
}

// slogOutput lets slack-go's debug logger write through slog. slack-go
// only logs when its debug option is on, which this adapter never sets, so
// this only catches its rare unconditional messages.
type slogOutput struct{ log *slog.Logger }

func (s slogOutput) Output(_ int, msg string) error {
	s.log.Debug("slack-go: " + strings.TrimSpace(msg))
	return nil
}
