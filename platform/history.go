package platform

import (
	"context"
	"errors"
	"time"
)

// HistoryMessage is one earlier message of a conversation, as a
// HistoryReader returns it: what was posted, by whom and when. It carries
// no way to fetch the files it names, only their names.
type HistoryMessage struct {
	// ID is the message's identity in the form Message.ID has (Slack
	// channel+ts, Discord channel+id, Telegram chat+id), so a caller can
	// tell whether a message it was handed is one of these.
	ID string
	// MessageID is the message's Target.MessageID.
	MessageID string
	UserID    string
	UserName  string // "" when the platform gave none; UserID names them then
	// Text is the message's text as Message.Text would be: the platform's
	// markup read as plain text, the bot's own mention taken out.
	Text string
	// Files are the names of the files posted with the message.
	Files []string
	Time  time.Time
	// IsBot is set for a bot's post, this bot's included; FromSelf for
	// this bot's own.
	IsBot    bool
	FromSelf bool
	// Mentioned says the message addresses the bot, by the rules
	// Message.Mentioned follows.
	Mentioned bool
	// Root marks the thread's starter message (HistoryQuery).
	Root bool
	// Seq is the message's platform order, as Message.Seq; 0 when the
	// adapter gives none.
	Seq uint64
}

// HistoryQuery says which earlier messages of a conversation a
// HistoryReader returns.
type HistoryQuery struct {
	// Before is a Target.MessageID: only messages posted before it are
	// returned, it excluded. "" means up to now.
	Before string
	// Limit is the most messages returned, the latest ones (the root of a
	// thread counted in); zero or less means none.
	Limit int
}

// HistoryReader is implemented by adapters that can read a conversation's
// earlier messages: a thread's replies, a channel's or a DM's history.
//
// History returns the messages of the conversation conv names
// (Platform, Channel, Thread; MessageID is ignored) that q selects, oldest
// first, with whatever the platform shows there, people's, bots' and this
// bot's own posts alike (IsBot, FromSelf): deciding what of it anyone may
// read is the caller's. For a thread that has a starter message (a Slack
// thread's parent, the message a Discord thread was started from), that
// message always comes first, marked Root, even when the limit cuts the
// messages between it and the latest ones; so Limit 1 asks whether the
// thread's root mentioned the bot. Only edits, joins and other system
// messages are left out, as for Message. A conversation with nothing before
// q.Before is no messages and no error.
//
// Where a platform has no history API (Telegram's Bot API) the adapter
// returns what it has seen itself since it started, and says so in its
// docs. Without a HistoryReader the caller has no earlier messages.
type HistoryReader interface {
	History(ctx context.Context, conv Target, q HistoryQuery) ([]HistoryMessage, error)
}

// SeenNoter is implemented by a HistoryReader that remembers what it
// received itself (Telegram's). In a cluster another host may receive a
// conversation's messages (the one poller), so the owner hands the
// adapter each message it takes from the stream; one the adapter saw
// already (the same ID) is not noted twice.
type SeenNoter interface {
	NoteSeen(m Message)
}

// UserNamer is implemented by platforms whose events name a user by id
// alone (Slack's): the engine asks for the display name on the
// conversation's goroutine, when it needs one (the sender header, a
// prompt's answer), never on the accept path. A name that cannot be read
// is the id.
type UserNamer interface {
	UserName(ctx context.Context, userID string) string
}

// DirectMessenger is implemented by adapters that can write to a person
// privately, outside the channel they wrote in: the console's sign-in
// link goes this way, so that nobody else in a channel sees it. Its
// Target is the direct message's own (a reply there stays private).
type DirectMessenger interface {
	SendDirect(ctx context.Context, userID, text string) (Target, error)
}

// ErrNoDirectChat is what SendDirect wraps when the platform refuses to
// open a private chat with the person: on Telegram until they have
// started the bot, on Discord when they allow no direct message from it.
// The caller asks them to write to the bot privately first.
var ErrNoDirectChat = errors.New("the person has no direct chat open with the bot")
