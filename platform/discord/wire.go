package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/retry"
)

// wire is Discord's REST API as the other parts use it: every call goes
// through its retry (rest), every edit through its pacing (edit), and it
// holds the few calls that post, edit, delete, react and type, and opens
// the thread planned for a message on its first post. It decides nothing
// about what is posted.
type wire struct {
	name    string
	log     *slog.Logger
	session *discordgo.Session
	threads *threadBook
	edits   *coalesce.Coalescer

	// Durations kept in fields so tests can shrink them.
	requestTimeout time.Duration
	backoffMin     time.Duration
	backoffMax     time.Duration
}

// messageLimit is Discord's limit on a message's content.
const messageLimit = 2000

// splitLimit leaves room under messageLimit for reopened code fences.
const splitLimit = 1900

// errThreadAlreadyCreated is Discord's JSON error code when a thread was
// already started from the message.
const errThreadAlreadyCreated = 160004

// splitForDiscord splits Markdown (Discord renders it natively) into parts
// that each fit in one message; SplitMessage counts runes, Discord counts
// UTF-16 units, so a part heavy in emoji is split again.
func splitForDiscord(text string) []string {
	return platform.SplitMessageUTF16(text, splitLimit, messageLimit)
}

// noMentions keeps replies from pinging anyone (Claude Code may quote
// "@everyone" or a user's handle).
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// msgChannel is where the message a Target points at lives: in its thread,
// except a thread's starter message, which stays in the parent channel
// (a thread started from a message has that message's id).
func msgChannel(t platform.Target) string {
	if t.Thread != "" && t.Thread != bareID(t.MessageID) {
		return t.Thread
	}
	return t.Channel
}

// bareID accepts both "<message_id>" and "<channel_id>:<message_id>".
func bareID(id string) string {
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// rest runs one REST call with ctx (bounded by requestTimeout per
// attempt) through the adapter's retry (retryPolicy): rate limits are
// waited out as Discord asks, however often they come, until ctx ends, so
// a reply is delayed, never dropped.
func (w *wire) rest(ctx context.Context, call func(opts ...discordgo.RequestOption) error) error {
	return w.retryPolicy().Do(ctx, "REST", true, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, w.requestTimeout)
		defer cancel()
		return call(discordgo.WithContext(rctx))
	})
}

// retryPolicy is how the adapter retries Discord's calls (made for each
// call, so that it reads the adapter's fields as tests set them).
// discordgo's own retries are accounted for so that nothing is retried
// twice: its wait on a 429 is off (Session.ShouldRetryOnRateLimit: it
// sleeps with no way to cancel), so a 429 comes back as a RateLimitError
// and is waited out here; a 502 it retries itself (MaxRestRetries) and
// then reports in an error of its own, not a RESTError, which is final
// here.
func (w *wire) retryPolicy() retry.Policy {
	return retry.Policy{
		Platform:      "Discord",
		Classify:      discordVerdict,
		RateLimitWait: 50 * time.Millisecond,
		Transient:     3,
		Backoff:       func(n int) time.Duration { return backoff.Delay(n, w.backoffMin, w.backoffMax) },
		Log:           w.log,
	}
}

// discordVerdict reads discordgo's errors: a 429 names its wait in the
// body's retry_after (the transport drops the bucket headers: see
// forgetRateLimit); a server error is transient for a request that is
// safe to repeat, which a POST is not (a message or a thread may have been
// made).
func discordVerdict(err error) retry.Verdict {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) {
		var after time.Duration
		if rl.RateLimit != nil && rl.TooManyRequests != nil {
			after = rl.RetryAfter
		}
		return retry.Verdict{Kind: retry.RateLimited, After: after}
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil && re.Request != nil {
		code := re.Response.StatusCode
		if code >= 500 && re.Request.Method != http.MethodPost {
			return retry.Verdict{Kind: retry.Transient}
		}
	}
	return retry.Verdict{Kind: retry.Fail}
}

// postChannel returns where new messages for to go, opening the thread
// planned for a top-level message (ThreadPerMessage) on first use.
func (w *wire) postChannel(ctx context.Context, to platform.Target) (string, error) {
	if to.Thread == "" || to.Thread == to.Channel {
		return to.Channel, nil
	}
	if w.threads.isKnown(to.Thread) {
		return to.Thread, nil
	}
	name := w.threads.plannedName(to.Thread)
	if name == "" {
		name = defaultThreadName
	}
	err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		_, err := w.session.MessageThreadStartComplex(to.Channel, to.Thread, &discordgo.ThreadStart{Name: name, AutoArchiveDuration: 1440}, opts...)
		return err
	})
	var re *discordgo.RESTError
	switch {
	case err == nil:
		w.log.Info("Discord thread opened", "channel", to.Channel, "thread", to.Thread)
	case errors.As(err, &re) && re.Message != nil && re.Message.Code == errThreadAlreadyCreated:
	case errors.As(err, &re) && re.Response != nil && re.Response.StatusCode == 404:
		// Not a message of that channel: the thread is an existing one
		// (for example after a restart); post into it directly.
	default:
		return "", fmt.Errorf("opening thread for message %s in %s: %w", to.Thread, to.Channel, err)
	}
	w.threads.markKnown(to.Thread)
	return to.Thread, nil
}

