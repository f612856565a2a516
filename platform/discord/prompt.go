package discord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/bwmarrin/discordgo"

	"github.com/cc-connect/cc-connect/platform"
)

// customIDPrefix marks our buttons' custom_id ("ccp|<choice>|<ref>").
const customIDPrefix = "ccp|"

// maxCustomID is Discord's limit on a component's custom_id.
const maxCustomID = 100

var choiceCodes = map[platform.Choice]string{
	platform.ChoiceAllow:       "a",
	platform.ChoiceAlwaysAllow: "A",
	platform.ChoiceDeny:        "d",
}

func parseCustomID(id string) (platform.Choice, string, bool) {
	rest, ok := strings.CutPrefix(id, customIDPrefix)
	if !ok {
		return "", "", false
	}
	code, ref, ok := strings.Cut(rest, "|")
	if !ok {
		return "", "", false
	}
	for c, cc := range choiceCodes {
		if cc == code {
			return c, ref, true
		}
	}
	return "", "", false
}

// promptStore remembers recent prompts: their text and Target (to show the
// outcome under the prompt and to address the Action) and, for request ids
// too long for custom_id, the id behind a short reference. Bounded, oldest
// forgotten first.
type promptStore struct {
	mu      sync.Mutex // guards the maps and orders
	max     int
	text    map[string]string          // message id -> prompt content
	targets map[string]platform.Target // message id -> posted prompt
	order   []string
	refs    map[string]string // short ref -> request id
	rorder  []string
}

func newPromptStore(max int) *promptStore {
	return &promptStore{max: max, text: make(map[string]string), targets: make(map[string]platform.Target), refs: make(map[string]string)}
}

func (p *promptStore) ref(requestID string) string {
	if len(customIDPrefix)+2+len(requestID) <= maxCustomID && !strings.HasPrefix(requestID, "~") {
		return requestID
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ref := "~" + hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refs[ref] = requestID
	p.rorder = append(p.rorder, ref)
	for len(p.rorder) > p.max {
		delete(p.refs, p.rorder[0])
		p.rorder = p.rorder[1:]
	}
	return ref
}

func (p *promptStore) requestID(ref string) (string, bool) {
	if !strings.HasPrefix(ref, "~") {
		return ref, ref != ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.refs[ref]
	return id, ok
}

func (p *promptStore) remember(t platform.Target, content string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.text[t.MessageID] = content
	p.targets[t.MessageID] = t
	p.order = append(p.order, t.MessageID)
	for len(p.order) > p.max {
		delete(p.text, p.order[0])
		delete(p.targets, p.order[0])
		p.order = p.order[1:]
	}
}

func (p *promptStore) promptText(msgID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.text[msgID]
}

func (p *promptStore) target(msgID string) (platform.Target, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.targets[msgID]
	return t, ok
}

func promptContent(p platform.PermissionPrompt) string {
	var b strings.Builder
	b.WriteString("🔐 **Permission needed**: `" + strings.ReplaceAll(p.Tool, "`", "ˋ") + "`")
	if p.Summary != "" {
		summary := strings.ReplaceAll(p.Summary, "```", "ˋˋˋ")
		if r := []rune(summary); len(r) > 1500 {
			summary = string(r[:1500]) + "…"
		}
		b.WriteString("\n```\n" + summary + "\n```")
	}
	if p.Path != "" {
		b.WriteString("\nPath: `" + strings.ReplaceAll(p.Path, "`", "ˋ") + "`")
	}
	return b.String()
}

// AskPermission posts the request with Allow, Always allow and Deny
// buttons; presses come back through Handler.HandleAction with the
// presser's user id.
func (a *Adapter) AskPermission(ctx context.Context, to platform.Target, p platform.PermissionPrompt) (platform.Target, error) {
	ch, err := a.postChannel(ctx, to)
	if err != nil {
		return platform.Target{}, err
	}
	ref := a.prompts.ref(p.RequestID)
	button := func(label string, style discordgo.ButtonStyle, c platform.Choice) discordgo.MessageComponent {
		return discordgo.Button{Label: label, Style: style, CustomID: customIDPrefix + choiceCodes[c] + "|" + ref}
	}
	content := promptContent(p)
	send := &discordgo.MessageSend{
		Content:         content,
		AllowedMentions: noMentions(),
		Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			button("Allow", discordgo.SuccessButton, platform.ChoiceAllow),
			button("Always allow", discordgo.PrimaryButton, platform.ChoiceAlwaysAllow),
			button("Deny", discordgo.DangerButton, platform.ChoiceDeny),
		}}},
	}
	var m *discordgo.Message
	err = a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		var err error
		m, err = a.session.ChannelMessageSendComplex(ch, send, opts...)
		return err
	})
	if err != nil {
		return platform.Target{}, fmt.Errorf("asking permission in %s: %w", ch, err)
	}
	posted := platform.Target{Platform: a.cfg.Name, Channel: to.Channel, Thread: to.Thread, MessageID: m.ID}
	a.prompts.remember(posted, content)
	return posted, nil
}

// ResolvePermission shows the outcome under the prompt and removes the
// buttons.
func (a *Adapter) ResolvePermission(ctx context.Context, prompt platform.Target, outcome string) error {
	id := bareID(prompt.MessageID)
	ch := msgChannel(prompt)
	content := a.prompts.promptText(id)
	if content != "" {
		content += "\n"
	}
	content += "**" + outcome + "**"
	none := []discordgo.MessageComponent{}
	err := a.rest(ctx, func(opts ...discordgo.RequestOption) error {
		e := &discordgo.MessageEdit{ID: id, Channel: ch, Content: &content, Components: &none, AllowedMentions: noMentions()}
		_, err := a.session.ChannelMessageEditComplex(e, opts...)
		return err
	})
	if err != nil {
		return fmt.Errorf("resolving permission prompt %s in %s: %w", id, ch, err)
	}
	return nil
}
