package discord

import (
	"context"
	"errors"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.DirectMessenger = (*Adapter)(nil)

// SendDirect writes text to the user in the bot's direct message channel
// with them (POST /users/@me/channels opens it, or gives the one open).
// Links are not embedded: Discord fetching a one-time link for its preview
// would use it up. A user who allows no direct message from the bot
// (Discord's 50007) is platform.ErrNoDirectChat.
func (a *Adapter) SendDirect(ctx context.Context, userID, text string) (platform.Target, error) {
	if !snowflakeRE.MatchString(userID) {
		return platform.Target{}, fmt.Errorf("sending a direct message: %q is not a Discord user id", userID)
	}
	w := a.wire
	var ch *discordgo.Channel
	err := w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = w.session.UserChannelCreate(userID, opts...)
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("opening a direct message with %s: %w", userID, err)
	}
	to := platform.Target{Platform: w.name, Channel: ch.ID}
	m, err := w.post(ctx, ch.ID, &discordgo.MessageSend{Content: text, AllowedMentions: noMentions(), Flags: discordgo.MessageFlagsSuppressEmbeds})
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil && re.Message.Code == discordgo.ErrCodeCannotSendMessagesToThisUser {
		return platform.Target{}, fmt.Errorf("sending a direct message to %s: %w (%w)", userID, platform.ErrNoDirectChat, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("sending a direct message to %s: %w", userID, err)
	}
	to.MessageID = m.ID
	return to, nil
}
