// Package slack is the Slack adapter: it receives messages and button
// presses over Socket Mode, turns them into platform.Message and
// platform.Action values, and posts, edits and reacts through the Web API.
// It owns Slack's wire details (envelopes, acks, redeliveries, mrkdwn, Block
// Kit, rate limits) and nothing else: who may talk to the bot and what a
// message means is the engine's business.
package slack

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

	"github.com/slack-go/slack"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/backoff"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
	"github.com/cc-connect/cc-connect/platform/internal/connstate"
	"github.com/cc-connect/cc-connect/platform/internal/recent"
	"github.com/cc-connect/cc-connect/platform/internal/replykit"
)

// Type is the platform type this adapter reports in Message.Type.
const Type = "slack"

// DefaultAPIURL is the Web API base used when Config.APIURL is empty.
const DefaultAPIURL = slack.APIURL

// DefaultEditRate is how fast chat.update goes when the config names
// nothing (edits_per_minute, edit_burst, edit_interval): Slack's Tier 3,
// which chat.update is in, allows a workspace about 50 a minute; three
// may go back to back, a second apart in one channel. It is the one place
// these defaults are written (config.example.toml shows them, and a test
// holds it to that).
var DefaultEditRate = platform.EditRate{PerMinute: 50, Burst: 3, Interval: platform.DefaultEditInterval}

// Config configures one Slack adapter instance (one Slack app in one
// workspace).
type Config struct {
	// Name is the instance name from the config (`[[platforms]] name`);
	// it is the Platform of every Target this adapter produces.
	Name string
	// BotToken is the bot user OAuth token (xoxb-…) for the Web API.
	// The config loader checks its form (config.SlackBotTokenPrefix).
	BotToken string
	// AppToken is the app-level token (xapp-…, scope connections:write)
	// that opens Socket Mode connections (config.SlackAppTokenPrefix).
	AppToken string
	// APIURL is the Web API base URL, e.g. https://slack-gov.com/api/ for
	// GovSlack, a proxy, or a test server. Empty means
	// https://slack.com/api/. The Socket Mode URL comes from
	// apps.connections.open on this base.
	APIURL string
	// EditsPerMinute is the budget for chat.update across the workspace
	// (Slack's Tier 3 allows about 50 a minute). These five are
	// [[platforms]] keys of the same names (edit_interval, reconnect_min,
	// …). Zero, for each of the three edit settings, means
	// DefaultEditRate's.
	EditsPerMinute int
	// EditBurst is how many edits may go out back to back before
	// EditsPerMinute applies.
	EditBurst int
	// EditInterval is the least time between two edits in one channel.
	EditInterval time.Duration
	// ReconnectMin and ReconnectMax bound the exponential backoff (with
	// jitter) between attempts to reach Slack when the first auth.test or
	// a Socket Mode session fails. Zero means 1s and 2m. Drops of an
	// established connection are redialled at once by the Socket Mode
	// client, then with its own backoff.
	ReconnectMin time.Duration
	ReconnectMax time.Duration
	// AckHandledOnly acks a message's envelope only once the handler
	// took it, never at the ack deadline: a cluster host's handler
	// publishes to the cluster's stream, and an envelope it could not
	// publish must come again, from Slack, perhaps to another host
	// (docs/cluster.md).
	AckHandledOnly bool
	// HTTPClient carries Web API calls and file downloads. Nil means a
	// client with a 60 second timeout.
	HTTPClient *http.Client
}

// Sentinel errors callers can branch on.
var (
	// ErrInvalidConfig wraps every configuration problem New reports; the
	// config loader shows it to the admin.
	ErrInvalidConfig = errors.New("invalid slack config")
	// ErrUntrustedFileURL is returned by Attachment.Open when Slack handed
	// us a download URL on a host the bot token must not be sent to.
	ErrUntrustedFileURL = errors.New("file URL is not on a Slack host")
)

// Adapter is one Slack app connected to one workspace. It is what the
// engine sees: the platform interfaces below, each a call into one of the
// parts that do the work, so that each part can be read alone:
//
//   - socket (socket.go, events.go): the Socket Mode connection and its
//     state, the event pump that hands messages and presses to the engine;
//   - wire (wire.go): the Web API calls everything posts through (post,
//     update, delete, reactions), with the retry and the edit pacing;
//   - prompts (prompt.go, questions.go): permission and question prompts
//     with buttons, and presses read back as actions;
//   - reads (history.go): what the adapter reads of Slack (user names, a
//     conversation's history, a reply's parts after a restart);
//   - files (files.go): files shared with a message, and files posted;
//   - replies (reply.go): turns' replies, through the shared reply kit.
type Adapter struct {
	cfg Config
	log *slog.Logger

	wire    *wire
	socket  *socket
	prompts *prompts
	reads   *reads
	files   *files
	replies *replykit.Kit
}

