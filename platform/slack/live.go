package slack

import (
	"context"
	"fmt"
	"time"

	"github.com/cc-connect/cc-connect/platform"
)

// What a running turn shows on Slack: the reply edited in place as it is
// written (EditReply), deleted leftovers, and what the adapter can do
// (Capabilities). Questions are in questions.go.

var (
	_ platform.Capable     = (*Adapter)(nil)
	_ platform.ReplyEditor = (*Adapter)(nil)
	_ platform.Deleter     = (*Adapter)(nil)
)

// buttonTextLimit is Block Kit's limit on a button's plain text.
const buttonTextLimit = 75

// Capabilities: Slack edits messages (chat.update, Tier 3: about 50 a
// minute for the whole workspace, shared by every conversation), has
// buttons and multi-select menus, and deletes the bot's posts. A message
// shows 3,900 runes of mrkdwn whole; Markdown is kept well under that so
// that escapes (& becomes &amp;) still fit.
//
// EditInterval gives one message at most half the workspace's budget: a
// reply streamed alone takes 25 edits a minute, and two conversations
// streaming at once still leave room for progress and prompts. The pacer
// (editPacer) holds the workspace's and each channel's limit whatever the
// engine asks.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.MessageLimit = 3000
	c.EditRate = platform.EditRate{PerMinute: a.cfg.EditsPerMinute, Burst: a.cfg.EditBurst, Interval: a.cfg.EditInterval}
	c.EditInterval = max(a.cfg.EditInterval, 2*time.Minute/time.Duration(a.cfg.EditsPerMinute))
	c.MultiSelect = true
	c.OptionLabelLimit = buttonTextLimit
	return c
}

// EditReply makes msgs show text as Send would post it (mrkdwn parts under
// MessageLimit): a part a message already shows is left alone, a changed
// one goes through chat.update (paced; a newer edit of the same message
// replaces one that waits), and parts beyond msgs are posted in the thread.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	return a.replies.EditReply(ctx, to, msgs, text)
}

// Delete removes one of the bot's messages (chat.delete); one already gone
// is fine.
func (a *Adapter) Delete(ctx context.Context, msg platform.Target) error {
	ts := messageTS(msg.MessageID)
	err := a.call(ctx, "chat.delete", true, func(ctx context.Context) error {
		_, _, err := a.api.DeleteMessageContext(ctx, msg.Channel, ts)
		return err
	})
	if err != nil && !isSlackError(err, "message_not_found") {
		return fmt.Errorf("deleting slack message %s in %s: %w", ts, msg.Channel, err)
	}
	a.replies.Forget(msg)
	return nil
}
