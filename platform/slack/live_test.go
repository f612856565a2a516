package slack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/coalesce"
)

// texts are what the fake holds of msgs now.
func texts(t *testing.T, f *fakeslack.Server, msgs []platform.Target) []string {
	t.Helper()
	var out []string
	for _, m := range msgs {
		got, ok := f.Message(m.Channel, m.MessageID)
		if !ok || got.Deleted {
			t.Fatalf("message %s is gone", m.MessageID)
		}
		out = append(out, got.Text)
	}
	return out
}

// TestEditReplyHoldsWhatSendPosts streams a reply that grows past one
// message and then shrinks: at every step the messages hold exactly what
// Send would have posted for the same text, and a part that did not
// change is not edited again.
func TestEditReplyHoldsWhatSendPosts(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	ref := platform.Target{Platform: "slack-test", Channel: "C9", Thread: "1700000500.000200"}
	long := strings.Repeat("word & <more> ", 400) // over one message once escaped
	code := "```go\n" + strings.Repeat("x := 1 // & so on\n", 300) + "```"
	steps := []string{"Hello", "Hello, world", "Hello, world\n\n" + long, "Hello, world\n\n" + long + "\n\n" + code, "Hello, world\n\n" + long}
	var msgs []platform.Target
	for i, text := range steps {
		var err error
		before := len(e.f.Calls("chat.update"))
		prev := texts(t, e.f, msgs)
		msgs, err = e.a.EditReply(ctx, to, msgs, text)
		if err != nil {
			t.Fatalf("step %d: %v", i+1, err)
		}
		// What Send posts for the same text, in another thread.
		first := len(e.f.Posts())
		if _, err := e.a.Send(ctx, ref, text); err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, p := range e.f.Posts()[first:] {
			want = append(want, p.Text)
		}
		got := texts(t, e.f, msgs)
		if i == len(steps)-1 {
			// The text shrank: the messages past its parts are left for
			// the caller.
			got = got[:min(len(got), len(want))]
		}
		if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
			t.Fatalf("step %d: messages hold\n%q\nwant what Send posts\n%q", i+1, got, want)
		}
		edits := len(e.f.Calls("chat.update")) - before
		changed := 0
		for j := range min(len(prev), len(got)) {
			if prev[j] != got[j] {
				changed++
			}
		}
		if edits != changed {
			t.Errorf("step %d: %d edits for %d changed parts", i+1, edits, changed)
		}
		for _, m := range msgs {
			if m.Thread != to.Thread || m.Channel != to.Channel {
				t.Errorf("step %d: message %+v outside the thread", i+1, m)
			}
		}
	}
	if len(msgs) < 3 {
		t.Fatalf("the reply took %d messages, want the code block to roll it over", len(msgs))
	}
	// Every part opens and closes its own code block.
	for _, text := range texts(t, e.f, msgs) {
		if strings.Count(text, "```")%2 != 0 {
			t.Errorf("a part breaks a code block: %q", text[:min(len(text), 80)])
		}
	}
	if err := e.a.Delete(ctx, msgs[len(msgs)-1]); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.f.Message("C1", msgs[len(msgs)-1].MessageID); !m.Deleted {
		t.Error("Delete left the message")
	}
	if err := e.a.Delete(ctx, msgs[len(msgs)-1]); err != nil {
		t.Errorf("deleting it again: %v", err)
	}
}

// TestEditReplyUnderTheWorkspaceLimit streams many states through a fake
// that holds chat.update to a standing rate, as Slack's Tier 3 does: the
// edits that found the budget spent waited out Slack's 429 (shortened by
// the test's clock) and the final text landed whole.
func TestEditReplyUnderTheWorkspaceLimit(t *testing.T) {
	f := fakeslack.New(t)
	f.SetRateLimit("chat.update", 600, 1) // ten a second: the test stays short
	e := startEnvWith(t, f, testConfig(f))
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	var msgs []platform.Target
	var text string
	for i := range 6 {
		text += fmt.Sprintf("chunk %d. ", i)
		var err error
		if msgs, err = e.a.EditReply(ctx, to, msgs, text); err != nil {
			t.Fatal(err)
		}
	}
	if f.RateLimited("chat.update") == 0 {
		t.Fatal("no edit met the limit; the test shows nothing")
	}
	if got := texts(t, f, msgs); len(got) != 1 || got[0] != ToMrkdwn(text) {
		t.Errorf("final message %q, want %q", got, ToMrkdwn(text))
	}
}

