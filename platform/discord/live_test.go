package discord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// contents are what the fake holds of msgs now.
func contents(t *testing.T, f *fakediscord.Server, msgs []platform.Target) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		got, ok := f.Message(m.MessageID)
		if !ok || got.Deleted {
			t.Fatalf("message %s is gone", m.MessageID)
		}
		out = append(out, got.Content)
	}
	return out
}

// TestEditReplyHoldsWhatSendPosts streams a reply that grows past one
// message, with a code block across the split, then shrinks: at every
// step the messages hold exactly what Send posts for the same text, an
// unchanged part is not edited again, and no part breaks a code block.
func TestEditReplyHoldsWhatSendPosts(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(fakediscord.Channel{ID: "C2", Type: 0, GuildID: "G1"})
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = time.Millisecond })
	runConnected(t, f, a, platformtest.NewHandler())
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	ref := platform.Target{Platform: "dc-test", Channel: "C2"}
	long := strings.Repeat("word @everyone more ", 120)
	code := "```go\n" + strings.Repeat("x := 1 // and so on\n", 150) + "```"
	steps := []string{"Hello", "Hello, world", "Hello, world\n\n" + long, "Hello, world\n\n" + long + "\n\n" + code, "Hello, world\n\n" + long}
	var msgs []platform.Target
	most := 0
	countEdits := func() int {
		n := 0
		for _, c := range f.Calls() {
			if c.Method == "PATCH" {
				n++
			}
		}
		return n
	}
	for i, text := range steps {
		before := countEdits()
		prev := contents(t, f, msgs)
		var err error
		if msgs, err = a.EditReply(ctx, to, msgs, text); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		most = max(most, len(msgs))
		first := len(f.Posts())
		if _, err := a.Send(ctx, ref, text); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range f.Posts()[first:] {
			want = append(want, p.Content)
		}
		got := contents(t, f, msgs)
		if i == len(steps)-1 {
			got = got[:min(len(got), len(want))]
		}
		if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
			t.Fatalf("step %d: messages hold\n%q\nwant what Send posts\n%q", i+1, got, want)
		}
		changed := 0
		for j := range min(len(prev), len(got)) {
			if prev[j] != got[j] {
				changed++
			}
		}
		if edits := countEdits() - before; edits != changed {
			t.Errorf("step %d: %d edits for %d changed parts", i+1, edits, changed)
		}
	}
	if most < 3 {
		t.Fatalf("the reply took %d messages, want the code block to roll it over", most)
	}
	for _, c := range contents(t, f, msgs) {
		if strings.Count(c, "```")%2 != 0 {
			t.Errorf("a part breaks a code block: %q", c[:min(len(c), 80)])
		}
	}
	last := msgs[len(msgs)-1]
	if err := a.Delete(ctx, last); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Message(last.MessageID); !m.Deleted {
		t.Error("Delete left the message")
	}
	if err := a.Delete(ctx, last); err != nil {
		t.Errorf("deleting it again: %v", err)
	}
}

// TestEditReplyUnderTheChannelLimit streams many states through a fake
// that holds each channel's edits to a standing bucket: edits that met the
// limit waited out Discord's 429 and the final text landed whole.
func TestEditReplyUnderTheChannelLimit(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = time.Millisecond })
	runConnected(t, f, a, platformtest.NewHandler())
	f.SetEditLimit(2, 200*time.Millisecond) // ten a second: the test stays short
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	var msgs []platform.Target
	var text string
	for i := range 8 {
		text += fmt.Sprintf("chunk %d. ", i)
		var err error
		if msgs, err = a.EditReply(ctx, to, msgs, text); err != nil {
			t.Fatal(err)
		}
	}
	if f.RateLimitedEdits() == 0 {
		t.Fatal("no edit met the limit; the test shows nothing")
	}
	if got := contents(t, f, msgs); len(got) != 1 || got[0] != text {
		t.Errorf("final message %q, want %q", got, text)
	}
}

func TestCapabilities(t *testing.T) {
	f := fakediscord.New(t)
	a := newTestAdapter(t, f, nil)
	c := a.Capabilities()
	// Half of the channel's spacing for one message.
	if c.EditRate != (platform.EditRate{Interval: platform.DefaultEditInterval}) || c.EditInterval != 2*c.EditRate.Interval ||
		!c.MultiSelect || c.OptionLabelLimit != 80 {
		t.Errorf("capabilities = %+v", c)
	}
	can := platform.Capabilities{Edits: true, Deletes: true, Reacts: true, Buttons: true, History: true, TagsReplies: true, Typing: true, Files: true}
	if got := platform.Abilities(a); got != can || c.Edits != can.Edits || c.Typing != can.Typing {
		t.Errorf("abilities %+v, want %+v", got, can)
	}
	if got := platform.CapabilitiesOf(a); got != c {
		t.Errorf("CapabilitiesOf = %+v, want the adapter's own", got)
	}
	// Markdown at the limit, however escaped, posts as one message.
	md := strings.Repeat("a*b ", c.MessageLimit/4)
	if parts := splitForDiscord(discordMarkdown(md)); len(parts) != 1 {
		t.Errorf("%d runes of Markdown took %d messages", len(md), len(parts))
	}
}