// send posts text in parts, the first starting with a mention of each of
// users, the only ids its allowed_mentions names.
func (w *wire) send(ctx context.Context, to platform.Target, users []string, text string) (platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return platform.Target{}, errors.New("discord send: empty text")
	}
	ch, err := w.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	var prefix strings.Builder
	for _, id := range users {
		prefix.WriteString("<@" + id + "> ")
	}
	parts := platform.SplitMessageUTF16(discordMarkdown(text), splitLimit-prefix.Len(), messageLimit-prefix.Len())
	parts[0] = prefix.String() + parts[0]
	last := platform.Target{}
	for i, part := range parts {
		allowed := noMentions()
		if i == 0 && len(users) > 0 {
			allowed.Users = users
		}
		m, err := w.post(ctx, ch, &discordgo.MessageSend{Content: part, AllowedMentions: allowed})
		if err != nil {
			return last, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), ch, err)
		}
		last = platform.Target{Platform: w.name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	}
	return last, nil
}

// post sends one message.
func (w *wire) post(ctx context.Context, ch string, send *discordgo.MessageSend) (*discordgo.Message, error) {
	var m *discordgo.Message
	err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = w.session.ChannelMessageSendComplex(ch, send, opts...)
		return err
	})
	return m, err
}

// edit edits a message's content (and its components, when comps is not
// nil), paced with every other edit in its channel; desc names the edit
// for the pacing's log (coalesce.Coalescer.Pending), "" by its message.
func (w *wire) edit(ctx context.Context, msg platform.Target, desc, content string, comps *[]discordgo.MessageComponent) error {
	id := bareID(msg.MessageID)
	if id == "" {
		return errors.New("discord edit: no message id")
	}
	ch := msgChannel(msg)
	key := ch + ":" + id
	if desc == "" {
		desc = key
	}
	return w.edits.Do(ctx, key, ch, desc, func(ctx context.Context) error {
		return w.editNow(ctx, msg, content, comps)
	})
}

// editNow is edit without the pacing, for an edit that must not be
// replaced by a later one (a resolved prompt).
func (w *wire) editNow(ctx context.Context, msg platform.Target, content string, comps *[]discordgo.MessageComponent) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		e := &discordgo.MessageEdit{ID: id, Channel: ch, Content: &content, Components: comps, AllowedMentions: noMentions()}
		_, err := w.session.ChannelMessageEditComplex(e, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("editing message %s in %s: %w", id, ch, err)
	}
	return nil
}

// delete removes one of the bot's messages; one already gone is fine.
func (w *wire) delete(ctx context.Context, msg platform.Target) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return w.session.ChannelMessageDelete(ch, id, opts...)
	})
	var re *discordgo.RESTError
	if err != nil && !(errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeUnknownMessage) {
		return fmt.Errorf("deleting message %s in %s: %w", id, ch, err)
	}
	return nil
}

// typing shows "<bot> is typing…" for about ten seconds.
func (w *wire) typing(ctx context.Context, to platform.Target) error {
	ch, err := w.postChannel(ctx, to)
	if err != nil {
		return err
	}
	if err := w.rest(ctx, func(opts ...discordgo.RequestOption) error { return w.session.ChannelTyping(ch, opts...) }); err != nil {
		return fmt.Errorf("sending typing to %s: %w", ch, err)
	}
	return nil
}

// emojiByName maps the engine's neutral reaction names to Unicode emoji.
var emojiByName = map[string]string{
	"eyes":             "👀",
	"white_check_mark": "✅",
	"x":                "❌",
	"hourglass":        "⏳",
	"warning":          "⚠️",
}

func emoji(name string) string {
	if e, ok := emojiByName[name]; ok {
		return e
	}
	return name // already an emoji, or a custom "name:id"
}

// react adds the bot's reaction to a message.
func (w *wire) react(ctx context.Context, msg platform.Target, name string) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	if err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return w.session.MessageReactionAdd(ch, id, emoji(name), opts...)
	}); err != nil {
		return fmt.Errorf("reacting %s to %s in %s: %w", name, id, ch, err)
	}
	return nil
}

// unreact removes the bot's own reaction.
func (w *wire) unreact(ctx context.Context, msg platform.Target, name string) error {
	ch, id := msgChannel(msg), bareID(msg.MessageID)
	if err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return w.session.MessageReactionRemove(ch, id, emoji(name), "@me", opts...)
	}); err != nil {
		return fmt.Errorf("removing reaction %s from %s in %s: %w", name, id, ch, err)
	}
	return nil
}
