// Package discord is the Discord adapter: it holds a gateway connection
// (guild messages, direct messages, message content), turns messages in
// channels, threads and DMs into platform.Message values, and renders
// replies (split under 2,000 characters), progress edits, typing, reactions
// and permission buttons through the REST API. It owns nothing but the
// Discord wire: routing, access control and Claude Code belong to the
// engine.
package discord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// Type is the platform type name used in config and in platform.Message.
const Type = "discord"

// Intents are the gateway intents cc-connect asks for. MessageContent is
// privileged: it must be enabled for the bot in the developer portal, or
// Discord closes the gateway with 4014.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages |
	discordgo.IntentsDirectMessages | discordgo.IntentsMessageContent

// Sentinel errors Run returns: no retry can fix them, the admin must.
var (
	// ErrUnauthorized means Discord refused the token.
	ErrUnauthorized = errors.New("discord refused the bot token (check platforms token)")
	// ErrIntentsDisallowed means the MESSAGE_CONTENT intent is not enabled
	// for the bot in the developer portal (gateway close code 4014).
	ErrIntentsDisallowed = errors.New("discord refused the gateway intents: enable MESSAGE CONTENT INTENT for the bot in the developer portal")
)

// Config configures one Discord bot.
type Config struct {
	// Name is the instance name from `[[platforms]] name`; it becomes
	// Target.Platform.
	Name string
	// Token is the bot token from the developer portal (without "Bot ").
	// Secret: never logged.
	Token string
	// APIURL replaces https://discord.com for REST calls and gateway
	// discovery (a proxy or a test server). Empty means Discord itself.
	APIURL string
	// ThreadPerMessage opens a thread for each top-level channel message the
	// bot answers, so each becomes its own session; without it a channel
	// is one session and existing threads are sessions of their own.
	ThreadPerMessage bool
	// EditInterval is the least time between two edits in one channel
	// (Discord's bucket is about five edits per five seconds a channel);
	// edits of a message in between are coalesced, latest wins. Zero
	// means 1s.
	EditInterval time.Duration
}

// Adapter is a running (or ready to run) Discord bot. It is what the
// engine sees: the platform interfaces below, each a call into one of the
// parts that do the work, so that each part can be read alone:
//
//   - gateway (gateway.go, gate.go, events.go): the gateway connection and
//     its state, the events it hands to the engine in order;
//   - wire (wire.go): the REST calls everything posts through (post, edit,
//     delete, reactions, typing, the thread planned for a message), with
//     the retry and the edit pacing;
//   - prompts (prompt.go, questions.go): permission and question prompts
//     with buttons, and presses read back as actions;
//   - reader (events.go, history.go): messages read by one set of rules,
//     as they come and from a channel's history, and what a channel is;
//   - files (files.go): attachments downloaded, files posted;
//   - replies (reply.go): turns' replies, through the shared reply kit.
type Adapter struct {
	cfg Config
	log *slog.Logger

	wire    *wire
	gateway *gateway
	prompts *prompts
	reader  *reader
	files   *files
	replies *replykit.Kit
}

var (
	_ platform.Adapter          = (*Adapter)(nil)
	_ platform.Editor           = (*Adapter)(nil)
	_ platform.Reactor          = (*Adapter)(nil)
	_ platform.Typer            = (*Adapter)(nil)
	_ platform.Prompter         = (*Adapter)(nil)
	_ platform.QuestionAsker    = (*Adapter)(nil)
	_ platform.Statuser         = (*Adapter)(nil)
	_ platform.Observed         = (*Adapter)(nil)
	_ platform.MentionSender    = (*Adapter)(nil)
	_ platform.AttachmentOpener = (*Adapter)(nil)
	_ platform.HistoryReader    = (*Adapter)(nil)
	_ platform.FileSender       = (*Adapter)(nil)
	_ platform.Capable          = (*Adapter)(nil)
	_ platform.ReplyEditor      = (*Adapter)(nil)
	_ platform.Deleter          = (*Adapter)(nil)
	_ platform.Replier          = (*Adapter)(nil)
	_ platform.ReplyFinisher    = (*Adapter)(nil)
)

