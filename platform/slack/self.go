package slack

import (
	"context"
	"fmt"
	"sync"

	"github.com/slack-go/slack"
)

// botSelf is who the bot is on Slack (its user and bot ids): the socket
// learns it when it connects (auth.test); events, history and the reply
// lookup read it to tell the bot's own posts and mentions.
type botSelf struct {
	wire *wire

	mu     sync.Mutex // guards userID and botID
	userID string
	botID  string
}

func (b *botSelf) ids() (userID, botID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.userID, b.botID
}

func (b *botSelf) set(userID, botID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.userID, b.botID = userID, botID
}

// known returns the bot's user and bot ids, asking Slack (auth.test) when
// Run has not learnt them yet: after a restart, recovery may post a reply
// before the adapter has connected.
func (b *botSelf) known(ctx context.Context) (userID, botID string, err error) {
	if u, id := b.ids(); u != "" || id != "" {
		return u, id, nil
	}
	var resp *slack.AuthTestResponse
	err = b.wire.call(ctx, "auth.test", true, func(ctx context.Context) error {
		var err error
		resp, err = b.wire.api.AuthTestContext(ctx)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("identifying the bot: %w", err)
	}
	b.mu.Lock()
	if b.userID == "" && b.botID == "" {
		b.userID, b.botID = resp.UserID, resp.BotID
	}
	b.mu.Unlock()
	return resp.UserID, resp.BotID, nil
}
