// Package slack is the Slack adapter: it receives messages and button
// presses over Socket Mode, turns them into platform.Message and
// platform.Action values, and posts, edits and reacts through the Web API.
// It owns Slack's wire details (envelopes, acks, redeliveries, mrkdwn, Block
// Kit, rate limits) and nothing else: who may talk to the bot and what a
// message means is the engine's business.
package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// Type is the platform type this adapter reports in Message.Type.
const Type = "slack"

// DefaultAPIURL is the Web API base used when Config.APIURL is empty.
const DefaultAPIURL = slack.APIURL

// DefaultEditRate is how fast chat.update goes when the config names
// nothing (edits_per_minute, edit_burst, edit_interval): Slack's Tier 3,
// which chat.update is in, allows a workspace about 50 a minute; three
// may go back to back, a second apart in one channel. It is the one place
// these defaults are written (config.example.toml shows them, and a test
// holds it to that).
var DefaultEditRate = platform.EditRate{PerMinute: 50, Burst: 3, Interval: platform.DefaultEditInterval}

// Config configures one Slack adapter instance (one Slack app in one
// workspace).
type Config struct {
	// Name is the instance name from the config (`[[platforms]] name`);
	// it is the Platform of every Target this adapter produces.
	Name string
	// BotToken is the bot user OAuth token (xoxb-…) for the Web API.
	// The config loader checks its form (config.SlackBotTokenPrefix).
	BotToken string
	// AppToken is the app-level token (xapp-…, scope connections:write)
	// that opens Socket Mode connections (config.SlackAppTokenPrefix).
	AppToken string
	// APIURL is the Web API base URL, e.g. https://slack-gov.com/api/ for
	// GovSlack, a proxy, or a test server. Empty means
	// https://slack.com/api/. The Socket Mode URL comes from
	// apps.connections.open on this base.
	APIURL string
	// EditsPerMinute is the budget for chat.update across the workspace
	// (Slack's Tier 3 allows about 50 a minute). These five are
	// [[platforms]] keys of the same names (edit_interval, reconnect_min,
	// …). Zero, for each of the three edit settings, means
	// DefaultEditRate's.
	EditsPerMinute int
	// EditBurst is how many edits may go out back to back before
	// EditsPerMinute applies.
	EditBurst int
	// EditInterval is the least time between two edits in one channel.
	EditInterval time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff (with
	// jitter) between attempts to reach Slack when the first auth.test or
	// a Socket Mode session fails. Zero means 1s and 2m. Drops of an
	// established connection are redialled at once by the Socket Mode
	// client, then with its own backoff.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// AckHandledOnly acks a message's envelope only once the handler
	// took it, never at the ack deadline: a cluster host's handler
	// publishes to the cluster's stream, and an envelope it could not
	// publish must come again, from Slack, perhaps to another host
	// (docs/cluster.md).
	AckHandledOnly bool
	// HTTPClient carries Web API calls and file downloads. Nil means a
	// client with a 60 second timeout.
	HTTPClient *http.Client
}

// Sentinel errors callers can branch on.
var (
	// ErrInvalidConfig wraps every configuration problem New reports; the
	// config loader shows it to the admin.
	ErrInvalidConfig = errors.New("invalid slack config")
	// ErrUntrustedFileURL is returned by Attachment.Open when Slack handed
	// us a download URL on a host the bot token must not be sent to.
	ErrUntrustedFileURL = errors.New("file URL is not on a Slack host")
)

// Adapter is one Slack app connected to one workspace.
type Adapter struct {
	cfg     Config
	log     *slog.Logger
	api     *slack.Client
	apiBase *url.URL
	http    *http.Client

	// sleep waits out rate limits and backoff; tests scale it down.
	sleep func(ctx context.Context, d time.Duration) error
	// drainGrace bounds how long Run, once stopped, lets a handler call in
	// flight go on (its event may be acked already, at the ack deadline).
	drainGrace time.Duration
	// ackWait bounds how long a message's ack waits for the handler to
	// accept it (Slack wants an ack within 3 s).
	ackWait time.Duration

	state *connstate.State // for !status and the metrics

	mu        sync.Mutex // guards botUserID and botID
	botUserID string
	botID     string

	users *userCache
	edits *coalesce.Coalescer
	// prompts remembers the text of open prompts ("channel:ts") so the
	// resolved message can keep showing what was asked. After a restart or
	// once full, a resolution shows the outcome under a generic title.
	prompts *recent.Map[[]string]
	// replies posts and edits turns' replies (reply.go).
	replies *replykit.Kit
}

var (
	_ platform.Adapter  = (*Adapter)(nil)
	_ platform.Editor   = (*Adapter)(nil)
	_ platform.Reactor  = (*Adapter)(nil)
	_ platform.Prompter = (*Adapter)(nil)
	_ platform.Statuser = (*Adapter)(nil)
	_ platform.Observed = (*Adapter)(nil)

	_ platform.MentionSender = (*Adapter)(nil)
	_ platform.UserNamer     = (*Adapter)(nil)
)

// New validates cfg and returns an adapter. It does no I/O: Run connects.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.Default()
	}
	if strings.TrimSpace(cfg.Name) == "" {
		return nil, fmt.Errorf("%w: name is empty", ErrInvalidConfig)
	}
	// The tokens' form is the config loader's to check: Slack's own
	// answer (invalid_auth) is final for anything it lets through.
	if strings.TrimSpace(cfg.BotToken) == "" {
		return nil, fmt.Errorf("%w: %s: bot_token is empty", ErrInvalidConfig, cfg.Name)
	}
	if strings.TrimSpace(cfg.AppToken) == "" {
		return nil, fmt.Errorf("%w: %s: app_token is empty", ErrInvalidConfig, cfg.Name)
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	base, err := url.Parse(cfg.APIURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("%w: %s: api_url %q is not an http(s) URL", ErrInvalidConfig, cfg.Name, cfg.APIURL)
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		// slack-go appends method names to the base as is.
		cfg.APIURL += "/"
	}
	if cfg.EditsPerMinute < 0 || cfg.EditBurst < 0 || cfg.EditInterval < 0 || cfg.ReconnectMin < 0 || cfg.ReconnectMax < 0 {
		return nil, fmt.Errorf("%w: %s: edit and reconnect settings must not be negative", ErrInvalidConfig, cfg.Name)
	}
	if cfg.EditsPerMinute == 0 {
		cfg.EditsPerMinute = DefaultEditRate.PerMinute
	}
	if cfg.EditBurst == 0 {
		cfg.EditBurst = DefaultEditRate.Burst
	}
	if cfg.EditInterval == 0 {
		cfg.EditInterval = DefaultEditRate.Interval
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = time.Second
	}
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = 2 * time.Minute
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = cfg.ReconnectMin
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	log = log.With("platform", cfg.Name)
	a := &Adapter{
		cfg:        cfg,
		log:        log,
		apiBase:    base,
		http:       hc,
		sleep:      backoff.Sleep,
		drainGrace: defaultDrainGrace,
		ackWait:    defaultAckWait,
		state:      connstate.New(cfg.Name),
		users:      newUserCache(),
		edits:      coalesce.New(newEditPacer(cfg.EditsPerMinute, cfg.EditBurst, cfg.EditInterval)),
		prompts:    recent.New[[]string](1024),
	}
	a.replies = replykit.New(cfg.Name, replyWire{a}, log)
	a.api = slack.New(cfg.BotToken,
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionAPIURL(cfg.APIURL),
		slack.OptionHTTPClient(hc),
		slack.OptionLog(slogOutput{log}),
	)
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the connection state: connecting, connected, a transient
// disconnect with its cause, bad credentials once Slack refused a token
// (Run has returned then), or stopped.
func (a *Adapter) Status() platform.ConnStatus { return a.state.Get() }

func (a *Adapter) setStatus(s platform.ConnState, detail string) { a.state.Set(s, detail) }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.state.SetObserver(o) }