var (
	_ platform.Adapter          = (*Adapter)(nil)
	_ platform.Editor           = (*Adapter)(nil)
	_ platform.Reactor          = (*Adapter)(nil)
	_ platform.Prompter         = (*Adapter)(nil)
	_ platform.QuestionAsker    = (*Adapter)(nil)
	_ platform.Statuser         = (*Adapter)(nil)
	_ platform.Observed         = (*Adapter)(nil)
	_ platform.MentionSender    = (*Adapter)(nil)
	_ platform.UserNamer        = (*Adapter)(nil)
	_ platform.AttachmentOpener = (*Adapter)(nil)
	_ platform.HistoryReader    = (*Adapter)(nil)
	_ platform.Capable          = (*Adapter)(nil)
	_ platform.ReplyEditor      = (*Adapter)(nil)
	_ platform.Deleter          = (*Adapter)(nil)
	_ platform.Replier          = (*Adapter)(nil)
	_ platform.ReplyFinisher    = (*Adapter)(nil)
	_ platform.Threader         = (*Adapter)(nil)
	_ platform.FileSender       = (*Adapter)(nil)
)

// New validates cfg and returns an adapter. It does no I/O: Run connects.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.Default()
	}
	if strings.TrimSpace(cfg.Name) == "" {
		return nil, fmt.Errorf("%w: name is empty", ErrInvalidConfig)
	}
	// The tokens' form is the config loader's to check: Slack's own
	// answer (invalid_auth) is final for anything it lets through.
	if strings.TrimSpace(cfg.BotToken) == "" {
		return nil, fmt.Errorf("%w: %s: bot_token is empty", ErrInvalidConfig, cfg.Name)
	}
	if strings.TrimSpace(cfg.AppToken) == "" {
		return nil, fmt.Errorf("%w: %s: app_token is empty", ErrInvalidConfig, cfg.Name)
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	base, err := url.Parse(cfg.APIURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("%w: %s: api_url %q is not an http(s) URL", ErrInvalidConfig, cfg.Name, cfg.APIURL)
	}
	if !strings.HasSuffix(cfg.APIURL, "/") {
		// slack-go appends method names to the base as is.
		cfg.APIURL += "/"
	}
	if cfg.EditsPerMinute < 0 || cfg.EditBurst < 0 || cfg.EditInterval < 0 || cfg.ReconnectMin < 0 || cfg.ReconnectMax < 0 {
		return nil, fmt.Errorf("%w: %s: edit and reconnect settings must not be negative", ErrInvalidConfig, cfg.Name)
	}
	if cfg.EditsPerMinute == 0 {
		cfg.EditsPerMinute = DefaultEditRate.PerMinute
	}
	if cfg.EditBurst == 0 {
		cfg.EditBurst = DefaultEditRate.Burst
	}
	if cfg.EditInterval == 0 {
		cfg.EditInterval = DefaultEditRate.Interval
	}
	if cfg.ReconnectMin == 0 {
		cfg.ReconnectMin = time.Second
	}
	if cfg.ReconnectMax == 0 {
		cfg.ReconnectMax = 2 * time.Minute
	}
	if cfg.ReconnectMax < cfg.ReconnectMin {
		cfg.ReconnectMax = cfg.ReconnectMin
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	log = log.With("platform", cfg.Name)
	api := slack.New(cfg.BotToken,
		slack.OptionAppLevelToken(cfg.AppToken),
		slack.OptionAPIURL(cfg.APIURL),
		slack.OptionHTTPClient(hc),
		slack.OptionLog(slogOutput{log}),
	)
	w := &wire{
		name:  cfg.Name,
		log:   log,
		api:   api,
		sleep: backoff.Sleep,
		edits: coalesce.New(newEditPacer(cfg.EditsPerMinute, cfg.EditBurst, cfg.EditInterval)),
	}
	self := &botSelf{wire: w}
	fs := &files{name: cfg.Name, token: cfg.BotToken, apiBase: base, http: hc, wire: w, log: log}
	ps := &prompts{name: cfg.Name, wire: w, open: recent.New[[]string](1024)}
	a := &Adapter{
		cfg:     cfg,
		log:     log,
		wire:    w,
		prompts: ps,
		reads:   &reads{wire: w, self: self, users: newUserCache(), log: log},
		files:   fs,
		socket: &socket{
			cfg:        cfg,
			log:        log,
			wire:       w,
			self:       self,
			state:      connstate.New(cfg.Name),
			norm:       normalizer{name: cfg.Name, self: self, files: fs},
			buttons:    ps,
			drainGrace: defaultDrainGrace,
			ackWait:    defaultAckWait,
		},
	}
	a.replies = replykit.New(cfg.Name, replyWire{w: w, reads: a.reads}, log)
	return a, nil
}

// Name returns the instance name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Status reports the connection state: connecting, connected, a transient
// disconnect with its cause, bad credentials once Slack refused a token
// (Run has returned then), or stopped.
func (a *Adapter) Status() platform.ConnStatus { return a.socket.state.Get() }

// SetObserver makes the adapter report connection errors and reconnects
// to o (the metrics).
func (a *Adapter) SetObserver(o platform.Observer) { a.socket.state.SetObserver(o) }

// Run connects to Slack and delivers events to h until ctx is cancelled
// (then it returns nil) or Slack rejects the tokens (then it returns the
// error). Connection trouble is retried inside and shown by Status.
func (a *Adapter) Run(ctx context.Context, h platform.Handler) error {
	if h == nil {
		return errors.New("running slack adapter: nil handler")
	}
	return a.socket.run(ctx, h)
}

// Send converts Claude's Markdown to mrkdwn, posts it to the target
// (in its thread, if any) in parts under MessageLimit, and returns the last
// part's Target.
func (a *Adapter) Send(ctx context.Context, to platform.Target, text string) (platform.Target, error) {
	return a.wire.send(ctx, to, "", text)
}

// SendMentioning is Send starting with a mention of each user (<@U…>),
// the one way a message of cc-connect's mentions anyone.
func (a *Adapter) SendMentioning(ctx context.Context, to platform.Target, mentions []platform.Mention, text string) (platform.Target, error) {
	var prefix strings.Builder
	for _, m := range mentions {
		if !slackUserIDRE.MatchString(m.UserID) {
			return platform.Target{}, fmt.Errorf("sending to slack channel %s: %q is not a Slack user id", to.Channel, m.UserID)
		}
		prefix.WriteString("<@" + m.UserID + "> ")
	}
	return a.wire.send(ctx, to, prefix.String(), text)
}

var slackUserIDRE = regexp.MustCompile(`^[UW][A-Z0-9]{2,20}$`)

// Edit replaces the text of a posted message. Edits are paced (a budget
// for the workspace, an interval per channel); while an edit of the same
// message waits, a newer text replaces it and the older call returns nil,
// so the latest text always lands and the last edit is never dropped.
// Text longer than one message is cut with an ellipsis.
func (a *Adapter) Edit(ctx context.Context, msg platform.Target, text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("editing slack message %s: %w", msg.MessageID, ErrEmptyMessage)
	}
	parts := splitMrkdwn(text, MessageLimit-2)
	body := parts[0]
	if len(parts) > 1 {
		body += "\n…"
	}
	return a.wire.update(ctx, msg, body, slack.MsgOptionText(body, false))
}

