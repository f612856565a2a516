package inbox

import "time"

// Entry is one accepted user message.
type Entry struct {
	ID string // the platform's message identity
	// Where the message was posted.
	Platform, Channel, Thread, MessageID string
	UserID, UserName                     string
	Text                                 string // the message as it will be prompted (before its attachments)
	Received                             time.Time
	// Seq is the platform's order of the message in its conversation
	// (platform.Message.Seq), 0 when it has none: recovery runs the
	// waiting messages in this order, not the order they were journaled
	// in (a retry journaled after a later message).
	Seq uint64
	// DM marks a message of a direct conversation with the bot, so that
	// a replay keeps the sender header and the mentions off there.
	DM bool
	// Accepted is when it was journaled (Append sets it when zero); the
	// seen window counts from it.
	Accepted time.Time
	// UUID is the uuid the message carries to claude, chosen when it is
	// accepted, so that marking its start costs no extra fsync: after a
	// crash, finding it in the Claude Code transcript tells whether the
	// CLI had received the message.
	UUID string
	// Started is set once the message was written to claude
	// (MarkStarted); Replying once its reply was being posted
	// (MarkReplying). Both survive a kill of cc-connect (the write is in
	// the kernel) but not always a power cut (they are not fsynced):
	// recovery asks the transcript, not them, what became of a message.
	Started, Replying bool
	// SteeredInto is the id of the message whose running turn this one
	// was written into (MarkSteered): it is answered with that turn, and
	// after a crash the transcript tells whether the CLI had it.
	SteeredInto string
	// TakenIn: the CLI said it took the steered message into that turn
	// (MarkTakenIn), and the thread was shown so. After a crash the
	// transcript, not this, tells whether it was taken in (the CLI may
	// have taken it in before cc-connect read that it did).
	TakenIn bool
	// Streamed are the messages that show the reply as it was streamed,
	// and that its final text edits (MarkStreamed, or MarkReplying with
	// them); Parts the parts of the reply known to be posted (MarkPart),
	// for a platform that cannot find its own posts. Written, not
	// fsynced, as the marks above: after a kill recovery edits those
	// messages again and posts only the parts not named.
	Streamed []Posted
	Parts    []int
	// ReplyTail is what the reply being posted carried after the agent's
	// text (the context figure), so that recovery posts exactly the same
	// text: the same split into the same parts.
	ReplyTail string
	// Kind is "" for a message to the agent; a caller that orders other
	// work with the messages (a command that switches sessions) names it
	// here, so that a replay keeps that order.
	Kind string
	// Attachments are the files that came with the message. The journal
	// names them (Ref, to fetch them before the turn, again after a
	// replay) or, as versions that fetched at acceptance wrote, where they
	// were stored (Path); never their content.
	Attachments []Attachment
	// Fence is the fencing token of the cluster lease the message was
	// journaled under (a message from a cluster's ingress stream); 0
	// outside a cluster. It tells an entry of this host's tenure from one
	// of an earlier tenure, whose message another host may have answered.
	Fence uint64
	// StreamSeq is the message's sequence in the cluster's ingress stream
	// (0 outside a cluster): a restart asks the stream whether it is still
	// there, that is, whether it was settled.
	StreamSeq uint64
	// Checks are what the conversation reads back from the platform
	// before the message runs ("root": the thread's root must mention the
	// bot, and runs first; "gap": messages of the thread that no instance
	// journaled run first), read on its own goroutine, never on the
	// accept path; a kill before they were made leaves them to make.
	Checks []string
	// Settled is set once the stream confirmed that this host settled the
	// message's event (MarkSettled, after MarkReplying): no host gets it
	// again, so this one alone posts its reply. Written, not fsynced.
	Settled bool
	// Replicated is set with Settled when the reply was written to the
	// cluster before the settlement: the binding's next holder posts it
	// if this host does not, so a host that comes back and finds it
	// gone there knows it was posted. Journals of versions that did not
	// replicate the reply lack it.
	Replicated bool
}

// Posted names one message the bot posted for an entry's reply.
type Posted struct {
	Channel string `json:"channel,omitempty"`
	Thread  string `json:"thread,omitempty"`
	ID      string `json:"id"`
}

// SeenKey is the entry's identity for Seen.
func (e Entry) SeenKey() string { return SeenKey(e.Platform, e.ID) }

// Attachment is one file of a message.
type Attachment struct {
	Name string `json:"name"`           // as the user sent it
	Mime string `json:"mime,omitempty"` // as the platform declared it
	// Ref is the adapter's name for the file (platform.Attachment.Ref):
	// what it needs to download it.
	Ref string `json:"ref,omitempty"`
	// Declared is the size the platform announced; -1 or 0 when unknown.
	Declared int64 `json:"declared,omitempty"`
	// Stored at acceptance by earlier versions (and read back for their
	// journals): where, how big, its SHA-256, whether it is text, or why
	// it was not passed on.
	Path    string `json:"path,omitempty"`
	Size    int64  `json:"size,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	Text    bool   `json:"text,omitempty"`
	Refusal string `json:"refusal,omitempty"`
}

// Stored reports whether the attachment was stored (or refused) when its
// message was accepted, by a version that fetched files then.
func (a Attachment) Stored() bool { return a.Path != "" || a.Refusal != "" }

// Limits bound one inbox. Zero fields take the defaults.
type Limits struct {
	MaxPending int
	MaxBytes   int64
	// CompactBytes: a journal with nothing pending is compacted (its ids
	// moved to the seen file, the file emptied) once it holds this many
	// bytes, and when it is closed; below it, acknowledged records stay,
	// so that a turn's end costs one fsync (the ack), not two.
	CompactBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxPending <= 0 {
		l.MaxPending = DefaultMaxPending
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.CompactBytes <= 0 {
		l.CompactBytes = DefaultCompactBytes
	}
	return l
}

// AckReason says why a message left the inbox.
type AckReason string

const (
	AckResult AckReason = "result" // its turn ended with a result
	AckCancel AckReason = "cancel" // the user cancelled it
	// AckElsewhere: a cluster's event that the binding's later lease
	// holder finished; this host no longer runs it.
	AckElsewhere AckReason = "elsewhere"
	ackUnsaved   AckReason = "unsaved" // its add was written but not synced: the caller was told it failed
)