func TestCapabilities(t *testing.T) {
	f := fakeslack.New(t)
	cfg := testConfig(f)
	cfg.EditsPerMinute, cfg.EditBurst, cfg.EditInterval = 0, 0, 0 // the defaults
	a, _, _ := newAdapter(t, cfg)
	c := a.Capabilities()
	if c.EditRate != DefaultEditRate {
		t.Errorf("edit rate %+v, want the default %+v", c.EditRate, DefaultEditRate)
	}
	// Half of the workspace's budget for one message.
	if want := 2 * time.Minute / time.Duration(DefaultEditRate.PerMinute); c.EditInterval != want || !c.MultiSelect || c.OptionLabelLimit != 75 {
		t.Errorf("capabilities = %+v, want an edit interval of %v", c, want)
	}
	can := platform.Capabilities{Edits: true, Deletes: true, Reacts: true, Buttons: true, Threads: true, History: true, TagsReplies: true, Files: true}
	if got := platform.Abilities(a); got != can || c.Edits != can.Edits || c.Files != can.Files {
		t.Errorf("abilities %+v, want %+v", got, can)
	}
	if got := platform.CapabilitiesOf(a); got != c {
		t.Errorf("CapabilitiesOf = %+v, want the adapter's own", got)
	}
	// A Markdown message at the limit, however escaped, posts as one.
	md := strings.Repeat("a&b ", c.MessageLimit/4)
	if parts := splitMrkdwn(md, MessageLimit); len(parts) > 2 {
		t.Errorf("%d runes of Markdown took %d messages", len(md), len(parts))
	}
}

func TestQuestionsToActions(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	p := platform.QuestionPrompt{RequestID: "req-q", Intro: "**Claude asks:**", Questions: []platform.Question{
		{Text: "*Color*: Which color? & <b>", Options: []platform.QuestionOption{{Label: "Red"}, {Label: "Blue"}}},
		{Text: "*Features*: Which ones?", MultiSelect: true, Selected: platform.Options(1),
			Options: []platform.QuestionOption{{Label: "Auth"}, {Label: "Export"}, {Label: strings.Repeat("long ", 30)}}},
	}}
	prompt, err := e.a.AskQuestions(ctx, to, p)
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := e.f.Message("C1", prompt.MessageID)
	if !ok || msg.ThreadTS != to.Thread || !strings.Contains(msg.Blocks, "Which color? \\u0026amp; \\u0026lt;b\\u0026gt;") {
		t.Fatalf("prompt %+v", msg)
	}
	buttons := msg.Buttons()
	var labels []string
	for _, b := range buttons {
		labels = append(labels, b.BlockID+"/"+b.Text)
	}
	if got := strings.Join(labels, ","); got != "ccq|0|req-q/Red,ccq|0|req-q/Blue,ccq|1|req-q/Submit,ccq|x|req-q/Dismiss" {
		t.Errorf("buttons %s", got)
	}
	menus := msg.Menus()
	if len(menus) != 1 || len(menus[0].Options) != 3 || strings.Join(menus[0].Initial, ",") != "1" ||
		len([]rune(menus[0].Options[2].Text.Text)) > 75 {
		t.Errorf("menu %+v", menus)
	}

	presses := []struct {
		press func() string
		want  platform.Action
	}{
		{func() string { return e.f.PressIn(t, msg, "ccq|0|req-q", "ccq_a_1", "U1") },
			platform.Action{Choice: platform.ChoiceAnswer, Question: 0, Options: platform.Options(1)}},
		{func() string { return e.f.Choose(t, msg, "ccq|1|req-q", "ccq_sel", "U1", "0", "2") },
			platform.Action{Choice: platform.ChoiceSelect, Question: 1, Options: platform.Options(0, 2)}},
		{func() string { return e.f.PressIn(t, msg, "ccq|1|req-q", "ccq_sub", "U1") },
			platform.Action{Choice: platform.ChoiceSubmit, Question: 1}},
		{func() string { return e.f.PressIn(t, msg, "ccq|x|req-q", "ccq_x", "U1") },
			platform.Action{Choice: platform.ChoiceDismiss}},
	}
	for i, pr := range presses {
		e.f.WaitAck(t, pr.press())
		got := e.rec.Action(t)
		if got.ID == "" {
			t.Errorf("press %d: no action id", i+1)
		}
		got.ID = ""
		want := pr.want
		want.Target, want.UserID, want.UserName, want.RequestID = prompt, "U1", "u1", "req-q"
		if got != want {
			t.Errorf("press %d: action %+v, want %+v", i+1, got, want)
		}
	}

	// Answered questions lose their buttons; a closed prompt all of them.
	p.Questions[0].Done = true
	p.Questions[0].Text += "\nAnswered: Blue (by ann)"
	if err := e.a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = e.f.Message("C1", prompt.MessageID)
	if bs := msg.Buttons(); len(bs) != 2 || bs[0].Text != "Submit" || !strings.Contains(msg.Blocks, "Answered: Blue") {
		t.Errorf("after the first answer: buttons %+v, blocks %s", bs, msg.Blocks)
	}
	p.Outcome = "Answered by ann."
	if err := e.a.UpdateQuestions(ctx, prompt, p); err != nil {
		t.Fatal(err)
	}
	msg, _ = e.f.Message("C1", prompt.MessageID)
	if len(msg.Buttons()) != 0 || len(msg.Menus()) != 0 || !strings.Contains(msg.Blocks, "Answered by ann.") {
		t.Errorf("closed prompt still has buttons or lacks its outcome: %s", msg.Blocks)
	}
}

