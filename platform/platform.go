// Package platform defines the normalized message and the contracts between
// chat platform adapters (platform/slack, platform/discord, platform/telegram,
// platform/local) and the engine. It owns no network code and knows nothing
// about Claude Code: adapters turn wire events into Message values and render
// replies; the engine decides what to do with them.
package platform

import (
	"context"
	"io"
	"time"
)

// Target says where a reply goes, or which posted message an edit, reaction
// or button refers to. Platform is the adapter instance name from the config
// (`[[platforms]] name`), not the platform type.
type Target struct {
	Platform  string // adapter instance name, e.g. "slack-main"
	Channel   string // channel, chat or DM id; "local" for the terminal
	Thread    string // thread ts, Discord thread id, Telegram forum topic id; "" when none
	MessageID string // a specific message (for edits, reactions, replies); "" when not about one
}

// Attachment is a file a user shared with a message. The adapter knows how
// to fetch it (with its token); the engine, which knows the workspace,
// decides whether to download it (size limit) and where (the workspace's
// private attachments folder). It downloads it after the message is
// journaled, before the message's turn, on the conversation's goroutine.
type Attachment struct {
	Name string // original file name as the user sent it
	Size int64  // as the platform reports it; -1 when unknown
	Mime string
	// Ref names the file for the adapter's AttachmentOpener: what the
	// engine journals so that a message replayed after a restart, whose
	// Open is gone, can fetch the file again. It must hold no secret (the
	// journal is a file). "" when the adapter cannot fetch it again.
	Ref string
	// Open streams the file's content. The caller closes the reader and
	// enforces its own size limit while reading.
	Open func(ctx context.Context) (io.ReadCloser, error)
}

// Message is one normalized inbound chat message.
type Message struct {
	// ID is the platform's identity for this message (Slack channel+ts,
	// Discord message id, Telegram update id). The engine dedupes on it, so
	// a redelivery must carry the same ID.
	ID string
	// Target is where the message was posted; replies go to Target with
	// MessageID cleared. Target.Thread is set by the adapter to the
	// conversation the message belongs to (for Slack, the thread a top-level
	// message starts).
	Target      Target
	UserID      string
	UserName    string
	Text        string
	IsDM        bool // a direct/private conversation with the bot
	Mentioned   bool // the bot was mentioned (or the message replies to the bot)
	IsBot       bool // sent by a bot (adapters drop these; the engine re-checks)
	Attachments []Attachment
	Received    time.Time
	// Seq is the platform's order of the message within its conversation
	// (Slack's ts in microseconds, a Discord snowflake, a Telegram
	// message id): of two messages of one conversation the later has the
	// larger Seq. The engine runs the messages waiting in a conversation
	// in this order, whatever order they were delivered in (a retry after
	// a restart comes late). Zero when the adapter knows no order (the
	// terminal, whose messages cannot overtake each other).
	Seq uint64
}

// Choice is a user's answer to a permission request.
type Choice string

const (
	ChoiceAllow       Choice = "allow"
	ChoiceAlwaysAllow Choice = "always"
	ChoiceDeny        Choice = "deny"
)

// Action is a button press (or equivalent) on a permission prompt.
type Action struct {
	// ID is the platform's identity of the press, the same on a
	// redelivery (a cluster's stream drops the second copy by it); "" when
	// the platform gives none.
	ID string
	// Target is the prompt message the button belongs to.
	Target    Target
	UserID    string
	UserName  string
	RequestID string // the PermissionPrompt.RequestID the prompt carried
	Choice    Choice
	// Question and Options, for a press on a question prompt
	// (QuestionAsker), say which question and which of its options the
	// press chose.
	Question int
	Options  OptionSet
}

// Status is what the engine did with a message.
type Status int

