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

var (
	_ platform.Replier       = (*Adapter)(nil)
	_ platform.ReplyFinisher = (*Adapter)(nil)
	_ replykit.Wire          = replyWire{}
)

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

// SendReply posts text as Send does, each part with a nonce from r.Key
// that Discord enforces (see platform.Replier). With r.Key empty it is
// Send, minus the parts r.Done names. Discord does not say whether it
// created a message or returned an earlier one, so Posted counts the
// parts sent and Found stays 0.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	return a.replies.SendReply(ctx, to, text, r)
}

// FinishReply makes the streamed messages msgs show the reply
// (platform.ReplyFinisher): each gets its part through an edit (an edit
// cannot carry a nonce; applying it again after a restart changes
// nothing), and the parts beyond msgs are posted as SendReply posts them,
// with the reply's nonces, so that Discord answers a repeat within its
// window with the message it has. The edits keep the channel's spacing
// (EditInterval, about Discord's own bucket of five edits in five seconds
// a channel), which a final edit waits out at most once.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	return a.replies.FinishReply(ctx, to, msgs, text, r)
}

// replyWire is what the reply kit needs of Discord: Markdown parts under
// its limit, a post with the part's nonce (opening the planned thread
// first), and an edit paced with the channel's others.
type replyWire struct{ a *Adapter }

func (w replyWire) Split(text string) []string { return splitForDiscord(discordMarkdown(text)) }

// Post posts p with its nonce, enforced, when it has a key. discordgo's
// MessageSend has no nonce field, so the post goes through the session's
// own request path (rate limits and all) with a body that has one.
func (w replyWire) Post(ctx context.Context, to platform.Target, p replykit.Part) (platform.Target, error) {
	a := w.a
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	body := nonceSend{Content: p.Text, AllowedMentions: noMentions()}
	if p.Key != "" {
		body.Nonce, body.EnforceNonce = replyNonce(p.Key, p.Index), true
	}
	endpoint := discordgo.EndpointChannelMessages(ch)
	var m discordgo.Message
	err = a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		b, err := a.session.RequestWithBucketID("POST", endpoint, body, endpoint, opts...)
		if err != nil {
			return err
		}
		return json.Unmarshal(b, &m)
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("posting to %s: %w", ch, err)
	}
	return platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}, nil
}

// Edit edits msg's content, paced with every other edit in its channel;
// an edit cannot carry a nonce, so a final one is like any other.
func (w replyWire) Edit(ctx context.Context, msg platform.Target, p replykit.Part, _ bool) error {
	return w.a.editContent(ctx, msg, p.Text, nil)
}

func (w replyWire) ShownKey(msg platform.Target) string {
	return msgChannel(msg) + ":" + bareID(msg.MessageID)
}
