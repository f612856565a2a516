// Package replykit posts and edits a turn's reply the same way on every
// chat platform: split the text as the platform splits it, compare each
// part with what its message already shows, edit or post, tag each part
// for recovery, skip the parts known to be posted, and tell the engine of
// each part as it lands where the platform can find nothing again
// (platform.Replier, platform.ReplyEditor, platform.ReplyFinisher,
// platform.PartRecorder). An adapter supplies only the wire calls that
// differ (Wire, and Finder where the platform can find a tagged post); the
// kit owns the memory of what each message shows.
//
// It knows no wire format and makes no call of its own: retries, pacing
// and markup are the adapter's (its Wire's).
package replykit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
)

// ErrEmpty is returned for a reply with nothing to show; platforms refuse
// such messages.
var ErrEmpty = errors.New("empty message")

// Part is one message's worth of a reply, as a Wire posts or edits it.
type Part struct {
	Text  string // as Wire.Split gave it
	Index int    // from 0
	Of    int    // how many parts the reply has
	// Key is the reply's key (platform.Reply): a post or edit carries it
	// and Index where the platform can tag a message. "" for the messages
	// of a reply being streamed.
	Key string
	// After is the message the reply answers (platform.Reply.After), ""
	// when none.
	After string
}

// Wire is what an adapter supplies: the calls of its platform.
type Wire interface {
	// Split renders text (Markdown) as the platform shows it and splits it
	// into parts of one message each; the same text gives the same parts.
	Split(text string) []string
	// Post posts p (tagged with p.Key where the platform can) into to's
	// conversation and returns the posted message.
	Post(ctx context.Context, to platform.Target, p Part) (platform.Target, error)
	// Edit makes msg show p. final says it turns a streamed message into
	// the reply for good: it goes as soon as the platform's own limit
	// allows, not behind the stream's pacing, and carries p.Key where the
	// platform can tag an edit.
	Edit(ctx context.Context, msg platform.Target, p Part, final bool) error
	// ShownKey names msg in the kit's memory of what messages show; a
	// message posted by Post and the same message named by the engine get
	// the same key.
	ShownKey(msg platform.Target) string
}

// Finder is implemented by a Wire whose platform can list the posts of a
// conversation with their tags (Slack's message metadata).
type Finder interface {
	// FindReply returns the message id of each part of reply key that the
	// bot posted in to's conversation after the message after. On an error
	// it returns what it found before.
	FindReply(ctx context.Context, to platform.Target, key, after string) (map[int]string, error)
}

// Kit is one adapter's replies. It is safe for concurrent use; call New.
type Kit struct {
	name string // the adapter's instance name: Target.Platform
	wire Wire
	log  *slog.Logger
	// shown is the text each recent message of a reply shows (by
	// ShownKey), so that an unchanged part is not edited again.
	shown *recent.Map[string]
}

// shownMemory is how many messages' texts the kit remembers.
const shownMemory = 1024

// New returns the kit of the adapter instance name over w.
func New(name string, w Wire, log *slog.Logger) *Kit {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Kit{name: name, wire: w, log: log, shown: recent.New[string](shownMemory)}
}

// SendReply posts text as its parts (platform.Replier): a part found
// tagged on the platform (r.Again, a Finder) or named by r.Done is not
// posted; each other part is posted tagged with r.Key, and r.Landed hears
// of it before the next goes. When looking fails, the parts r.Done does
// not name are posted, as on a platform that cannot look.
func (k *Kit) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	res := platform.ReplyResult{Last: k.target(to, "")}
	if strings.TrimSpace(text) == "" {
		return res, fmt.Errorf("sending a reply to %s: %w", to.Channel, ErrEmpty)
	}
	parts := k.wire.Split(text)
	res.Parts = len(parts)
	found := k.find(ctx, to, r, "Looking for a reply posted before the restart failed; posting it")
	for i := range parts {
		if id, ok := found[i]; ok {
			res.Found++
			res.Last = k.target(to, id)
			continue
		}
		if r.Done != nil && r.Done(i) {
			continue
		}
		m, err := k.post(ctx, to, k.part(parts, i, r), r.Landed)
		if err != nil {
			return res, err
		}
		res.Posted++
		res.Last = m
	}
	return res, nil
}

