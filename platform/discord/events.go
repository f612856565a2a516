package discord

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

// onMessageCreate filters what the engine must not see and hands the rest
// to it; it runs on the gateway reader, in the order Discord sent the
// events.
func (g *gateway) onMessageCreate(_ *discordgo.Session, ev *discordgo.MessageCreate) {
	m := ev.Message
	if m == nil || m.Author == nil || m.Author.Bot || m.Author.ID == g.self.get() || m.WebhookID != "" {
		return
	}
	if m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply {
		return // joins, pins, thread notices and other system messages
	}
	// A redelivery carries the same id: the engine's one duplicate check
	// catches it.
	g.hand(func(ctx context.Context, h platform.Handler) {
		msg, ok := g.reader.toMessage(ctx, m)
		if !ok {
			return
		}
		g.log.Debug("Discord message received", "channel", msg.Target.Channel, "thread", msg.Target.Thread, "user_id", msg.UserID, "user_name", msg.UserName, "mentioned", msg.Mentioned)
		if _, err := h.HandleMessage(ctx, msg); err != nil && ctx.Err() == nil {
			g.log.Warn("Engine did not accept Discord message", "channel", msg.Target.Channel, "thread", msg.Target.Thread, "error", err)
		}
	})
}

// reader reads Discord's messages by one set of rules, as they come
// (toMessage) and from a channel's history (history.go): who wrote them,
// whether they address the bot, which conversation they belong to (what a
// channel is: a thread, and of which channel).
type reader struct {
	cfg     Config
	log     *slog.Logger
	self    *botSelf
	wire    *wire
	threads *threadBook
	files   *files
}

// toMessage normalizes a user message. Routing: a DM is its own channel; a
// message in a thread belongs to that thread (Channel is the parent); a
// top-level channel message belongs to the channel, or with
// ThreadPerMessage to a thread opened from it on the first reply (a thread
// started from a message has the message's id).
func (r *reader) toMessage(ctx context.Context, m *discordgo.Message) (platform.Message, bool) {
	self := r.self.get()
	text, mentioned := stripMention(m.Content, self)
	for _, u := range m.Mentions {
		if u != nil && u.ID == self {
			mentioned = true
		}
	}
	if r := m.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID == self {
		mentioned = true
	}
	// Discord's autocomplete often offers the bot's own managed role for
	// "@bot"; a mention of that role addresses the bot too.
	if role := r.ownRoleMentioned(m.GuildID, m.MentionRoles); role != "" {
		mentioned = true
		text, _ = stripTag(text, "<@&"+role+">")
	}
	atts := r.files.attachments(m.Attachments)
	if text == "" && len(atts) == 0 {
		return platform.Message{}, false
	}
	target := platform.Target{Platform: r.cfg.Name, Channel: m.ChannelID, MessageID: m.ID}
	isDM := m.GuildID == ""
	if !isDM {
		info, err := r.channelInfo(ctx, m.ChannelID)
		switch {
		case err != nil:
			r.log.Warn("Discord channel lookup failed; treating it as a plain channel", "channel", m.ChannelID, "error", err)
		case info.isThread:
			target.Channel, target.Thread = info.parent, m.ChannelID
			r.threads.markKnown(m.ChannelID)
		case r.cfg.ThreadPerMessage:
			target.Thread = m.ID
			r.threads.plan(m.ID, threadName(text))
		}
	}
	name := m.Author.Username
	return platform.Message{
		ID:          m.ChannelID + ":" + m.ID,
		Target:      target,
		UserID:      m.Author.ID,
		UserName:    name,
		Text:        text,
		IsDM:        isDM,
		Mentioned:   mentioned,
		IsBot:       m.Author.Bot,
		Attachments: atts,
		Received:    m.Timestamp,
		Seq:         snowflakeSeq(m.ID),
	}, true
}

// stripMention removes the bot's user mention (<@id> or <@!id>) and
// reports whether it was there.
func stripMention(content, self string) (string, bool) {
	if self == "" {
		return strings.TrimSpace(content), false
	}
	c1, f1 := stripTag(content, "<@"+self+">")
	c2, f2 := stripTag(c1, "<@!"+self+">")
	return c2, f1 || f2
}

// stripTag removes every tag from content, tidying the spaces it leaves,
// and reports whether there was one.
func stripTag(content, tag string) (string, bool) {
	if !strings.Contains(content, tag) {
		return strings.TrimSpace(content), false
	}
	// Only the space next to the tag goes; indentation and code elsewhere
	// in the message stay as written.
	for _, r := range [][2]string{{" " + tag + " ", " "}, {tag + " ", ""}, {" " + tag, ""}, {tag, ""}} {
		content = strings.ReplaceAll(content, r[0], r[1])
	}
	return strings.TrimSpace(content), true
}

