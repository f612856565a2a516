package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// texts are what the fake shows of msgs now.
func texts(t *testing.T, f *faketelegram.Server, msgs []platform.Target) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		chat, _ := strconv.ParseInt(m.Channel, 10, 64)
		got, ok := f.Message(chat, atoi(t, m.MessageID))
		if !ok || got.Deleted {
			t.Fatalf("message %s is gone", m.MessageID)
		}
		out = append(out, got.Text)
	}
	return out
}

// TestEditReplyHoldsWhatSendPosts streams a reply that grows past one
// message, a code block across the split, then shrinks: at every step the
// messages show what Send shows for the same text, an unchanged part is
// not edited again, and no part breaks a code block.
func TestEditReplyHoldsWhatSendPosts(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	f.AddChat(faketelegram.Chat{ID: 43, Type: "private"})
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = time.Millisecond })
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "42"}
	ref := platform.Target{Platform: "tg-test", Channel: "43"}
	long := strings.Repeat("word <b> & @alice more ", 200)
	code := "```go\n" + strings.Repeat("x := 1 // and <so> on\n", 250) + "```"
	steps := []string{"Hello", "Hello, world", "Hello, world\n\n" + long, "Hello, world\n\n" + long + "\n\n" + code, "Hello, world\n\n" + long}
	var msgs []platform.Target
	most := 0
	for i, text := range steps {
		before := len(f.Calls("editMessageText"))
		prev := texts(t, f, msgs)
		var err error
		if msgs, err = a.EditReply(ctx, to, msgs, text); err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		most = max(most, len(msgs))
		first := len(f.Sent())
		if _, err := a.Send(ctx, ref, text); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range f.Sent()[first:] {
			want = append(want, p.Text)
		}
		got := texts(t, f, msgs)
		if i == len(steps)-1 {
			got = got[:min(len(got), len(want))]
		}
		if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
			t.Fatalf("step %d: messages show\n%q\nwant what Send shows\n%q", i+1, got, want)
		}
		changed := 0
		for j := range min(len(prev), len(got)) {
			if prev[j] != got[j] {
				changed++
			}
		}
		if edits := len(f.Calls("editMessageText")) - before; edits != changed {
			t.Errorf("step %d: %d edits for %d changed parts", i+1, edits, changed)
		}
	}
	if most < 3 {
		t.Fatalf("the reply took %d messages, want the code block to roll it over", most)
	}
	for _, m := range f.Sent() {
		if len(m.Mentions) > 0 {
			t.Errorf("a part notifies %v", m.Mentions)
		}
		if strings.Count(m.Raw, "<pre>") != strings.Count(m.Raw, "</pre>") {
			t.Errorf("a part breaks a code block: %q", m.Raw[:min(len(m.Raw), 80)])
		}
	}
	last := msgs[len(msgs)-1]
	if err := a.Delete(ctx, last); err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Message(42, atoi(t, last.MessageID)); !m.Deleted {
		t.Error("Delete left the message")
	}
	if err := a.Delete(ctx, last); err != nil {
		t.Errorf("deleting it again: %v", err)
	}
}

// TestEditReplyUnderFloodControl streams through a fake that holds each
// chat to a standing edit rate, a group to a third of a private chat's:
// edits that met it waited out the 429 and the final text landed whole.
func TestEditReplyUnderFloodControl(t *testing.T) {
	for _, chat := range []string{"42", "-100"} {
		t.Run(chat, func(t *testing.T) {
			f := faketelegram.New(t)
			addChats(f)
			// Ten edits a second in a private chat: the test stays short.
			f.SetEditLimit(100*time.Millisecond, 300*time.Millisecond)
			a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = 40 * time.Millisecond })
			a.api.retryAfterUnit = 100 * time.Millisecond
			ctx := context.Background()
			to := platform.Target{Platform: "tg-test", Channel: chat}
			var msgs []platform.Target
			var text string
			for i := range 6 {
				text += fmt.Sprintf("chunk %d. ", i)
				var err error
				if msgs, err = a.EditReply(ctx, to, msgs, text); err != nil {
					t.Fatal(err)
				}
			}
			if f.FloodRefused("editMessageText") == 0 {
				t.Fatal("no edit met the limit; the test shows nothing")
			}
			if got := texts(t, f, msgs); len(got) != 1 || got[0] != text {
				t.Errorf("final message %q, want %q", got, text)
			}
		})
	}
}

func TestCapabilities(t *testing.T) {
	a := newTestAdapter(t, faketelegram.New(t), nil)
	c := a.Capabilities()
	// Half of a private chat's spacing for one message; no select menus.
	if c.EditRate != (platform.EditRate{Interval: platform.DefaultEditInterval}) || c.EditInterval != 2*c.EditRate.Interval ||
		c.MultiSelect || c.OptionLabelLimit != optionLabelLimit {
		t.Errorf("capabilities = %+v", c)
	}
	can := platform.Capabilities{Edits: true, Deletes: true, Reacts: true, Buttons: true, History: true, RecordsParts: true, Typing: true, Files: true}
	if got := platform.Abilities(a); got != can || c.RecordsParts != can.RecordsParts || c.TagsReplies {
		t.Errorf("abilities %+v, want %+v", got, can)
	}
	if got := platform.CapabilitiesOf(a); got != c {
		t.Errorf("CapabilitiesOf = %+v, want the adapter's own", got)
	}
	// Markdown at the limit, however escaped, posts as one message.
	if parts := splitForTelegram(strings.Repeat("a<b ", c.MessageLimit/4)); len(parts) != 1 {
		t.Errorf("%d runes of Markdown took %d messages", c.MessageLimit, len(parts))
	}
}

