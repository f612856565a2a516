package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// Sentinel errors callers (and Run) branch on.
var (
	// ErrConflict means another process is polling (or a webhook is set on)
	// the same bot token. Run reports it as status and keeps retrying: the
	// admin must stop the other poller.
	ErrConflict = errors.New("another process is polling this bot token")
	// ErrWebhookActive means the bot has a webhook set, which makes
	// getUpdates fail. The admin must delete the webhook.
	ErrWebhookActive = errors.New("a webhook is set for this bot token; delete it (deleteWebhook) to use long polling")
	// ErrUnauthorized means Telegram refused the token. Run returns it: no
	// retry can fix a wrong token.
	ErrUnauthorized = errors.New("telegram refused the bot token (check platforms token)")
)

// api is the Bot API as the other parts call it: one method with its
// retry (flood control waited out, transient failures retried), the
// caller's context on every request, and the token kept out of every
// error. It knows nothing of what the calls mean.
type api struct {
	token      string // secret: part of every Bot API URL
	log        *slog.Logger
	base       *tgbotapi.BotAPI
	httpClient *http.Client

	// Durations kept in fields so tests can shrink them.
	requestTimeout      time.Duration
	retryAfterUnit      time.Duration
	backoffMin          time.Duration
	backoffMax          time.Duration
	maxTransientRetries int
}

// ctxDoer gives every request the library makes the caller's context, so a
// long poll or a send stops as soon as ctx is cancelled, and strips the
// token from transport errors (the token is part of every Bot API URL).
type ctxDoer struct {
	ctx    context.Context
	client *http.Client
	token  string
}

func (d ctxDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req.WithContext(d.ctx))
	if err != nil {
		return nil, redactErr(err, d.token)
	}
	return resp, nil
}

// redactedError keeps the chain (errors.Is(err, context.Canceled) still
// works) while its text never shows the token.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, token string) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// Replace the URL (which holds the token) with the method name.
		method := ue.URL
		if i := strings.LastIndex(method, "/"); i >= 0 {
			method = method[i+1:]
		}
		err = &url.Error{Op: ue.Op, URL: method, Err: ue.Err}
	}
	msg := err.Error()
	if token != "" {
		msg = strings.ReplaceAll(msg, token, "<token>")
	}
	return &redactedError{msg: msg, err: err}
}

// bot returns a copy of the shared BotAPI whose requests carry ctx. The
// library has no context support; a copy per call is cheap and keeps calls
// independent.
func (c *api) bot(ctx context.Context) *tgbotapi.BotAPI {
	b := *c.base
	b.Client = ctxDoer{ctx: ctx, client: c.httpClient, token: c.token}
	return &b
}

// call makes one Bot API request, waiting out flood control (429
// retry_after) and retrying transient failures, so no reply is dropped.
// Errors never contain the token.
func (c *api) call(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	return c.request(ctx, method, params, c.requestTimeout, c.maxTransientRetries)
}

// request is call with an explicit per-attempt timeout and retry budget for
// transient failures (the poll loop has its own backoff and passes 0).
func (c *api) request(ctx context.Context, method string, params tgbotapi.Params, timeout time.Duration, retries int) (json.RawMessage, error) {
	var result json.RawMessage
	p := c.retryPolicy()
	p.Transient = retries
	err := p.Do(ctx, method, true, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := c.bot(rctx).MakeRequest(method, params)
		if err != nil {
			return err
		}
		result = resp.Result
		return nil
	})
	if err != nil {
		return nil, c.apiError(method, err)
	}
	return result, nil
}

// retryPolicy is how the adapter retries Bot API calls (made for each
// call, so that it reads the adapter's fields as tests set them): flood
// control after Telegram's parameters.retry_after, in units of
// retryAfterUnit (a second; at least one), and a server error or a failed
// connection with backoff. The Bot API library retries nothing itself.
func (c *api) retryPolicy() retry.Policy {
	return retry.Policy{
		Platform:  "Telegram",
		Classify:  c.verdict,
		Transient: c.maxTransientRetries,
		Backoff:   func(n int) time.Duration { return backoff.Delay(n, c.backoffMin, c.backoffMax) },
		Log:       c.log,
	}
}

// verdict reads the Bot API library's errors: a refusal (ok: false) is a
// *tgbotapi.Error with Telegram's parameters; anything else is the
// transport or a reply that did not decode, which may pass.
func (c *api) verdict(err error) retry.Verdict {
	var apiErr *tgbotapi.Error
	switch {
	case !errors.As(err, &apiErr):
		return retry.Verdict{Kind: retry.Transient}
	case apiErr.RetryAfter > 0 || apiErr.Code == http.StatusTooManyRequests:
		return retry.Verdict{Kind: retry.RateLimited, After: time.Duration(max(apiErr.RetryAfter, 1)) * c.retryAfterUnit}
	case apiErr.Code >= 500:
		return retry.Verdict{Kind: retry.Transient}
	}
	return retry.Verdict{Kind: retry.Fail}
}

// apiError is the error a failed call returns: Telegram's refusal as an
// *APIError, anything else wrapped, the token taken out of both.
func (c *api) apiError(method string, err error) error {
	var apiErr *tgbotapi.Error
	if errors.As(err, &apiErr) {
		return &APIError{Method: method, Code: apiErr.Code, Description: redact(apiErr.Message, c.token), MigrateToChatID: apiErr.MigrateToChatID}
	}
	return fmt.Errorf("telegram %s: %w", method, redactErr(err, c.token))
}

// upload makes one multipart Bot API request, waiting out flood control as
// call does. Nothing else is retried: the file may have been sent.
func (c *api) upload(ctx context.Context, method string, params tgbotapi.Params, field, name string, data []byte) (json.RawMessage, error) {
	var result json.RawMessage
	err := c.retryPolicy().Do(ctx, method, false, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, c.requestTimeout)
		defer cancel()
		resp, err := c.bot(rctx).UploadFiles(method, params, []tgbotapi.RequestFile{{Name: field, Data: tgbotapi.FileBytes{Name: name, Bytes: data}}})
		if err != nil {
			return err
		}
		result = resp.Result
		return nil
	})
	if err != nil {
		return nil, c.apiError(method, err)
	}
	return result, nil
}

// APIError is a refusal from the Bot API (ok: false), without the token.
type APIError struct {
	Method          string
	Code            int
	Description     string
	MigrateToChatID int64 // set when a group became a supergroup
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// Is maps Bot API refusals to the package's sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrConflict:
		return e.Code == http.StatusConflict && !strings.Contains(e.Description, "webhook")
	case ErrWebhookActive:
		return e.Code == http.StatusConflict && strings.Contains(e.Description, "webhook")
	case ErrUnauthorized:
		return e.Code == http.StatusUnauthorized || (e.Code == http.StatusNotFound && e.Method == "getMe")
	}
	return false
}

// isParseError reports Telegram's refusal of our HTML entities; the caller
// resends the part as plain text.
func isParseError(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == http.StatusBadRequest &&
		strings.Contains(strings.ToLower(ae.Description), "can't parse entities")
}

// isNotModified reports an edit whose text equals the current one, which
// is not a failure for us.
func isNotModified(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == http.StatusBadRequest &&
		strings.Contains(ae.Description, "message is not modified")
}

func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "<token>")
}