func TestQuestionsToActions(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	h := platformtest.NewHandler()
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, h)
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	p := platform.QuestionPrompt{RequestID: "req-q", Intro: "**Claude asks:**", Questions: []platform.Question{
		{Text: "**Color**: Which color? @everyone", Options: []platform.QuestionOption{{Label: "Red"}, {Label: "Blue"}}},
		{Text: "**Features**: Which ones?", MultiSelect: true, Selected: platform.Options(1),
			Options: []platform.QuestionOption{{Label: "Auth"}, {Label: "Export"}, {Label: strings.Repeat("long ", 30)}}},
	}}
	prompt, err := a.AskQuestions(ctx, to, p)
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := f.Message(prompt.MessageID)
	if !ok || !strings.Contains(msg.Content, "Which color?") || !strings.Contains(msg.Content, "Which ones?") {
		t.Fatalf("prompt %+v", msg)
	}
	for _, c := range f.Calls() {
		if len(c.Pings) != 0 {
			t.Errorf("%s %s pings %v", c.Method, c.Path, c.Pings)
		}
	}
	var labels []string
	for _, b := range msg.Buttons() {
		labels = append(labels, b.Label)
	}
	if got := strings.Join(labels, ","); got != "Red,Blue,Dismiss" {
		t.Errorf("buttons %s", got)
	}
	menus := msg.Menus()
	if len(menus) != 1 || len(menus[0].Options) != 3 || menus[0].MaxValues != 3 || len([]rune(menus[0].Options[2].Label)) > 80 {
		t.Fatalf("menu %+v", menus)
	}
	buttons := msg.Buttons()
	presses := []struct {
		press func()
		want  platform.Action
	}{
		{func() { f.Click(t, msg, buttons[1].CustomID, "7", "ann") },
			platform.Action{Choice: platform.ChoiceAnswer, Question: 0, Options: platform.Options(1)}},
		{func() { f.Choose(t, msg, menus[0].CustomID, "7", "ann", "0", "2") },
			platform.Action{Choice: platform.ChoiceAnswer, Question: 1, Options: platform.Options(0, 2)}},
		{func() { f.Click(t, msg, buttons[2].CustomID, "7", "ann") },
			platform.Action{Choice: platform.ChoiceDismiss}},
	}
	for i, pr := range presses {
		pr.press()
		got := h.Action(t)
		want := pr.want
		want.Target, want.UserID, want.UserName, want.RequestID = prompt, "7", "ann", "req-q"
		if got.ID == "" {
			t.Errorf("press %d: no id", i+1)
		}
		want.ID = got.ID // the interaction's id, which the fake makes up
		if got != want {
			t.Errorf("press %d: action %+v, want %+v", i+1, got, want)
		}
	}

	p.Questions[0].Done = true
	p.Questions[0].Text += "\nAnswered: Blue (by ann)"
	if err := a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = f.Message(prompt.MessageID)
	if len(msg.Buttons()) != 1 || len(msg.Menus()) != 1 || !strings.Contains(msg.Content, "Answered: Blue") {
		t.Errorf("after the first answer: %s / %s", msg.Content, msg.Components)
	}
	p.Outcome = "Answered by ann."
	if err := a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = f.Message(prompt.MessageID)
	if len(msg.Buttons()) != 0 || len(msg.Menus()) != 0 || !strings.Contains(msg.Content, "Answered by ann.") {
		t.Errorf("closed prompt: %s / %s", msg.Content, msg.Components)
	}
}

func TestPlanChoicesAsButtons(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	h := platformtest.NewHandler()
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, h)
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	prompt, err := a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "req-plan", Tool: "ExitPlanMode",
		Text: "# Plan\n\n1. Read.\n2. Fix.", Choices: []platform.PromptChoice{
			{Choice: platform.ChoicePlanDefault, Label: "Approve", Style: "primary"},
			{Choice: platform.ChoicePlanAcceptEdits, Label: "Approve, accept edits"},
			{Choice: platform.ChoicePlanKeep, Label: "Keep planning"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.Message(prompt.MessageID)
	bs := msg.Buttons()
	if len(bs) != 3 || bs[1].Label != "Approve, accept edits" {
		t.Fatalf("buttons %+v", bs)
	}
	for i, want := range []platform.Choice{platform.ChoicePlanDefault, platform.ChoicePlanAcceptEdits, platform.ChoicePlanKeep} {
		f.Click(t, msg, bs[i].CustomID, "7", "ann")
		if got := h.Action(t); got.Choice != want || got.RequestID != "req-plan" {
			t.Errorf("press %d = %+v", i+1, got)
		}
	}
	_, err = a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "r", Text: "x",
		Choices: []platform.PromptChoice{{Choice: "bogus", Label: "?"}}})
	if err == nil {
		t.Error("a choice without a button was accepted")
	}
}