// Delete removes one of the bot's messages (chat.delete); one already gone
// is fine.
func (a *Adapter) Delete(ctx context.Context, msg platform.Target) error {
	if err := a.wire.delete(ctx, msg); err != nil {
		return err
	}
	a.replies.Forget(msg)
	return nil
}

// React adds an emoji reaction; adding one that is already there is fine.
func (a *Adapter) React(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.react(ctx, msg, name)
}

// Unreact removes the bot's reaction; removing a missing one is fine.
func (a *Adapter) Unreact(ctx context.Context, msg platform.Target, name string) error {
	return a.wire.unreact(ctx, msg, name)
}

// Capabilities: Slack edits messages (chat.update, Tier 3: about 50 a
// minute for the whole workspace, shared by every conversation), has
// buttons and multi-select menus, and deletes the bot's posts. A message
// shows 3,900 runes of mrkdwn whole; Markdown is kept well under that so
// that escapes (& becomes &amp;) still fit.
//
// EditInterval gives one message at most half the workspace's budget: a
// reply streamed alone takes 25 edits a minute, and two conversations
// streaming at once still leave room for progress and prompts. The pacer
// (editPacer) holds the workspace's and each channel's limit whatever the
// engine asks.
func (a *Adapter) Capabilities() platform.Capabilities {
	c := platform.Abilities(a)
	c.MessageLimit = 3000
	c.EditRate = platform.EditRate{PerMinute: a.cfg.EditsPerMinute, Burst: a.cfg.EditBurst, Interval: a.cfg.EditInterval}
	c.EditInterval = max(a.cfg.EditInterval, 2*time.Minute/time.Duration(a.cfg.EditsPerMinute))
	c.MultiSelect = true
	c.OptionLabelLimit = buttonTextLimit
	return c
}

