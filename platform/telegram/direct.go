package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/cc-connect/cc-connect/platform"
)

var _ platform.DirectMessenger = (*Adapter)(nil)

// SendDirect writes text to the user in their private chat with the bot
// (its id is the user's). Telegram lets a bot write there only once the
// person has started it (opened the bot and pressed Start, or written to
// it): before, or after they blocked the bot, it answers 403, which is
// platform.ErrNoDirectChat. Link previews are off, as for every message:
// Telegram fetching a one-time link would use it up.
func (a *Adapter) SendDirect(ctx context.Context, userID, text string) (platform.Target, error) {
	if id, err := strconv.ParseInt(userID, 10, 64); err != nil || id <= 0 {
		return platform.Target{}, fmt.Errorf("sending a direct message: %q is not a Telegram user id", userID)
	}
	to, err := a.wire.send(ctx, platform.Target{Platform: a.wire.name, Channel: userID}, nil, text)
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusForbidden {
		return platform.Target{}, fmt.Errorf("sending a direct message to %s: %w (%w)", userID, platform.ErrNoDirectChat, err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("sending a direct message to %s: %w", userID, err)
	}
	return to, nil
}
