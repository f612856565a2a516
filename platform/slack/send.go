package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// ErrEmptyMessage is returned by Send, Edit, SendReply and FinishReply
// for text with nothing to show; Slack refuses such messages.
var ErrEmptyMessage = replykit.ErrEmpty

// Send converts Claude's Markdown to mrkdwn, posts it to the target
// (in its thread, if any) in parts under MessageLimit, and returns the last
// part's Target.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.send(ctx, to, "", text)
}

// SendMentioning is Send starting with a mention of each user (<@U…>),
// the one way a message of cc-connect's mentions anyone.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	var prefix strings.Builder
	for _, m := range mentions {
		if !slackUserIDRE.MatchString(m.UserID) {
			return platform.Target{}, fmt.Errorf("sending to slack channel %s: %q is not a Slack user id", to.Channel, m.UserID)
		}
		prefix.WriteString("<@" + m.UserID + "> ")
	}
	return a.send(ctx, to, prefix.String(), text)
}

var slackUserIDRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// send posts text as mrkdwn parts, the first after prefix, which is
// mrkdwn already (cc-connect's own, not converted).
func (a *Adapter) send(ctx context.Context, to platform.Target, prefix, text string) (platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return platform.Target{}, fmt.Errorf("sending to slack channel %s: %w", to.Channel, ErrEmptyMessage)
	}
	last := platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread}
	parts := splitMrkdwn(text, MessageLimit-utf8.RuneCountInString(prefix))
	parts[0] = prefix + parts[0]
	for i, part := range parts {
		ts, err := a.post(ctx, to, slack.MsgOptionText(part, false))
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
func (a *Adapter) post(ctx context.Context, to platform.Target, opts ...slack.MsgOption) (string, error) {
	opts = append(opts, slack.MsgOptionLinkNames(false))
	if to.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(to.Thread))
	}
	var ts string
	err := a.call(ctx, "chat.postMessage", false, func(ctx context.Context) error {
		var err error
		_, ts, err = a.api.PostMessageContext(ctx, to.Channel, opts...)
		return err
	})
	return ts, err
}

// Edit replaces the text of a posted message. Edits are paced (a budget
// for the workspace, an interval per channel); while an edit of the same
// message waits, a newer text replaces it and the older call returns nil,
// so the latest text always lands and the last edit is never dropped.
// Text longer than one message is cut with an ellipsis.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("editing slack message %s: %w", msg.MessageID, ErrEmptyMessage)
	}
	parts := splitMrkdwn(text, MessageLimit-2)
	body := parts[0]
	if len(parts) > 1 {
		body += "\n…"
	}
	return a.update(ctx, msg, body, slack.MsgOptionText(body, false))
}

// update runs chat.update through the edit throttle.
func (a *Adapter) update(ctx context.Context, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	return a.updateVia(ctx, a.edits.Do, msg, desc, opts...)
}

// updateFirst is update for the edit that finishes a streamed reply: it
// supersedes the stream's waiting edit of the message and is booked ahead
// of ordinary edits (editPacer.ReserveFirst).
func (a *Adapter) updateFirst(ctx context.Context, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	return a.updateVia(ctx, a.edits.DoFirst, msg, desc, opts...)
}

type editDo func(ctx context.Context, key, scope, desc string, send func(context.Context) error) error

func (a *Adapter) updateVia(ctx context.Context, do editDo, msg platform.Target, desc string, opts ...slack.MsgOption) error {
	ts := messageTS(msg.MessageID)
	if msg.Channel == "" || ts == "" {
		return fmt.Errorf("editing slack message: target has no channel or message id")
	}
	opts = append(opts, slack.MsgOptionLinkNames(false))
	err := do(ctx, msg.Channel+":"+ts, msg.Channel, desc, func(ctx context.Context) error {
		return a.call(ctx, "chat.update", true, func(ctx context.Context) error {
			_, _, _, err := a.api.UpdateMessageContext(ctx, msg.Channel, ts, opts...)
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

// React adds an emoji reaction; adding one that is already there is fine.
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	ref := slack.NewRefToMessage(msg.Channel, messageTS(msg.MessageID))
	err := a.call(ctx, "reactions.add", true, func(ctx context.Context) error {
		return a.api.AddReactionContext(ctx, reactionName(name), ref)
	})
	if err != nil && !isSlackError(err, "already_reacted") {
		return fmt.Errorf("reacting %s in slack channel %s: %w", name, msg.Channel, err)
	}
	return nil
}

// Unreact removes the bot's reaction; removing a missing one is fine.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	ref := slack.NewRefToMessage(msg.Channel, messageTS(msg.MessageID))
	err := a.call(ctx, "reactions.remove", true, func(ctx context.Context) error {
		return a.api.RemoveReactionContext(ctx, reactionName(name), ref)
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
