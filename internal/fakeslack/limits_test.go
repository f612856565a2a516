package fakeslack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakekit"
	"github.com/slack-go/slack"
)

// TestStandingRateLimit holds chat.update to its tier across channels: the
// burst goes through, the next edit anywhere in the workspace is refused
// with Slack's 429 and changes nothing.
func TestStandingRateLimit(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.SetRateLimit("chat.update", 1, 2) // one a minute after a burst of two: nothing refills during the test
	var ts []string
	for _, ch := range []string{"C1", "C2", "C1"} {
		_, id, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText("v0", false))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, id)
	}
	for i, ch := range []string{"C1", "C2"} {
		if _, _, _, err := api.UpdateMessageContext(ctx, ch, ts[i], slack.MsgOptionText("v1", false)); err != nil {
			t.Fatalf("edit %d within the burst: %v", i+1, err)
		}
	}
	_, _, _, err := api.UpdateMessageContext(ctx, "C1", ts[2], slack.MsgOptionText("v1", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter < 1 {
		t.Fatalf("edit past the limit = %v, want HTTP 429 with Retry-After", err)
	}
	if m, _ := s.Message("C1", ts[2]); m.Text != "v0" || len(m.Edits) != 0 {
		t.Errorf("the refused edit changed the message: %+v", m)
	}
	if n := s.RateLimited("chat.update"); n != 1 {
		t.Errorf("RateLimited = %d, want 1", n)
	}
	// Posting is another method, another tier.
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("x", false)); err != nil {
		t.Errorf("a post while edits are limited: %v", err)
	}
	s.SetRateLimit("chat.update", 0, 0)
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts[2], slack.MsgOptionText("v1", false)); err != nil {
		t.Errorf("edit once the limit is lifted: %v", err)
	}
}

func TestDelete(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("bye", false))
	if err != nil {
		t.Fatal(err)
	}
	s.AddMessage("C1", "1700000000.000009", "U1", "a user's")
	steps := []struct {
		name, channel, ts, want string
	}{
		{"the bot's own", "C1", ts, ""},
		{"again", "C1", ts, "message_not_found"},
		{"a user's", "C1", "1700000000.000009", "cant_delete_message"},
		{"no such channel", "c-bad", ts, "channel_not_found"},
	}
	for _, st := range steps {
		_, _, err := api.DeleteMessageContext(ctx, st.channel, st.ts)
		if got := slackErr(err); got != st.want {
			t.Errorf("%s: error %q, want %q", st.name, got, st.want)
		}
	}
	if m, _ := s.Message("C1", ts); !m.Deleted {
		t.Errorf("message after chat.delete = %+v", m)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("back", false)); slackErr(err) != "message_not_found" {
		t.Errorf("editing a deleted message = %v", err)
	}
}

