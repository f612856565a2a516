// Package telegram is the Telegram adapter: it long-polls the Bot API,
// turns private, group, supergroup and forum-topic messages into
// platform.Message values, and renders replies (Telegram HTML, split under
// 4,096 characters), progress edits, typing and permission buttons. It owns
// nothing but the Telegram wire: routing, access control and Claude Code
// belong to the engine.
package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/permbutton"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
	"github.com/cc-connect/cc-connect/platform/internal/seenlog"
)

// Type is the platform type name used in config and in platform.Message.
const Type = "telegram"

// DefaultAPIURL is Telegram's hosted Bot API.
const DefaultAPIURL = "https://api.telegram.org"

// Config configures one Telegram bot.
type Config struct {
	// Name is the instance name from `[[platforms]] name`; it becomes
	// Target.Platform.
	Name string
	// Token is the bot token from @BotFather ("123456:ABC-..."). Secret: it
	// is part of every Bot API URL and is never logged.
	Token string
	// APIURL is the Bot API base URL. Empty means https://api.telegram.org;
	// set it to use a local Bot API server (e.g. "http://127.0.0.1:8081").
	APIURL string
	// PollTimeout is the long-poll timeout of getUpdates. Zero means 30s.
	PollTimeout time.Duration
	// EditInterval is the least time between two edits in one private
	// chat, three times it in a group (Telegram's flood control); edits of
	// a message in between are coalesced, latest wins. Zero means 1s.
	EditInterval time.Duration
}

// Adapter is a running (or ready to run) Telegram bot. It is what the
// engine sees: the platform interfaces below, each a call into one of the
// parts that do the work, so that each part can be read alone:
//
//   - poller (poll.go, gate.go, events.go): the getUpdates loop and its
//     state, the updates it hands to the engine in order;
//   - api (api.go): one Bot API call with its retry, the token kept out of
//     every error;
//   - wire (send.go): the calls everything posts through (send, edit,
//     delete, react, typing), with the edit pacing;
//   - prompts (prompt.go, questions.go): permission and question prompts
//     with buttons, and presses read back as actions;
//   - seen (history.go): what the bot saw and posted, Telegram having no
//     history to read;
//   - files (files.go): attachments downloaded, files posted;
//   - replies (reply.go): turns' replies, through the shared reply kit.
type Adapter struct {
	cfg Config
	log *slog.Logger

	api     *api
	wire    *wire
	poller  *poller
	prompts *prompts
	seen    *seen
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
	_ platform.SeenNoter        = (*Adapter)(nil)
	_ platform.FileSender       = (*Adapter)(nil)
	_ platform.Capable          = (*Adapter)(nil)
	_ platform.ReplyEditor      = (*Adapter)(nil)
	_ platform.Deleter          = (*Adapter)(nil)
	_ platform.PartRecorder     = (*Adapter)(nil)
	_ platform.ReplyFinisher    = (*Adapter)(nil)
)

