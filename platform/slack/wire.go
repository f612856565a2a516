package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// wire is the Web API as the other parts use it: every call goes through
// its retry (call), every edit through its pacing (update), and it holds
// the few calls that post, edit, delete and react. It decides nothing
// about what is posted.
type wire struct {
	name string
	log  *slog.Logger
	api  *slack.Client
	// sleep waits out rate limits and backoff; tests scale it down.
	sleep func(ctx context.Context, d time.Duration) error
	edits *coalesce.Coalescer
}

// ErrEmptyMessage is returned by Send, Edit, SendReply and FinishReply
// for text with nothing to show; Slack refuses such messages.
var ErrEmptyMessage = replykit.ErrEmpty

// call runs one Web API call through the adapter's retry (retryPolicy):
// 429s are waited out for as long as ctx allows, so no reply is ever
// dropped; server errors (5xx) are retried a few times only for idempotent
// calls, since a failed chat.postMessage may still have posted.
func (w *wire) call(ctx context.Context, method string, idempotent bool, f func(context.Context) error) error {
	if err := w.retryPolicy().Do(ctx, method, idempotent, f); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	return nil
}

// retryPolicy is how the adapter retries Slack's calls: a rate limit
// after Slack's Retry-After (a second when it names none), a server error
// three times, a second more each time. slack-go retries nothing itself
// unless asked (OptionRetry, which the adapter does not set), so nothing
// is retried twice.
func (w *wire) retryPolicy() retry.Policy {
	return retry.Policy{
		Platform:  "Slack",
		Classify:  slackVerdict,
		Transient: 3,
		Backoff:   func(n int) time.Duration { return time.Duration(n) * time.Second },
		Sleep:     func(ctx context.Context, d time.Duration) error { return w.sleep(ctx, d) },
		Log:       w.log,
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

// send posts text as mrkdwn parts, the first after prefix, which is
// mrkdwn already (cc-connect's own, not converted).
func (w *wire) send(ctx context.Context, to platform.Target, prefix, text string) (platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return platform.Target{}, fmt.Errorf("sending to slack channel %s: %w", to.Channel, ErrEmptyMessage)
	}
	last := platform.Target{Platform: w.name, Channel: to.Channel, Thread: to.Thread}
	parts := splitMrkdwn(text, MessageLimit-utf8.RuneCountInString(prefix))
	parts[0] = prefix + parts[0]
	for i, part := range parts {
		ts, err := w.post(ctx, to, slack.MsgOptionText(part, false))
		if err != nil {
			return platform.Target{}, fmt.Errorf("sending part %d of %d to slack channel %s: %w", i+1, len(parts), to.Channel, err)
		}
		last.MessageID = ts
	}
	return last, nil
}

// post sends one chat.postMessage, in to.Thread when set. link_names is
// off (Slack's default, said so that it stays): with it Slack would make
// "@channel" and "@name" in the text into mentions.
func (w *wire) post(ctx context.Context, to platform.Target, opts ...slack.MsgOption) (string, error) {
	opts = append(opts, slack.MsgOptionLinkNames(false))
	if to.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(to.Thread))
	}
	var ts string
	err := w.call(ctx, "chat.postMessage", false, func(ctx context.Context) error {
		var err error
		_, ts, err = w.api.PostMessageContext(ctx, to.Channel, opts...)
		return err
	})
	return ts, err
}

// update runs chat.update through the edit throttle.
func (w *wire) update(ctx context.Context, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	return w.updateVia(ctx, w.edits.Do, msg, desc, opts...)
}

// updateFirst is update for the edit that finishes a streamed reply: it
// supersedes the stream's waiting edit of the message and is booked ahead
// of ordinary edits (editPacer.ReserveFirst).
func (w *wire) updateFirst(ctx context.Context, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	return w.updateVia(ctx, w.edits.DoFirst, msg, desc, opts...)
}

type editDo func(ctx context.Context, key, scope, desc string, send func(context.Context) error) error

func (w *wire) updateVia(ctx context.Context, do editDo, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	ts := messageTS(msg.MessageID)
	if msg.Channel == "" || ts == "" {
		return fmt.Errorf("editing slack message: target has no channel or message id")
	}
	opts = append(opts, slack.MsgOptionLinkNames(false))
	err := do(ctx, msg.Channel+":"+ts, msg.Channel, desc, func(ctx context.Context) error {
		return w.call(ctx, "chat.update", true, func(ctx context.Context) error {
			_, _, _, err := w.api.UpdateMessageContext(ctx, msg.Channel, ts, opts...)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("editing slack message %s in %s: %w", ts, msg.Channel, err)
	}
	return nil
}

// messageTS accepts a bare ts or a Message.ID ("<channel>:<ts>").
func messageTS(id string) string {
	if _, ts, ok := strings.Cut(id, ":"); ok {
		return ts
	}
	return id
}

// delete removes one of the bot's messages (chat.delete); one already gone
// is fine.
func (w *wire) delete(ctx context.Context, msg platform.Target) error {
	ts := messageTS(msg.MessageID)
	err := w.call(ctx, "chat.delete", true, func(ctx context.Context) error {
		_, _, err := w.api.DeleteMessageContext(ctx, msg.Channel, ts)
		return err
	})
	if err != nil && !isSlackError(err, "message_not_found") {
		return fmt.Errorf("deleting slack message %s in %s: %w", ts, msg.Channel, err)
	}
	return nil
}

// react adds an emoji reaction; adding one that is already there is fine.
func (w *wire) react(ctx context.Context, msg platform.Target, name string) error {
	ref := slack.NewRefToMessage(msg.Channel, messageTS(msg.MessageID))
	err := w.call(ctx, "reactions.add", true, func(ctx context.Context) error {
		return w.api.AddReactionContext(ctx, reactionName(name), ref)
	})
	if err != nil && !isSlackError(err, "already_reacted") {
		return fmt.Errorf("reacting %s in slack channel %s: %w", name, msg.Channel, err)
	}
	return nil
}

// unreact removes the bot's reaction; removing a missing one is fine.
func (w *wire) unreact(ctx context.Context, msg platform.Target, name string) error {
	ref := slack.NewRefToMessage(msg.Channel, messageTS(msg.MessageID))
	err := w.call(ctx, "reactions.remove", true, func(ctx context.Context) error {
		return w.api.RemoveReactionContext(ctx, reactionName(name), ref)
	})
	if err != nil && !isSlackError(err, "no_reaction") {
		return fmt.Errorf("removing reaction %s in slack channel %s: %w", name, msg.Channel, err)
	}
	return nil
}

// reactionName maps the engine's neutral names to Slack emoji names. The
// three the engine uses are already Slack's; colons are tolerated.
func reactionName(name string) string {
	return strings.Trim(name, ":")
}

func isSlackError(err error, code string) bool {
	var se slack.SlackErrorResponse
	return errors.As(err, &se) && se.Err == code
}