// EditReply makes msgs show text (platform.ReplyEditor): a part a message
// already shows is left alone, a changed one is edited (the Wire's paced
// edit), and the parts beyond msgs are posted after them, untagged.
// Empty text changes nothing.
func (k *Kit) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return msgs, nil
	}
	parts := k.wire.Split(text)
	out := make([]platform.Target, 0, len(parts))
	for i := range parts {
		p := k.part(parts, i, platform.Reply{})
		if i >= len(msgs) {
			m, err := k.post(ctx, to, p, nil)
			if err != nil {
				return out, err
			}
			out = append(out, m)
			continue
		}
		m := msgs[i]
		key := k.wire.ShownKey(m)
		if shown, ok := k.shown.Get(key); !ok || shown != p.Text {
			if err := k.wire.Edit(ctx, m, p, false); err != nil {
				return out, err
			}
			k.shown.Put(key, p.Text)
		}
		out = append(out, m)
	}
	return out, nil
}

// FinishReply turns a streamed reply into the reply (platform.ReplyFinisher):
// each message of msgs, and each part found tagged beyond them (r.Again, a
// Finder), gets its part through a final edit, tagged where the platform
// can, whatever the kit remembers it showing (recovery applies it again);
// the parts beyond are posted as SendReply posts them.
func (k *Kit) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	if strings.TrimSpace(text) == "" {
		return msgs, fmt.Errorf("finishing a reply in %s: %w", to.Channel, ErrEmpty)
	}
	parts := k.wire.Split(text)
	found := k.find(ctx, to, r, "Looking for a reply finished before the restart failed; finishing it")
	out := make([]platform.Target, 0, len(parts))
	for i := range parts {
		p := k.part(parts, i, r)
		var m platform.Target
		switch id, tagged := found[i]; {
		case i < len(msgs):
			m = msgs[i]
		case tagged:
			m = k.target(to, id)
		case r.Done != nil && r.Done(i):
			continue
		default:
			posted, err := k.post(ctx, to, p, r.Landed)
			if err != nil {
				return out, err
			}
			out = append(out, posted)
			continue
		}
		if err := k.wire.Edit(ctx, m, p, true); err != nil {
			return out, err
		}
		k.shown.Put(k.wire.ShownKey(m), p.Text)
		out = append(out, m)
	}
	return out, nil
}

// Forget drops what the kit remembers of msg (deleted).
func (k *Kit) Forget(msg platform.Target) { k.shown.Take(k.wire.ShownKey(msg)) }

// find looks for r's parts on the platform when r may have been posted
// before a restart and the Wire can look; a failure is logged with msg
// and leaves what was found before it.
func (k *Kit) find(ctx context.Context, to platform.Target, r platform.Reply, msg string) map[int]string {
	f, ok := k.wire.(Finder)
	if !ok || !r.Again || r.Key == "" {
		return nil
	}
	found, err := f.FindReply(ctx, to, r.Key, r.After)
	if err != nil {
		k.log.Warn(msg, "channel", to.Channel, "thread", to.Thread, "error", err)
	}
	return found
}

// post posts p, remembers what it shows and tells landed.
func (k *Kit) post(ctx context.Context, to platform.Target, p Part, landed func(part, parts int)) (platform.Target, error) {
	m, err := k.wire.Post(ctx, to, p)
	if err != nil {
		return m, fmt.Errorf("sending part %d of %d to %s: %w", p.Index+1, p.Of, to.Channel, err)
	}
	k.shown.Put(k.wire.ShownKey(m), p.Text)
	if landed != nil {
		landed(p.Index, p.Of)
	}
	return m, nil
}

func (k *Kit) part(parts []string, i int, r platform.Reply) Part {
	return Part{Text: parts[i], Index: i, Of: len(parts), Key: r.Key, After: r.After}
}

// target is a message id in to's conversation.
func (k *Kit) target(to platform.Target, id string) platform.Target {
	return platform.Target{Platform: k.name, Channel: to.Channel, Thread: to.Thread, MessageID: id}
}
