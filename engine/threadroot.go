package engine

import (
	"context"
	"time"

	"github.com/cc-connect/cc-connect/engine/conv"
	"github.com/cc-connect/cc-connect/platform"
)

// A reply in a thread whose root mentions the bot belongs to the bot's
// conversation, whatever order the two reach cc-connect in. The root may
// be missing when the reply comes: pushed to an instance that was killed
// before acknowledging it (its redelivery is still to come, or never
// comes), or simply slower. So a reply without a mention in a thread the
// engine has no session for is not dropped at once: the thread's root is
// read back from the platform (platform.HistoryReader, Limit 1), and when
// it mentions the bot it is accepted first, from the platform's copy and
// under its own id (so that its own delivery, when it comes, is a
// duplicate), and the reply after it.

// rootLookupTimeout bounds the one platform read the accept path may make;
// it holds up only the reply's own conversation.
const rootLookupTimeout = 2 * time.Second

// rootlessMemory is how many threads are remembered whose root does not
// mention the bot, so that chatter in them is not read back each time.
const rootlessMemory = 4096

// threadRoot returns the root of m's thread, as a message to accept, when
// m is a thread reply, a can read the thread, and the root mentions the
// bot (and is not a bot's).
func (e *Engine) threadRoot(ctx context.Context, a platform.Adapter, m platform.Message) (platform.Message, bool) {
	t := m.Target
	hr, ok := a.(platform.HistoryReader)
	if !ok || m.IsDM || t.Thread == "" || t.Thread == t.MessageID {
		return platform.Message{}, false
	}
	key := conv.Key(t)
	if e.rootless.has(key) {
		return platform.Message{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, rootLookupTimeout)
	defer cancel()
	conv := t
	conv.MessageID = ""
	hist, err := hr.History(ctx, conv, platform.HistoryQuery{Limit: 1})
	if err != nil {
		e.log.Warn("Reading a thread's root failed; a reply without a mention in it is ignored", "platform", t.Platform,
			"channel", t.Channel, "thread", t.Thread, "error", err)
		return platform.Message{}, false
	}
	if len(hist) == 0 || !hist[0].Root || !hist[0].Mentioned || hist[0].IsBot {
		e.rootless.add(key)
		return platform.Message{}, false
	}
	r := hist[0]
	return platform.Message{
		ID:        r.ID,
		Target:    platform.Target{Platform: t.Platform, Channel: t.Channel, Thread: t.Thread, MessageID: r.MessageID},
		UserID:    r.UserID,
		UserName:  r.UserName,
		Text:      r.Text,
		Mentioned: true,
		Received:  r.Time,
		Seq:       r.Seq,
	}, true
}