// New validates cfg and prepares a session. It makes no network call.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("discord: name is required")
	}
	token := strings.TrimSpace(strings.TrimPrefix(cfg.Token, "Bot "))
	if token == "" {
		return nil, fmt.Errorf("discord %s: token is required", cfg.Name)
	}
	cfg.Token = token
	var base *url.URL
	if cfg.APIURL != "" {
		u, err := url.Parse(strings.TrimRight(cfg.APIURL, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("discord %s: api_url %q is not an http(s) URL", cfg.Name, cfg.APIURL)
		}
		base = u
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = platform.DefaultEditInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("platform", cfg.Name)
	transport := &rewriteTransport{base: base, next: http.DefaultTransport}
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord %s: %w", cfg.Name, err)
	}
	conns := newConnTracker()
	// REST calls carry ctx; the timeout bounds the few the library makes
	// without one (gateway discovery inside Open). Downloads use
	// files' client, bounded by their ctx only.
	s.Client = &http.Client{Transport: transport, Timeout: time.Minute}
	s.Dialer = &websocket.Dialer{NetDialContext: conns.dial, HandshakeTimeout: 30 * time.Second, Proxy: http.ProxyFromEnvironment}
	s.Identify.Intents = Intents
	// Rate limits come back as errors that rest() waits out under ctx
	// (retryPolicy); the library's own retry sleeps without any way to
	// cancel it.
	s.ShouldRetryOnRateLimit = false
	// Reconnecting is Run's job, with capped backoff and status reporting;
	// the library's loop would outlive Run.
	s.ShouldReconnectOnError = false
	// Handlers run on the gateway reader, in order: each hands its event
	// to the engine and returns, so that the engine gets a conversation's
	// messages in the order Discord sent them.
	s.SyncEvents = true
	s.LogLevel = -1 // the library logs gateway URLs and payloads; we log ourselves

	self := &botSelf{}
	threads := newThreadBook(4096)
	w := &wire{
		name:           cfg.Name,
		log:            log,
		session:        s,
		threads:        threads,
		requestTimeout: 30 * time.Second,
		backoffMin:     time.Second,
		backoffMax:     2 * time.Minute,
		edits:          coalesce.New(coalesce.NewInterval(cfg.EditInterval)),
	}
	fs := &files{name: cfg.Name, http: &http.Client{Transport: transport}, wire: w, log: log}
	rd := &reader{cfg: cfg, log: log, self: self, wire: w, threads: threads, files: fs}
	ps := &prompts{
		name:     cfg.Name,
		log:      log,
		wire:     w,
		reader:   rd,
		answered: recent.New[struct{}](4096),
		open:     recent.New[postedPrompt](1024),
		refs:     permbutton.NewRefs(maxCustomID, 1024),
	}
	g := &gateway{
		cfg:          cfg,
		log:          log,
		wire:         w,
		self:         self,
		conns:        conns,
		reader:       rd,
		buttons:      ps,
		state:        connstate.New(cfg.Name),
		disconnected: make(chan struct{}, 1),
		runCtx:       context.Background(),
	}
	s.AddHandler(g.onReady)
	s.AddHandler(g.onMessageCreate)
	s.AddHandler(g.onInteractionCreate)
	s.AddHandler(g.onDisconnect)
	a := &Adapter{cfg: cfg, log: log, wire: w, gateway: g, prompts: ps, reader: rd, files: fs}
	a.replies = replykit.New(cfg.Name, replyWire{w}, log)
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the gateway state for !status.
func (a *Adapter) Status() platform.ConnStatus { return a.gateway.state.Get() }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.gateway.state.SetObserver(o) }

// SetGate makes Run open the gateway only while this host holds g's
// tenure (a cluster: gate.go). Call it before Run; without it the adapter
// always connects, as a host alone does.
func (a *Adapter) SetGate(g platform.Gate) { a.gateway.gate = g }

// Run connects to the gateway and hands messages and button presses to h
// in order until ctx is cancelled. A dropped connection is reopened
// (resuming the session when Discord allows) with capped, jittered backoff
// and reported through Status and the log; a refused token or intents end
// Run with an error.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error { return a.gateway.run(ctx, h) }

// Send posts text (Markdown, which Discord renders) split under 2,000
// characters without breaking code blocks, and returns the last message.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.wire.send(ctx, to, nil, text)
}

// SendMentioning is Send starting with a mention of each user (<@id>),
// which the first part's allowed_mentions lets notify them, and only them.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	ids := make([]string, 0, len(mentions))
	for _, m := range mentions {
		if !snowflakeRE.MatchString(m.UserID) {
			return platform.Target{}, fmt.Errorf("discord send to %s: %q is not a Discord user id", to.Channel, m.UserID)
		}
		ids = append(ids, m.UserID)
	}
	return a.wire.send(ctx, to, ids, text)
}