// New validates cfg and returns an adapter. It makes no network call: the
// token is checked when Run starts.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		return nil, errors.New("telegram: name is required")
	}
	if cfg.Token == "" {
		return nil, fmt.Errorf("telegram %s: token is required", cfg.Name)
	}
	if !strings.Contains(cfg.Token, ":") || strings.ContainsAny(cfg.Token, "/ \t\n") {
		return nil, fmt.Errorf("telegram %s: token does not look like a BotFather token (\"<bot id>:<secret>\")", cfg.Name)
	}
	apiURL := strings.TrimRight(cfg.APIURL, "/")
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram %s: api_url %q is not an http(s) URL", cfg.Name, cfg.APIURL)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = platform.DefaultEditInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("platform", cfg.Name)
	client := &http.Client{}
	// Built by hand rather than with tgbotapi.NewBotAPI, which calls getMe:
	// a constructor must not touch the network.
	base := &tgbotapi.BotAPI{Token: cfg.Token, Client: client}
	base.SetAPIEndpoint(apiURL + "/bot%s/%s")
	ap := &api{
		token:               cfg.Token,
		log:                 log,
		base:                base,
		httpClient:          client,
		requestTimeout:      60 * time.Second,
		retryAfterUnit:      time.Second,
		backoffMin:          time.Second,
		backoffMax:          time.Minute,
		maxTransientRetries: 3,
	}
	self := &botSelf{}
	sn := &seen{self: self, log: seenlog.New(historyConversations, historyPerChat)}
	w := &wire{
		name:      cfg.Name,
		log:       log,
		api:       ap,
		seen:      sn,
		edits:     coalesce.New(coalesce.NewScopedInterval(editSpacing(cfg.EditInterval))),
		reactions: recent.New[string](4096),
	}
	fs := &files{name: cfg.Name, apiURL: apiURL, api: ap, wire: w, seen: sn, log: log}
	ps := &prompts{name: cfg.Name, log: log, wire: w, open: recent.New[string](1024), refs: permbutton.NewRefs(maxCallbackData, 1024)}
	a := &Adapter{
		cfg:     cfg,
		log:     log,
		api:     ap,
		wire:    w,
		prompts: ps,
		seen:    sn,
		files:   fs,
		poller: &poller{
			cfg:        cfg,
			log:        log,
			api:        ap,
			self:       self,
			seen:       sn,
			norm:       normalizer{name: cfg.Name, log: log, self: self, files: fs},
			buttons:    ps,
			state:      connstate.New(cfg.Name),
			retryPause: defaultRetryPause,
		},
	}
	a.replies = replykit.New(cfg.Name, replyWire{w}, log)
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the polling state for !status.
func (a *Adapter) Status() platform.ConnStatus { return a.poller.state.Get() }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.poller.state.SetObserver(o) }

// SetGate makes Run poll only while this host holds g's tenure. Call it
// before Run; without it the adapter polls always, as a host alone does.
func (a *Adapter) SetGate(g platform.Gate) { a.poller.gate = g }

// Run checks the token (getMe), then long-polls getUpdates until ctx is
// cancelled, handing messages and button presses to h in order (with a
// gate, only while this host is the bot's poller: gate.go). Polling
// trouble is retried with capped, jittered backoff and reported through
// Status and the log; only a refused token ends Run with an error.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error { return a.poller.run(ctx, h) }

// Send posts text (Claude Code's Markdown) as Telegram HTML, split under
// 4,096 characters without breaking code blocks. A part whose HTML Telegram
// refuses is sent again as plain text, so a reply is never lost to
// formatting. It returns the last posted message.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.wire.send(ctx, to, nil, text)
}

// SendMentioning is Send starting with a text mention of each user (a
// tg://user link on their name), which notifies them, and only them.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	for _, m := range mentions {
		if _, err := strconv.ParseInt(m.UserID, 10, 64); err != nil {
			return platform.Target{}, fmt.Errorf("telegram send to %s: %q is not a Telegram user id", to.Channel, m.UserID)
		}
	}
	return a.wire.send(ctx, to, mentions, text)
}

// Edit replaces the text of a posted message (progress updates). Edits in
// one chat are spaced by EditInterval (three times that in a group); an edit overtaken by a newer one
// while it waits is skipped, the newest is always applied. Text longer than
// one message is cut, since an edit cannot add messages.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	return a.wire.edit(ctx, msg, text)
}

// Delete removes one of the bot's messages; one already gone is fine.
func (a *Adapter) Delete(ctx context.Context, msg platform.Target) error {
	if err := a.wire.delete(ctx, msg); err != nil {
		return err
	}
	a.replies.Forget(msg)
	return nil
}

// Typing shows "typing…" in the chat (or topic) for about five seconds.
func (a *Adapter) Typing(ctx context.Context, to platform.Target) error {
	return a.wire.typing(ctx, to)
}

// React sets the bot's reaction on a message (setMessageReaction).
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.react(ctx, msg, name)
}

// Unreact removes the bot's reaction if it is still name.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.unreact(ctx, msg, name)
}

