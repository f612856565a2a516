package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

// A reply posted so that a restart does not post it twice: every part
// carries a nonce made from the reply's key and the part, with
// enforce_nonce, and Discord answers a post whose nonce the bot used in
// the last few minutes with the message posted then, creating none. A
// reply posted again later than that window is posted a second time: a
// message read back does not carry its nonce, so nothing else can tell.
// discordgo's MessageSend has no nonce field, so the post goes through
// the session's own request path (rate limits and all) with a body that
// has one.

var _ platform.Replier = (*Adapter)(nil)

// replyNonce is part's nonce for the reply key: the same for every attempt
// at it, and 24 characters whatever the key (Discord takes at most 25).
func replyNonce(key string, part int) string {
	sum := sha256.Sum256([]byte(key + "\x00" + strconv.Itoa(part)))
	return hex.EncodeToString(sum[:12])
}

// nonceSend is a message post with a nonce Discord enforces.
type nonceSend struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Nonce           string                            `json:"nonce"`
	EnforceNonce    bool                              `json:"enforce_nonce"`
}

// SendReply posts text as Send does, each part with a nonce from r.Key
// that Discord enforces (see platform.Replier). With r.Key empty it is
// Send, minus the parts r.Done names. Discord does not say whether it
// created a message or returned an earlier one, so Posted counts the
// parts sent and Found stays 0.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	res := platform.ReplyResult{Last: platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread}}
	if strings.TrimSpace(text) == "" {
		return res, errors.New("discord send: empty text")
	}
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return res, err
	}
	parts := splitForDiscord(discordMarkdown(text))
	res.Parts = len(parts)
	endpoint := discordgo.EndpointChannelMessages(ch)
	for i, part := range parts {
		if r.Done != nil && r.Done(i) {
			continue
		}
		body := nonceSend{Content: part, AllowedMentions: noMentions()}
		if r.Key != "" {
			body.Nonce, body.EnforceNonce = replyNonce(r.Key, i), true
		}
		var m discordgo.Message
		err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
			b, err := a.session.RequestWithBucketID("POST", endpoint, body, endpoint, opts...)
			if err != nil {
				return err
			}
			return json.Unmarshal(b, &m)
		})
		if err != nil {
			return res, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), ch, err)
		}
		res.Posted++
		res.Last.MessageID = m.ID
		if r.Landed != nil {
			r.Landed(i, len(parts))
		}
	}
	return res, nil
}