const (
	// Queued: the message is accepted and on disk (journaled, or for a
	// command that acts at once, its id is); the conversation's goroutine
	// runs it and posts what it has to say, the notice of its place in the
	// queue too.
	Queued Status = iota + 1
	// Duplicate: the same message (Message.ID) was accepted before, or
	// its other copy was being accepted and is on disk now.
	Duplicate
	// Refused: not accepted (Result.Reason says why); the user is told,
	// by the conversation's goroutine, where the engine says anything.
	Refused
	// Ignored: not for the engine (a bot, an unbound channel, no mention).
	Ignored
)

func (s Status) String() string {
	switch s {
	case Queued:
		return "queued"
	case Duplicate:
		return "duplicate"
	case Refused:
		return "refused"
	case Ignored:
		return "ignored"
	}
	return "unknown"
}

// Result says what the engine did with a message, in the manner of a
// bridge's event loop that reports what it did with an event. Whatever it
// is, the engine has made it durable (or needed nothing durable) before it
// returns: the adapter may acknowledge the platform's event.
type Result struct {
	Status Status
	// Position, for Queued, is the message's place in its conversation's
	// queue: 0 when it runs (or acts) at once, n when n-1 messages wait
	// before it behind the running turn.
	Position int
	// Reason, for Refused and Ignored, says why, for the adapter's log.
	Reason string
}

// Handler receives normalized input from an adapter. HandleMessage does
// only what durability needs (dedupe, journal with one fsync) and returns
// what it did; notices, downloads and the turn come later, on the
// conversation's own goroutine, so one slow conversation never holds up an
// adapter's others. An error means the message was not handled (ctx ended,
// say, while its other copy was being accepted): the adapter must not
// acknowledge it, and the platform delivers it again.
type Handler interface {
	HandleMessage(ctx context.Context, m Message) (Result, error)
	HandleAction(ctx context.Context, a Action) error
}

// Adapter is what every platform must provide. Run blocks until ctx is
// cancelled or a fatal error occurs; connection trouble is retried inside Run
// and reported through logs and Status, not returned.
type Adapter interface {
	// Name is the instance name from the config.
	Name() string
	Run(ctx context.Context, h Handler) error
	// Send posts text to the target, split to the platform's size limits
	// (never breaking a code block), and returns the last posted message.
	Send(ctx context.Context, to Target, text string) (Target, error)
}

// Editor is implemented by platforms that can edit a posted message in place
// (progress and status messages). Without it the engine posts new messages
// sparingly instead.
type Editor interface {
	Edit(ctx context.Context, msg Target, text string) error
}

// Reactor is implemented by platforms with emoji reactions. Names are
// neutral: "eyes", "white_check_mark", "x".
type Reactor interface {
	React(ctx context.Context, msg Target, name string) error
	Unreact(ctx context.Context, msg Target, name string) error
}

// Typer is implemented by platforms that show a typing indicator.
type Typer interface {
	Typing(ctx context.Context, to Target) error
}

// PermissionPrompt is a tool permission request rendered for the chat.
type PermissionPrompt struct {
	RequestID string
	Tool      string // the tool's name, for logs; Text names it too
	// Text is everything the approver must read before deciding, in
	// Markdown: what the tool would do, with Claude's input in fenced code
	// blocks whose fence is longer than any backtick run inside (so the
	// input cannot close them), already free of control and invisible
	// characters. An adapter shows all of it in its own markup, never cut:
	// when it is over the platform's limit for one message, the parts
	// before the last go as messages of their own and the buttons go
	// under the last.
	Text string
	// Choices, when set, are the prompt's buttons instead of Allow,
	// Always allow and Deny (a plan to approve): each press comes back as
	// an Action with its Choice.
	Choices []PromptChoice
}

// Prompter is implemented by platforms with interactive buttons. Presses
// come back through Handler.HandleAction. Without it the engine posts the
// prompt as text and users answer with !allow / !deny.
type Prompter interface {
	AskPermission(ctx context.Context, to Target, p PermissionPrompt) (Target, error)
	// ResolvePermission edits the prompt to show who decided what and
	// removes the buttons.
	ResolvePermission(ctx context.Context, prompt Target, outcome string) error
}

