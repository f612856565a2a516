package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// A reply posted so that a restart does not post it twice: every part
// carries a nonce made from the reply's key and the part, with
// enforce_nonce, and Discord answers a post whose nonce the bot used in
// the last few minutes with the message posted then, creating none. A
// reply posted again later than that window is posted a second time: a
// message read back does not carry its nonce, so nothing else can tell.

var _ replykit.Wire = replyWire{}

var (
	_ platform.Replier       = (*Adapter)(nil)
	_ platform.ReplyFinisher = (*Adapter)(nil)
	_ replykit.Wire          = replyWire{}
)

// replyNonce is part's nonce for the reply key: the same for every attempt
// at it, and 24 characters whatever the key (Discord takes at most 25).
func replyNonce(key string, part int) string {
	sum := sha256.Sum256([]byte(key + "\x00" + strconv.Itoa(part)))
	return hex.EncodeToString(sum[:12])
}

// nonceSend is a message post with a nonce Discord enforces (none when
// Nonce is empty).
type nonceSend struct {
	Content         string                            `json:"content"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	Nonce           string                            `json:"nonce,omitempty"`
	EnforceNonce    bool                              `json:"enforce_nonce,omitempty"`
}

// replyWire is what the reply kit needs of Discord: Markdown parts under
// its limit, a post with the part's nonce (opening the planned thread
// first), and an edit paced with the channel's others.
type replyWire struct{ w *wire }

func (w replyWire) Split(text string) []string { return splitForDiscord(discordMarkdown(text)) }

// Post posts p with its nonce, enforced, when it has a key. discordgo's
// MessageSend has no nonce field, so the post goes through the session's
// own request path (rate limits and all) with a body that has one.
func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	ch, err := w.w.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	body := nonceSend{Content: p.Text, AllowedMentions: noMentions()}
	if p.Key != "" {
		body.Nonce, body.EnforceNonce = replyNonce(p.Key, p.Index), true
	}
	endpoint := discordgo.EndpointChannelMessages(ch)
	var m discordgo.Message
	err = w.w.rest(ctx, func(opts ...discordgo.RequestOption) error {
		b, err := w.w.session.RequestWithBucketID("POST", endpoint, body, endpoint, opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &m)
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("posting to %s: %w", ch, err)
	}
	return platform.Target{Platform: w.w.name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}, nil
}

// Edit edits msg's content, paced with every other edit in its channel;
// an edit cannot carry a nonce, so a final one is like any other.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, _ bool) error {
	return w.w.edit(ctx, msg, "", p.Text, nil)
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msgChannel(msg) + ":" + bareID(msg.MessageID)
}