// ownRoleMentioned returns the bot's managed role among roles, if any,
// from the gateway state (GUILD_CREATE lists the bot's member and roles).
func (r *reader) ownRoleMentioned(guildID string, roles []string) string {
	if guildID == "" || len(roles) == 0 {
		return ""
	}
	mem, err := r.wire.session.State.Member(guildID, r.self.get())
	if err != nil {
		return ""
	}
	for _, id := range roles {
		if !slices.Contains(mem.Roles, id) {
			continue
		}
		if role, err := r.wire.session.State.Role(guildID, id); err == nil && role.Managed {
			return id
		}
	}
	return ""
}

// defaultThreadName names a thread opened for a message with no text of
// its own (an attachment alone).
const defaultThreadName = "Conversation"

func threadName(text string) string {
	line := strings.TrimSpace(strings.SplitN(text, "\n", 2)[0])
	r := []rune(line)
	if len(r) > 80 {
		line = string(r[:79]) + "…"
	}
	if line == "" {
		return defaultThreadName
	}
	return line
}

// channelInfo says whether a channel is a thread, and its parent. The
// gateway state knows channels of guilds the bot is in; others are asked
// for once over REST and remembered.
type chanInfo struct {
	isThread bool
	parent   string
}

// channelLookupWait bounds the REST lookup of a channel the gateway's
// state does not know: it runs on the gateway's reader, before the event
// can be handed over, and holds up the events behind it meanwhile.
const channelLookupWait = 10 * time.Second

func (r *reader) channelInfo(ctx context.Context, id string) (chanInfo, error) {
	if ch, err := r.wire.session.State.Channel(id); err == nil {
		return chanInfo{isThread: ch.IsThread(), parent: ch.ParentID}, nil
	}
	if info, ok := r.threads.info(id); ok {
		return info, nil
	}
	ctx, cancel := context.WithTimeout(ctx, channelLookupWait)
	defer cancel()
	var ch *discordgo.Channel
	err := r.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		ch, err = r.wire.session.Channel(id, opts...)
		return err
	})
	if err != nil {
		return chanInfo{}, fmt.Errorf("looking up channel %s: %w", id, err)
	}
	info := chanInfo{isThread: ch.IsThread(), parent: ch.ParentID}
	r.threads.remember(id, info)
	return info, nil
}

// threadBook remembers channel kinds looked up over REST, threads known to
// exist, and the names planned for threads not yet opened. Bounded.
type threadBook struct {
	mu      sync.Mutex // guards the maps and order
	max     int
	infos   map[string]chanInfo
	known   map[string]bool
	planned map[string]string
	order   []string
}

func newThreadBook(max int) *threadBook {
	return &threadBook{max: max, infos: make(map[string]chanInfo), known: make(map[string]bool), planned: make(map[string]string)}
}

func (b *threadBook) touch(id string) {
	b.order = append(b.order, id)
	for len(b.order) > 3*b.max {
		old := b.order[0]
		b.order = b.order[1:]
		delete(b.infos, old)
		delete(b.known, old)
		delete(b.planned, old)
	}
}

func (b *threadBook) info(id string) (chanInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.infos[id]
	return i, ok
}

func (b *threadBook) remember(id string, i chanInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.infos[id] = i
	b.touch(id)
}

func (b *threadBook) markKnown(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.known[id] {
		b.known[id] = true
		b.touch(id)
	}
}

func (b *threadBook) isKnown(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.known[id]
}

func (b *threadBook) plan(id, name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.planned[id] = name
	b.touch(id)
}

func (b *threadBook) plannedName(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.planned[id]
}

// onInteractionCreate answers a button press at once with a deferred
// update (Discord allows 3 seconds and shows "interaction failed" after),
// then hands it to the engine.
func (g *gateway) onInteractionCreate(_ *discordgo.Session, ev *discordgo.InteractionCreate) {
	i := ev.Interaction
	if i == nil || i.Type != discordgo.InteractionMessageComponent || !g.buttons.firstPress(i.ID) {
		return
	}
	g.mu.Lock()
	runCtx := g.runCtx
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(runCtx, 3*time.Second)
	err := g.wire.rest(ctx, func(opts ...discordgo.RequestOption) error {
		return g.wire.session.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, opts...)
	})
	cancel()
	if err != nil {
		g.log.Warn("Answering Discord button press failed", "channel", i.ChannelID, "error", err)
	}
	act, ok := g.buttons.press(i)
	if !ok {
		return
	}
	msgID := i.Message.ID
	g.hand(func(ctx context.Context, h platform.Handler) {
		act.Target = g.buttons.target(ctx, i.ChannelID, msgID)
		if err := h.HandleAction(ctx, act); err != nil && ctx.Err() == nil {
			g.log.Warn("Engine did not accept Discord button press", "channel", act.Target.Channel, "thread", act.Target.Thread, "error", err)
		}
	})
}

// snowflakeSeq is a message id as platform.Message.Seq: a snowflake, whose
// high bits are its time, so later messages have larger ones. Zero for an
// id that is not a number.
func snowflakeSeq(id string) uint64 {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0
	}
	return n
}
