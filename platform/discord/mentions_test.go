package discord

import (
	"context"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

// Claude's text, however it names people, notifies nobody: every message
// the bot posts or edits (replies, edits, prompts and their outcome)
// carries allowed_mentions with an empty parse list.
func TestMessagesPingNobody(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	ctx := context.Background()
	text := "@everyone @here <@123> <@!456> <@&789> look " + strings.Repeat("x", 2100) + " @everyone again"
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	posted, err := a.Send(ctx, to, text)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, posted, "@everyone edited <@123>"); err != nil {
		t.Fatal(err)
	}
	prompt, err := a.AskPermission(ctx, to, platform.PermissionPrompt{RequestID: "r1", Tool: "Bash", Text: "@here ```\n<@&789>\n```"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ResolvePermission(ctx, prompt, "denied by @everyone"); err != nil {
		t.Fatal(err)
	}
	want := []string{"POST", "POST", "PATCH", "POST", "PATCH"} // two parts, the edit, the prompt, its outcome
	for i, method := range want {
		c := f.Next(t, method, "/channels/C1/messages")
		if len(c.Pings) > 0 {
			t.Errorf("message %d (%s) would notify %q: %v", i+1, method, c.Pings, c.Body)
		}
		if am, ok := c.Body["allowed_mentions"].(map[string]any); !ok || len(am["parse"].([]any)) != 0 || am["users"] != nil || am["roles"] != nil {
			t.Errorf("message %d (%s) allowed_mentions = %v, want parse empty and no ids", i+1, method, c.Body["allowed_mentions"])
		}
	}
}

// A mention cc-connect asks for notifies that user and nobody else, on the
// first part only; an id that is not a Discord user's is refused.
func TestSendMentioning(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	ctx := context.Background()
	to := platform.Target{Platform: "dc-test", Channel: "C1"}
	text := "done @everyone <@999> " + strings.Repeat("y", 2100)
	if _, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: "123", UserName: "ann"}}, text); err != nil {
		t.Fatal(err)
	}
	first := f.Next(t, "POST", "/channels/C1/messages")
	if got, _ := first.Body["content"].(string); !strings.HasPrefix(got, "<@123> done") || len(first.Pings) != 1 || first.Pings[0] != "user 123" {
		t.Errorf("first part %q pings %q, want only user 123", got, first.Pings)
	}
	if second := f.Next(t, "POST", "/channels/C1/messages"); len(second.Pings) != 0 {
		t.Errorf("second part pings %q", second.Pings)
	}
	for _, bad := range []string{"everyone", "1> <@&2", ""} {
		if _, err := a.SendMentioning(ctx, to, []platform.Mention{{UserID: bad}}, "x"); err == nil {
			t.Errorf("SendMentioning accepted the user id %q", bad)
		}
	}
}
