package slack

import (
	"context"
	"fmt"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/slack-go/slack"
)

var _ platform.DirectMessenger = (*Adapter)(nil)

// SendDirect writes text to the user in the bot's direct message with
// them (conversations.open gives its channel, the same one each time).
// Links are not unfurled: a preview bot fetching a one-time link would
// use it up.
func (a *Adapter) SendDirect(ctx context.Context, userID, text string) (platform.Target, error) {
	if !slackUserIDRE.MatchString(userID) {
		return platform.Target{}, fmt.Errorf("sending a direct message: %q is not a Slack user id", userID)
	}
	var channel string
	w := a.wire
	err := w.call(ctx, "conversations.open", false, func(ctx context.Context) error {
		ch, _, _, err := w.api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{userID}})
		if err == nil {
			channel = ch.ID
		}
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("opening a direct message with %s: %w", userID, err)
	}
	to := platform.Target{Platform: w.name, Channel: channel}
	ts, err := w.post(ctx, to, slack.MsgOptionText(text, false), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if err != nil {
		return platform.Target{}, fmt.Errorf("sending a direct message to %s: %w", userID, err)
	}
	to.MessageID = ts
	return to, nil
}