// EditReply makes msgs show text as Send would post it (mrkdwn parts under
// MessageLimit): a part a message already shows is left alone, a changed
// one goes through chat.update (paced; a newer edit of the same message
// replaces one that waits), and parts beyond msgs are posted in the thread.
func (a *Adapter) EditReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string) ([]platform.Target, error) {
	return a.replies.EditReply(ctx, to, msgs, text)
}

// SendReply posts text as Send does, each part tagged with r.Key (see
// platform.Replier). With r.Again it first reads the conversation after
// r.After for parts of the same key; when that read fails, it posts the
// parts r.Done does not name, as a platform without lookup would.
func (a *Adapter) SendReply(ctx context.Context, to platform.Target, text string, r platform.Reply) (platform.ReplyResult, error) {
	return a.replies.SendReply(ctx, to, text, r)
}

// FinishReply turns a streamed reply into the reply (platform.ReplyFinisher):
// each message of msgs gets its part through chat.update with the reply's
// metadata, booked ahead of the stream's own edits (editPacer.ReserveFirst:
// only the workspace's budget can make it wait), and the parts beyond msgs
// are posted tagged, as SendReply posts them. With r.Again the thread is read
// first: a part found tagged is edited again where msgs has no message for
// it, and not posted a second time.
func (a *Adapter) FinishReply(ctx context.Context, to platform.Target, msgs []platform.Target, text string, r platform.Reply) ([]platform.Target, error) {
	return a.replies.FinishReply(ctx, to, msgs, text, r)
}

// ThreadUnder is the thread under a posted message: in Slack its ts, the
// thread_ts its replies carry.
func (a *Adapter) ThreadUnder(posted platform.Target) platform.Target {
	return platform.Target{Platform: posted.Platform, Channel: posted.Channel, Thread: posted.MessageID}
}

// AskPermission posts a Block Kit prompt with Allow / Always allow / Deny
// buttons. Presses come back through Handler.HandleAction. The prompt's
// whole text is shown: it is split over as many sections as it needs, and
// a prompt too big for one message is refused rather than cut, so the
// engine can deny it.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	return a.prompts.askPermission(ctx, to, p)
}

// ResolvePermission edits the prompt to show the outcome (e.g. "Allowed
// by Ann") in place of the buttons, so nobody presses them again.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	return a.prompts.resolvePermission(ctx, prompt, outcome)
}

// AskQuestions posts Claude's questions with a button per option (a
// multi-select menu and a Submit button for a multi-select question) and
// a Dismiss button.
func (a *Adapter) AskQuestions(ctx context.Context, to platform.Target, p platform.QuestionPrompt) (platform.Target, error) {
	return a.prompts.askQuestions(ctx, to, p)
}

// UpdateQuestions redraws a question prompt: answered questions lose
// their buttons, a closed prompt all of them.
func (a *Adapter) UpdateQuestions(ctx context.Context, prompt platform.Target, p platform.QuestionPrompt) error {
	return a.prompts.updateQuestions(ctx, prompt, p)
}

// UserName returns a user's display name (users.info, cached), or userID
// when Slack gives none. Events name a user by id alone; the engine asks
// for the name on the conversation's goroutine, when it needs one, so
// that the lookup never delays an ack.
func (a *Adapter) UserName(ctx context.Context, userID string) string {
	return orDefault(a.reads.userName(ctx, userID), userID)
}

// History reads a conversation's earlier messages (platform.HistoryReader):
// a thread's with conversations.replies (the parent first, as Slack
// returns it), a DM's with conversations.history. The app needs the
// history scope of the conversation's kind (channels:history,
// groups:history, im:history, mpim:history); without it Slack answers
// missing_scope, which is returned.
func (a *Adapter) History(ctx context.Context, conv platform.Target, q platform.HistoryQuery) ([]platform.HistoryMessage, error) {
	return a.reads.history(ctx, conv, q)
}

// OpenAttachment downloads a file again from its Ref (its URL), for a
// message replayed after a restart; the same host check applies.
func (a *Adapter) OpenAttachment(ctx context.Context, at platform.Attachment) (io.ReadCloser, error) {
	return a.files.open(ctx, at.Ref, at.Mime)
}

// MaxFileSize is Slack's limit on one file.
func (a *Adapter) MaxFileSize(platform.Target) int64 { return MaxUploadBytes }

// SendFile uploads f into the conversation to names (its thread when set);
// the app needs the files:write scope. The comment is posted first, as a
// message of its own.
func (a *Adapter) SendFile(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	return a.files.send(ctx, to, f)
}