// AttachmentOpener is implemented by adapters that can fetch a file again
// from its Attachment.Ref, without the Open of the message it came with
// (a message replayed after a restart). Without it such a file is named
// to Claude as not passed on.
type AttachmentOpener interface {
	OpenAttachment(ctx context.Context, a Attachment) (io.ReadCloser, error)
}

// Mention is a user cc-connect itself addresses in a message it posts, so
// that the platform notifies them. Nothing in a message's text can mention
// anyone (adapters escape Slack's <@U…>, send Discord's allowed_mentions
// with nothing to parse, keep Telegram from finding @names): a mention is
// made only this way, by cc-connect's own choice, never from Claude's text.
type Mention struct {
	UserID   string // the platform's user id, as in Message.UserID
	UserName string // shown where the platform needs a label (Telegram)
}

// MentionSender is implemented by platforms that can address a message to
// users. SendMentioning posts text as Send does, starting with a mention
// of each user, which notifies them and nobody else. An invalid user id is
// an error, not a message without the mention. Without it, the engine
// sends the text without mentions.
type MentionSender interface {
	SendMentioning(ctx context.Context, to Target, mentions []Mention, text string) (Target, error)
}

// Statuser is implemented by adapters that report their connection's
// state, for !status and the metrics (ObserveStatus).
type Statuser interface {
	Status() ConnStatus
}

// ConnState is where an adapter's connection stands, in the manner of a
// bridge's states: the metrics and !status read the state, never words.
type ConnState int

const (
	// NotStarted: Run has not been called.
	NotStarted ConnState = iota
	// Connecting: Run is making its first connection.
	Connecting
	// Connected: messages come in.
	Connected
	// Standby: another host of a cluster receives (ConnStatus.Detail says
	// so); this one sends and waits to take over.
	Standby
	// TransientDisconnect: the connection is lost or cannot be made now;
	// the adapter retries with backoff.
	TransientDisconnect
	// BadCredentials: the platform refused the token. No retry helps: the
	// admin must fix the token.
	BadCredentials
	// Failing: the platform, or the cluster, refuses for another reason
	// that the admin must fix (Discord's intents, another process polling
	// a Telegram token, a webhook set on it); the adapter may keep trying.
	Failing
	// Stopped: nothing more comes in: Run returned, or the terminal's
	// input ended.
	Stopped
)

// String is the state in the words !status uses.
func (s ConnState) String() string {
	switch s {
	case NotStarted:
		return "not started"
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Standby:
		return "standby"
	case TransientDisconnect:
		return "reconnecting"
	case BadCredentials, Failing:
		return "error"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// Failure reports whether s is a connection failure (the metrics count
// each change to one).
func (s ConnState) Failure() bool {
	return s == TransientDisconnect || s == BadCredentials || s == Failing
}

// ConnStatus is an adapter's connection state and, apart from it, the text
// that says why (an error, the host that receives).
type ConnStatus struct {
	State  ConnState
	Detail string // "" when the state says it all
}

// String is the status as !status shows it: "connected",
// "reconnecting: connection lost".
func (s ConnStatus) String() string {
	if s.Detail == "" {
		return s.State.String()
	}
	return s.State.String() + ": " + s.Detail
}

// Observer counts what happens on a platform connection that only the
// adapter sees; the binary passes its metrics. Methods may be called from
// any goroutine. (The engine counts the messages, actions and failed sends
// itself, so adapters do not report those.)
type Observer interface {
	// PlatformError counts a connection-level failure: a connect or
	// read that failed, a session the platform closed.
	PlatformError(platform string)
	// Reconnect counts a new connection after a lost one.
	Reconnect(platform string)
}

// Observed is implemented by adapters that report connection errors and
// reconnects. SetObserver is called before Run.
type Observed interface {
	SetObserver(o Observer)
}
