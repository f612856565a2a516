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
	for i := range parts {
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := a.replyPart(ctx, ch, endpoint, parts, i, r)
		if err != nil {
			return res, err
		}
		res.Posted++
		res.Last.MessageID = m.ID
	}
	return res, nil
}

// replyPart posts part i of a reply with its nonce (enforced) and tells
// r.Landed.
func (a *Adapter) replyPart(ctx context.Context, ch, endpoint string, parts []string, i int, r platform.Reply) (discordgo.Message, error) {
	body := nonceSend{Content: parts[i], AllowedMentions: noMentions()}
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
		return m, fmt.Errorf("sending part %d/%d to %s: %w", i+1, len(parts), ch, err)
	}
	a.shown.Put(ch+":"+m.ID, parts[i])
	if r.Landed != nil {
		r.Landed(i, len(parts))
	}
	return m, nil
}

var _ platform.ReplyFinisher = (*Adapter)(nil)

// FinishReply makes the streamed messages msgs show the reply
// (platform.ReplyFinisher): each gets its part through an edit (an edit
// cannot carry a nonce; applying it again after a restart changes
// nothing), and the parts beyond msgs are posted as SendReply posts them,
// with the reply's nonces, so that Discord answers a repeat within its
// window with the message it has. The edits keep the channel's spacing
// (EditInterval, about Discord's own bucket of five edits in five seconds
// a channel), which a final edit waits out at most once.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return msgs, errors.New("discord edit: empty text")
	}
	parts := splitForDiscord(discordMarkdown(text))
	out := make([]platform.Target, 0, len(parts))
	for i, part := range parts {
		if i < len(msgs) {
			m := msgs[i]
			if err := a.editContent(ctx, m, part, nil); err != nil {
				return out, err
			}
			a.shown.Put(msgChannel(m)+":"+bareID(m.MessageID), part)
			out = append(out, m)
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		ch, err := a.postChannel(ctx, to)
		if err != nil {
			return out, err
		}
		m, err := a.replyPart(ctx, ch, discordgo.EndpointChannelMessages(ch), parts, i, r)
		if err != nil {
			return out, err
		}
		out = append(out, platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID})
	}
	return out, nil
}