var snowflakeRE = regexp.MustCompile(`^[0-9]{1,20}$`)

// Edit replaces a posted message's content (progress updates). Edits in
// one channel are spaced by EditInterval; an edit overtaken while it waits
// is skipped, the newest always applied. Text beyond one message is cut.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	if parts := splitForDiscord(discordMarkdown(text)); len(parts) > 0 {
		text = parts[0]
	}
	return a.wire.edit(ctx, msg, text, text, nil)
}

// Delete removes one of the bot's messages; one already gone is fine.
func (a *Adapter) Delete(ctx context.Context, msg platform.Target) error {
	if err := a.wire.delete(ctx, msg); err != nil {
		return err
	}
	a.replies.Forget(msg)
	return nil
}

// Typing shows "<bot> is typing…" for about ten seconds.
func (a *Adapter) Typing(ctx context.Context, to platform.Target) error {
	return a.wire.typing(ctx, to)
}

// React adds the bot's reaction to a message.
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.react(ctx, msg, name)
}

// Unreact removes the bot's own reaction.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.unreact(ctx, msg, name)
}

// Capabilities: Discord edits messages, within a bucket of about five
// edits per five seconds for each channel (the adapter spaces every edit
// in a channel EditInterval apart, one a second by default, and waits out
// a 429); it has buttons and multi-select menus and deletes the bot's
// posts. EditInterval gives a streamed reply half the channel's budget, so
// that progress and prompts in the same channel still get through.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.MessageLimit = splitLimit - 100
	c.EditRate = platform.EditRate{Interval: a.cfg.EditInterval}
	c.EditInterval = 2 * a.cfg.EditInterval
	c.MultiSelect = true
	c.OptionLabelLimit = buttonLabelMax
	return c
}

// EditReply makes msgs show text as Send would post it: a part a message
// already shows is left alone, a changed one is edited (paced per
// channel; a newer edit of the same message replaces one that waits), and
// parts beyond msgs are posted after them.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	return a.replies.EditReply(ctx, to, msgs, text)
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

// AskPermission posts the request with Allow, Always allow and Deny
// buttons; presses come back through Handler.HandleAction with the
// presser's user id. The request's text is shown whole: when it is over
// one message, the parts before the last are posted first and the buttons
// go under the last.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	return a.prompts.askPermission(ctx, to, p)
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons. A prompt with no room left for the outcome keeps its text, and
// the outcome follows as a message of its own.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	return a.prompts.resolvePermission(ctx, prompt, outcome)
}

// AskQuestions posts Claude's questions: the text of all of them, then an
// action row per open question (a button per option, or a multi-select
// menu whose closing answers it) and one with Dismiss. Text over one
// message goes first as messages of its own; the components go under the
// last part.
func (a *Adapter) AskQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	return a.prompts.askQuestions(ctx, to, p)
}

// UpdateQuestions redraws the prompt's message: answered questions lose
// their components, a closed prompt all of them. Only the message holding
// the components is edited: when the text is over one message, it shows
// the last part of the text as it is now.
func (a *Adapter) UpdateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	return a.prompts.updateQuestions(ctx, prompt, p)
}

// History reads a conversation's earlier messages (platform.HistoryReader):
// a thread's messages, preceded by the message it was started from (which
// lives in the parent channel), or a channel's or DM's own. The bot needs
// View Channel and Read Message History there: without the latter Discord
// shows no messages, which is no error.
func (a *Adapter) History(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	return a.reader.history(ctx, conv, q)
}

// OpenAttachment downloads a file again from its Ref (its CDN URL), for a
// message replayed after a restart; Discord's links expire after a while,
// and then the download fails.
func (a *Adapter) OpenAttachment(ctx context.Context, at platform.Attachment) (io.ReadCloser, error) {
	return a.files.download(ctx, at.Ref)
}

// MaxFileSize is what Discord takes in a server without boosts.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return UploadLimit }

// SendFile posts f as a message with an attachment, in the conversation's
// thread (opening a planned one), the comment as its content when it fits
// in one message, else the comment's parts first. Nobody is mentioned.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	return a.files.send(ctx, to, f)
}