func TestEditSpacing(t *testing.T) {
	s := editSpacing(time.Second)
	for chat, want := range map[string]time.Duration{"42": time.Second, "-100": 3 * time.Second, "-1001234": 3 * time.Second} {
		if got := s(chat); got != want {
			t.Errorf("spacing in %s = %v, want %v", chat, got, want)
		}
	}
}

func TestQuestionsToActions(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	h := platformtest.NewHandler()
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, h)
	f.Next(t, "getUpdates")
	ctx := context.Background()
	to := platform.Target{Platform: "tg-test", Channel: "42"}
	p := platform.QuestionPrompt{RequestID: "req-q", Intro: "**Claude asks:**", Questions: []platform.Question{
		{Text: "**Color**: Which color? <b> @alice", Options: []platform.QuestionOption{{Label: "Red"}, {Label: "Blue"}}},
		{Text: "**Features**: Which ones?", MultiSelect: true, Selected: platform.Options(1),
			Options: []platform.QuestionOption{{Label: "Auth"}, {Label: "Export"}, {Label: strings.Repeat("long ", 30)}}},
	}}
	prompt, err := a.AskQuestions(ctx, to, p)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.Message(42, atoi(t, prompt.MessageID))
	if !strings.Contains(msg.Text, "Which color? <b>") || len(msg.Mentions) != 0 {
		t.Fatalf("prompt %q notifies %v", msg.Text, msg.Mentions)
	}
	var labels []string
	for _, b := range msg.Buttons() {
		labels = append(labels, b.Text)
		if len([]rune(b.Text)) > optionLabelLimit+2 {
			t.Errorf("label %q over the limit", b.Text)
		}
	}
	if got := strings.Join(labels[:5], ","); got != "Red,Blue,☐ Auth,☑ Export,☐ long long long long long long long long…" {
		t.Errorf("buttons %s", got)
	}
	from := user(7, "ann", false)
	presses := []struct {
		button string
		want   platform.Action
	}{
		{"Blue", platform.Action{Choice: platform.ChoiceAnswer, Question: 0, Options: platform.Options(1)}},
		{"☐ Auth", platform.Action{Choice: platform.ChoiceToggle, Question: 1, Options: platform.Options(0)}},
		{"✔ Done", platform.Action{Choice: platform.ChoiceSubmit, Question: 1}},
		{"Dismiss", platform.Action{Choice: platform.ChoiceDismiss}},
	}
	for i, pr := range presses {
		id := f.Press(t, msg, pr.button, from)
		got := h.Action(t)
		want := pr.want
		want.ID, want.Target, want.UserID, want.UserName, want.RequestID = id, prompt, "7", "ann", "req-q"
		if got != want {
			t.Errorf("press %d: action %+v, want %+v", i+1, got, want)
		}
	}
	p.Questions[0].Done = true
	p.Questions[0].Text += "\nAnswered: Blue (by ann)"
	p.Questions[1].Selected = platform.Options(0, 1)
	if err := a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = f.Message(42, atoi(t, prompt.MessageID))
	labels = nil
	for _, b := range msg.Buttons() {
		labels = append(labels, b.Text)
	}
	if !strings.HasPrefix(strings.Join(labels, ","), "☑ Auth,☑ Export,☐ long") || !strings.Contains(msg.Text, "Answered: Blue") {
		t.Errorf("after the first answer: %q %v", msg.Text, labels)
	}
	p.Outcome = "Answered by ann."
	if err := a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = f.Message(42, atoi(t, prompt.MessageID))
	if len(msg.Buttons()) != 0 || !strings.Contains(msg.Text, "Answered by ann.") {
		t.Errorf("closed prompt: %q %v", msg.Text, msg.Buttons())
	}
}

func TestPlanChoicesAsButtons(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	h := platformtest.NewHandler()
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, h)
	f.Next(t, "getUpdates")
	ctx := context.Background()
	prompt, err := a.AskPermission(ctx, platform.Target{Platform: "tg-test", Channel: "-100"}, platform.PermissionPrompt{
		RequestID: "req-plan", Tool: "ExitPlanMode", Text: "# Plan\n\n1. Read.\n2. Fix.", Choices: []platform.PromptChoice{
			{Choice: platform.ChoicePlanDefault, Label: "Approve", Style: "primary"},
			{Choice: platform.ChoicePlanAcceptEdits, Label: "Approve, accept edits"},
			{Choice: platform.ChoicePlanKeep, Label: "Keep planning"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := f.Message(-100, atoi(t, prompt.MessageID))
	for _, c := range []struct {
		button string
		want   platform.Choice
	}{{"Approve", platform.ChoicePlanDefault}, {"Approve, accept edits", platform.ChoicePlanAcceptEdits}, {"Keep planning", platform.ChoicePlanKeep}} {
		f.Press(t, msg, c.button, user(7, "ann", false))
		if got := h.Action(t); got.Choice != c.want || got.RequestID != "req-plan" {
			t.Errorf("press %s = %+v", c.button, got)
		}
	}
	_, err = a.AskPermission(ctx, platform.Target{Platform: "tg-test", Channel: "42"}, platform.PermissionPrompt{RequestID: "r", Text: "x",
		Choices: []platform.PromptChoice{{Choice: "bogus", Label: "?"}}})
	if err == nil {
		t.Error("a choice without a button was accepted")
	}
}
