package platform

import (
	"context"
	"errors"
)

// ErrNoThread is returned by ReadThread when the platform has no such
// thread (its root was deleted, or the id names none): there is nothing to
// read, which is not a failure to retry.
var ErrNoThread = errors.New("no such thread")

// ThreadReader is implemented by adapters that can read a thread back from
// the platform: the thread's root (the message it hangs from: Slack's
// parent message, the starter message of a Discord thread or forum post)
// and its replies. Uses: an adapter that receives a reply in a thread the
// engine does not know yet asks whether its root addresses the bot (the
// root may not have reached cc-connect yet, or was lost with a crash), and
// the engine can give Claude the thread's earlier messages when the bot is
// first mentioned in it.
//
// ReadThread returns at most limit messages (at least 1), oldest first:
// the root first, then the latest replies that fit, each normalized as an
// inbound message is (ID, Target with the thread, UserID, UserName where
// the platform tells it cheaply, Text with the bot's mention removed,
// Mentioned, IsBot, Attachments, Received), the bot's own posts with IsBot
// set. Target.Thread of thread names the thread; its Channel the channel
// the thread is in. It returns ErrNoThread when there is no such thread.
// Without it, an adapter drops such a reply as it drops any message that
// does not mention the bot, and the engine has no history to give.
type ThreadReader interface {
	ReadThread(ctx context.Context, thread Target, limit int) ([]Message, error)
}