func TestMultiSelectMenu(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	opt := func(v, text string) *slack.OptionBlockObject {
		return slack.NewOptionBlockObject(v, slack.NewTextBlockObject(slack.PlainTextType, text, false, false), nil)
	}
	menu := func(opts ...*slack.OptionBlockObject) *slack.MultiSelectBlockElement {
		return slack.NewOptionsMultiSelectBlockElement(slack.MultiOptTypeStatic,
			slack.NewTextBlockObject(slack.PlainTextType, "Choose", false, false), "pick", opts...)
	}
	withInitial := menu(opt("0", "Auth"), opt("1", "Export"))
	withInitial.InitialOptions = []*slack.OptionBlockObject{opt("1", "Export")}
	badInitial := menu(opt("0", "Auth"))
	badInitial.InitialOptions = []*slack.OptionBlockObject{opt("9", "Nine")}
	button := slack.NewButtonBlockElement("pick", "v", slack.NewTextBlockObject(slack.PlainTextType, "Go", false, false))
	tests := []struct {
		name   string
		blocks []slack.Block
		want   string
	}{
		{"menu with a preset choice", []slack.Block{slack.NewActionBlock("q0", withInitial)}, ""},
		{"no options", []slack.Block{slack.NewActionBlock("q0", menu())}, "invalid_blocks"},
		{"label over 75", []slack.Block{slack.NewActionBlock("q0", menu(opt("0", strings.Repeat("l", 76))))}, "invalid_blocks"},
		{"initial option not among the options", []slack.Block{slack.NewActionBlock("q0", badInitial)}, "invalid_blocks"},
		{"action id twice in a block", []slack.Block{slack.NewActionBlock("q0", menu(opt("0", "A")), button)}, "invalid_blocks"},
		{"block id twice", []slack.Block{slack.NewActionBlock("q0", button), slack.NewActionBlock("q0", button)}, "invalid_blocks"},
	}
	for _, tt := range tests {
		_, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("q", false), slack.MsgOptionBlocks(tt.blocks...))
		if got := slackErr(err); got != tt.want {
			t.Errorf("%s: error %q, want %q", tt.name, got, tt.want)
		}
	}
	posted := s.Posts()[0]
	menus := posted.Menus()
	if len(menus) != 1 || menus[0].BlockID != "q0" || len(menus[0].Options) != 2 || strings.Join(menus[0].Initial, ",") != "1" {
		t.Fatalf("menus = %+v", menus)
	}

	// Choosing delivers block_actions with every option now selected.
	ws := dial(t, s)
	s.WaitConn(t, 1)
	s.Choose(t, posted, "q0", "pick", "U1", "0", "1")
	_ = ws.SetReadDeadline(time.Now().Add(fakekit.DefaultWaitLimit))
	var env struct {
		Payload json.RawMessage `json:"payload"`
	}
	if err := ws.ReadJSON(&env); err != nil {
		t.Fatal(err)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal(env.Payload, &cb); err != nil {
		t.Fatal(err)
	}
	acts := cb.ActionCallback.BlockActions
	if len(acts) != 1 || acts[0].BlockID != "q0" || acts[0].ActionID != "pick" || len(acts[0].SelectedOptions) != 2 ||
		acts[0].SelectedOptions[1].Value != "1" || cb.User.ID != "U1" {
		t.Errorf("the menu's action = %+v", acts)
	}
}

// TestChatUpdateHeldToTier3: by default chat.update takes 50 calls in any
// minute across the workspace, in a burst if need be; the 51st is refused
// with Slack's 429 and Retry-After, and changes nothing. A window set later
// counts the calls made before it.
func TestChatUpdateHeldToTier3(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	var ts []string
	for _, ch := range []string{"C1", "C2"} {
		_, id, err := api.PostMessageContext(ctx, ch, slack.MsgOptionText("v0", false))
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, id)
	}
	for i := range Tier3PerMinute {
		if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts[0], slack.MsgOptionText(fmt.Sprint("v", i+1), false)); err != nil {
			t.Fatalf("update %d of the minute's %d: %v", i+1, Tier3PerMinute, err)
		}
	}
	_, _, _, err := api.UpdateMessageContext(ctx, "C2", ts[1], slack.MsgOptionText("v1", false))
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) || rl.RetryAfter < time.Second || rl.RetryAfter > time.Minute {
		t.Fatalf("update %d in another channel = %v, want HTTP 429 with Retry-After within the minute", Tier3PerMinute+1, err)
	}
	if m, _ := s.Message("C2", ts[1]); m.Text != "v0" || len(m.Edits) != 0 {
		t.Errorf("the refused update changed the message: %+v", m)
	}
	if n := s.MaxInWindow("chat.update", time.Minute); n != Tier3PerMinute {
		t.Errorf("MaxInWindow = %d, want %d (the refusal does not count)", n, Tier3PerMinute)
	}

	s.SetWindowLimit("chat.update", 100, time.Minute)
	for i := range 100 - Tier3PerMinute {
		if _, _, _, err := api.UpdateMessageContext(ctx, "C2", ts[1], slack.MsgOptionText(fmt.Sprint("w", i), false)); err != nil {
			t.Fatalf("update %d under a window of 100: %v", Tier3PerMinute+i+1, err)
		}
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C2", ts[1], slack.MsgOptionText("over", false)); !errors.As(err, &rl) {
		t.Errorf("update 101 in the minute = %v, want HTTP 429: the window forgot the calls before it was set", err)
	}
}
