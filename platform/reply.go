package platform

import "context"

// Reply says how to post a turn's reply so that a restart between posting
// it and recording that it was posted does not post it twice.
type Reply struct {
	// Key names the reply, every part of it, on the platform: unique per
	// turn (the engine uses the uuid the message went to claude with). It
	// holds no secret: it may be visible to anyone who reads the message's
	// metadata.
	Key string
	// After is the message the reply answers (its Target.MessageID): the
	// reply's parts are looked for after it. "" when none.
	After string
	// Done reports the parts known to be posted already (the engine's
	// journal says so); they are not posted again. Nil: none.
	Done func(part int) bool
	// Landed, when set, is called after each part is posted, with the
	// part's index (from 0) and the number of parts, before the next part
	// goes: the engine writes it down, so that only the window of that one
	// write is left where a platform can neither tag nor find a post.
	Landed func(part, parts int)
	// Again says the reply may have been posted, wholly or in part, before
	// a restart: the adapter first looks for its parts on the platform,
	// where it can, and posts only the others.
	Again bool
}

// ReplyResult says what SendReply did.
type ReplyResult struct {
	Last   Target // the last part posted or found, as Send returns it
	Parts  int    // how many parts the reply has
	Posted int    // how many of them this call posted
	Found  int    // how many it found on the platform already (Again)
}

// Replier is implemented by adapters that can post a reply idempotently.
// SendReply posts text as Send does (split to the platform's limits, the
// same split for the same text), tagging each part with r.Key and its
// index in the way the platform allows, and skipping the parts r.Done
// names and, with r.Again, those it finds posted:
//
//   - Slack: each part carries message metadata naming the key and the
//     part; with Again, the thread (or the DM after r.After) is read with
//     its metadata and the parts found are not posted again.
//   - Discord: each part carries a nonce derived from the key and the part,
//     with enforce_nonce, so that Discord itself returns the earlier
//     message for a repeat within a few minutes; older repeats are posted.
//
// A platform with neither (Telegram's Bot API) is a PartRecorder: the
// engine writes down each part as it lands (Landed) and names them in Done
// after a restart, so that only a part posted just before a kill, whose
// record was not yet written, is posted again.
//
// An error leaves the parts posted so far posted (Landed told which).
// Without Replier the engine posts replies with Send, and after a restart
// posts again a reply that was being posted.
type Replier interface {
	SendReply(ctx context.Context, to Target, text string, r Reply) (ReplyResult, error)
}

// ReplyFinisher is implemented by adapters that stream a reply
// (ReplyEditor) and can turn the streamed messages into the reply for
// good. FinishReply makes msgs show text as SendReply would post it (the
// same split), its edits not waiting behind the pacing of the stream's own
// edits (only behind the platform's real limit), each part tagged with
// r.Key where the platform can tag an edit; parts beyond msgs are posted
// as SendReply posts them (tagged; r.Again, r.Done and r.Landed apply).
// It returns the messages that hold a part, in order: messages of msgs
// beyond them are the caller's to remove. Called again with the same
// messages and text (after a restart, with r.Again) it changes nothing
// the reader sees and posts only the parts not found.
type ReplyFinisher interface {
	FinishReply(ctx context.Context, to Target, msgs []Target, text string, r Reply) ([]Target, error)
}

// PartRecorder is implemented by a Replier that can neither tag its posts
// nor find them again (Telegram): SendReply and FinishReply honour r.Done
// and call r.Landed, so that the engine writes each part down as it lands
// and, after a restart, posts only the parts it has no record of. The
// window left is one journal write per part.
type PartRecorder interface {
	Replier
	RecordsParts()
}