func (a *Adapter) identity() (userID, botID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botUserID, a.botID
}

// Run connects to Slack and delivers events to h until ctx is cancelled
// (then it returns nil) or Slack rejects the tokens (then it returns the
// error). Connection trouble is retried inside and shown by Status.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if h == nil {
		return errors.New("running slack adapter: nil handler")
	}
	a.setStatus(platform.Connecting, "")
	err := a.runLoop(ctx, h)
	switch {
	case err == nil || ctx.Err() != nil:
		a.setStatus(platform.Stopped, "")
		a.log.Info("Slack adapter stopped")
		return nil
	default:
		a.setStatus(platform.BadCredentials, err.Error())
		a.log.Error("Slack adapter stopped", "error", err)
		return err
	}
}

func (a *Adapter) runLoop(ctx context.Context, h platform.Handler) error {
	if err := a.identify(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	smc := socketmode.New(a.api, socketmode.OptionLog(slogOutput{a.log}))
	in := inbound{h: h}
	var giveUp context.CancelFunc
	in.ctx, giveUp = context.WithCancel(context.WithoutCancel(ctx))
	defer giveUp()
	pumped := make(chan struct{})
	runErr := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() { giveUpAfterGrace(ctx, pumped, a.drainGrace, giveUp) })
	sig := newSocketSignals()
	wg.Go(func() { runErr <- a.runSocket(ctx, smc, sig) })
	err := a.pump(ctx, smc, in, runErr, sig)
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
func (a *Adapter) identify(ctx context.Context) error {
	bo := &backoff.Backoff{Min: a.cfg.ReconnectMin, Max: a.cfg.ReconnectMax}
	for {
		var resp *slack.AuthTestResponse
		err := a.call(ctx, "auth.test", true, func(ctx context.Context) error {
			var err error
			resp, err = a.api.AuthTestContext(ctx)
			return err
		})
		if err == nil {
			a.mu.Lock()
			a.botUserID, a.botID = resp.UserID, resp.BotID
			a.mu.Unlock()
			a.log.Info("Slack bot identified", "bot_user", resp.UserID, "bot_id", resp.BotID, "team", resp.Team)
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
		a.setStatus(platform.TransientDisconnect, err.Error())
		a.log.Warn("Slack unreachable, retrying", "error", err, "backoff", d)
		if err := a.sleep(ctx, d); err != nil {
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
func (a *Adapter) runSocket(ctx context.Context, smc *socketmode.Client, sig socketSignals) error {
	bo := &backoff.Backoff{Min: a.cfg.ReconnectMin, Max: a.cfg.ReconnectMax}
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
			a.log.Info("Slack backing off before reconnecting", "backoff", d)
		} else {
			a.setStatus(platform.TransientDisconnect, errText(err))
			a.log.Warn("Slack socket mode stopped, backing off", "error", errText(err), "backoff", d)
		}
		if a.sleep(ctx, d) != nil {
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

// call runs one Web API call through the adapter's retry (retryPolicy):
// 429s are waited out for as long as ctx allows, so no reply is ever
// dropped; server errors (5xx) are retried a few times only for idempotent
// calls, since a failed chat.postMessage may still have posted.
func (a *Adapter) call(ctx context.Context, method string, idempotent bool, f func(context.Context) error) error {
	if err := a.retryPolicy().Do(ctx, method, idempotent, f); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// retryPolicy is how the adapter retries Slack's calls: a rate limit
// after Slack's Retry-After (a second when it names none), a server error
// three times, a second more each time. slack-go retries nothing itself
// unless asked (OptionRetry, which the adapter does not set), so nothing
// is retried twice.
func (a *Adapter) retryPolicy() retry.Policy {
	return retry.Policy{
		Platform:  "Slack",
		Classify:  slackVerdict,
		Transient: 3,
		Backoff:   func(n int) time.Duration { return time.Duration(n) * time.Second },
		Sleep:     func(ctx context.Context, d time.Duration) error { return a.sleep(ctx, d) },
		Log:       a.log,
	}
}

// slackVerdict reads slack-go's errors: a 429 with Retry-After comes as a
// RateLimitedError, any other HTTP failure as a StatusCodeError (a 429
// without the header among them); a download made without slack-go
// fails with a retry.StatusError.
func slackVerdict(err error) retry.Verdict {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se *retry.StatusError
	switch {
	case errors.As(err, &rl):
		return retry.Verdict{Kind: retry.RateLimited, After: rl.RetryAfter}
	case errors.As(err, &sc):
		return retry.HTTPVerdict(sc.Code, 0)
	case errors.As(err, &se):
		return retry.HTTPVerdict(se.Code, se.RetryAfter)
	}
	return retry.Verdict{Kind: retry.Fail}
}

// slogOutput lets slack-go's debug logger write through slog. slack-go
// only logs when its debug option is on, which this adapter never sets, so
// this only catches its rare unconditional messages.
type slogOutput struct{ log *slog.Logger }

func (s slogOutput) Output(_ int, msg string) error {
	s.log.Debug("slack-go: " + strings.TrimSpace(msg))
	return nil
}