// Capabilities: Telegram edits messages (flood control allows about one a
// second in a private chat, fewer in groups; the pacer holds each chat to
// that and waits out a 429), has inline keyboards but no select menus
// (a multi-select question gets a toggle per option and Done), and
// deletes the bot's posts. EditInterval gives a streamed reply half a
// private chat's budget; in a group the pacer spaces it further.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.MessageLimit = splitLimit - 200
	c.EditRate = platform.EditRate{Interval: a.cfg.EditInterval} // three times it in a group: editSpacing
	c.EditInterval = 2 * a.cfg.EditInterval
	c.MultiSelect = false
	c.OptionLabelLimit = optionLabelLimit
	return c
}

// EditReply makes msgs show text as Send would post it: a part a message
// already shows is left alone, a changed one is edited (paced per chat; a
// newer edit of the same message replaces one that waits), and parts
// beyond msgs are posted after them.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	return a.replies.EditReply(ctx, to, msgs, text)
}

// RecordsParts says the engine must record each part (platform.PartRecorder).
func (a *Adapter) RecordsParts() {}

// SendReply posts text as Send does, the first part replying to r.After,
// skipping the parts r.Done names and calling r.Landed after each part.
// r.Key and r.Again change nothing: Telegram has no way to tag or find a
// post.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	return a.replies.SendReply(ctx, to, text, r)
}

// FinishReply makes the streamed messages msgs show the reply
// (platform.ReplyFinisher): each gets its part through editMessageText (an
// edit to what it shows already is "not modified", which is fine, so that
// recovery can apply it again), and the parts beyond msgs are posted as
// SendReply posts them, r.Done and r.Landed applying. The edits keep the
// chat's spacing: it is Telegram's own limit (about one message a second in
// a chat, twenty a minute in a group), not a pacing of the stream's.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	return a.replies.FinishReply(ctx, to, msgs, text, r)
}

// AskPermission posts the permission request with Allow, Always allow and
// Deny buttons; presses come back through Handler.HandleAction. The
// request's text is shown whole: when it is over one message, the parts
// before the last are posted first and the buttons go under the last.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	return a.prompts.askPermission(ctx, to, p)
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons, so nobody answers twice. A prompt with no room left for the
// outcome keeps its text, and the outcome follows as a message of its own.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	return a.prompts.resolvePermission(ctx, prompt, outcome)
}

// AskQuestions posts Claude's questions with an inline keyboard: a row per
// option of each open question (for a multi-select question a toggle
// showing ☑ or ☐, and Done), then Dismiss. Text over one message goes
// first as messages of its own; the keyboard goes under the last part.
func (a *Adapter) AskQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	return a.prompts.askQuestions(ctx, to, p)
}

// UpdateQuestions redraws the prompt's message with p's state: answered
// questions lose their buttons, a closed prompt all of them. When the text
// is over one message, the prompt's message shows its last part as it is
// now.
func (a *Adapter) UpdateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	return a.prompts.updateQuestions(ctx, prompt, p)
}

// History returns a chat's (or forum topic's) earlier messages as the bot
// saw them (platform.HistoryReader). The Bot API has no way to read a
// chat's history, so this is what reached the bot since the adapter
// started (with privacy mode on, in groups only commands, mentions and
// replies to the bot) and what the bot posted, the latest 200 of each
// chat; it is empty after a restart. Nothing in a Telegram chat is a
// thread's root.
func (a *Adapter) History(_ context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	return a.seen.history(conv, q), nil
}

// NoteSeen remembers a message another host received (in a cluster, the
// poller), for History; one seen already is not noted twice.
func (a *Adapter) NoteSeen(m platform.Message) { a.seen.noteSeen(m) }

// OpenAttachment downloads a file again from its Ref (its file_id), for a
// message replayed after a restart.
func (a *Adapter) OpenAttachment(ctx context.Context, at platform.Attachment) (io.ReadCloser, error) {
	return a.files.open(ctx, at.Ref)
}

// MaxFileSize is the Bot API's limit on a document.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return DocumentLimit }

// SendFile sends f with sendPhoto when it is a PNG, JPEG or GIF picture
// Telegram shows as a photo, else with sendDocument, in the chat's topic
// when set; the comment is the caption when it fits (1,024 characters),
// else it goes first as a message of its own. A photo Telegram refuses is
// sent again as a document.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	return a.files.send(ctx, to, f)
}