func TestPlanChoicesAsButtons(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000500.000100"}
	prompt, err := e.a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "req-plan", Tool: "ExitPlanMode",
		Text: "# Plan\n\n1. Read.\n2. Fix.", Choices: []platform.PromptChoice{
			{Choice: platform.ChoicePlanDefault, Label: "Approve", Style: "primary"},
			{Choice: platform.ChoicePlanAcceptEdits, Label: "Approve, accept edits"},
			{Choice: platform.ChoicePlanKeep, Label: "Keep planning"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := e.f.Message("C1", prompt.MessageID)
	for _, c := range []struct {
		action string
		want   platform.Choice
	}{{"cc_plan_default", platform.ChoicePlanDefault}, {"cc_plan_accept_edits", platform.ChoicePlanAcceptEdits}, {"cc_plan_keep", platform.ChoicePlanKeep}} {
		e.f.WaitAck(t, e.f.Press(t, msg, c.action, "U2"))
		if got := e.rec.Action(t); got.Choice != c.want || got.RequestID != "req-plan" {
			t.Errorf("press %s = %+v", c.action, got)
		}
	}
	if bs := msg.Buttons(); len(bs) != 3 || bs[1].Text != "Approve, accept edits" {
		t.Errorf("buttons %+v", bs)
	}
	_, err = e.a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "r", Text: "x",
		Choices: []platform.PromptChoice{{Choice: "bogus", Label: "?"}}})
	if err == nil {
		t.Error("a choice without a button was accepted")
	}
}

// TestStreamedRepliesKeepTheWorkspaceBudget: six conversations in three
// channels stream their replies at once and finish them, against a fake
// that holds chat.update to 10 calls in any second (Slack's Tier 3 shape,
// a minute scaled down to a second, bursts allowed) and a pacer given the
// same budget. No call is refused, no window of a second holds more than
// 10 updates, and every reply ends exactly as the final text, tagged.
func TestStreamedRepliesKeepTheWorkspaceBudget(t *testing.T) {
	const budget = 10
	f := fakeslack.New(t)
	f.SetWindowLimit("chat.update", budget, time.Second)
	e := startEnvWith(t, f, testConfig(f))
	e.a.wire.edits = coalesce.New(newWindowPacer(budget, 3, 50*time.Millisecond, time.Second))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := platform.Target{Platform: "slack-test", Channel: fmt.Sprintf("C%d", c%3+1), Thread: fmt.Sprintf("17000006%02d.000100", c)}
			var msgs []platform.Target
			text := ""
			for i := range 5 {
				text += fmt.Sprintf("conversation %d, chunk %d. ", c, i)
				var err error
				if msgs, err = e.a.EditReply(ctx, to, msgs, text+"\n…"); err != nil {
					errs <- err
					return
				}
			}
			final := text + "done."
			key := fmt.Sprintf("turn-%d", c)
			msgs, err := e.a.FinishReply(ctx, to, msgs, final, platform.Reply{Key: key})
			if err != nil {
				errs <- err
				return
			}
			for _, m := range msgs {
				got, _ := f.Message(m.Channel, m.MessageID)
				if got.Text != ToMrkdwn(final) || got.Metadata == nil || got.Metadata.EventPayload["key"] != key {
					errs <- fmt.Errorf("conversation %d ends as %q (metadata %+v), want %q tagged %s", c, got.Text, got.Metadata, ToMrkdwn(final), key)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.RateLimited("chat.update"); n != 0 {
		t.Errorf("%d updates refused by the rate limit, want none", n)
	}
	if n := f.MaxInWindow("chat.update", time.Second); n > budget {
		t.Errorf("%d updates in one second, want at most %d", n, budget)
	}
	if n := len(f.Succeeded("chat.update")); n <= budget {
		t.Errorf("only %d updates: the budget was never reached, the test shows nothing", n)
	}
}
