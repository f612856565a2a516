package fakediscord

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// The standing edit limit refuses edits past the channel's budget with
// Discord's 429, changes nothing, and keeps each channel's budget apart.
func TestEditLimitPerChannel(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	s.AddChannel(Channel{ID: "C2", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	m1, err := d.ChannelMessageSend("C1", "one")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := d.ChannelMessageSend("C2", "two")
	if err != nil {
		t.Fatal(err)
	}
	// A long period: no token comes back while the test runs.
	s.SetEditLimit(2, time.Hour)
	for i := range 2 {
		if _, err := d.ChannelMessageEdit("C1", m1.ID, strings.Repeat("e", i+1)); err != nil {
			t.Fatalf("edit %d within the budget: %v", i+1, err)
		}
	}
	_, err = d.ChannelMessageEdit("C1", m1.ID, "refused")
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter <= 0 {
		t.Fatalf("third edit = %v, want a rate limit", err)
	}
	if got, _ := s.Message(m1.ID); got.Content != "ee" {
		t.Errorf("a refused edit changed the message to %q", got.Content)
	}
	if _, err := d.ChannelMessageEdit("C2", m2.ID, "other channel"); err != nil {
		t.Errorf("an edit in another channel: %v", err)
	}
	if n := s.RateLimitedEdits(); n != 1 {
		t.Errorf("RateLimitedEdits = %d, want 1", n)
	}
	// discordgo holds the bucket until its reset; a new session does not
	// know it.
	s.SetEditLimit(0, 0)
	if _, err := session(t, s, Token).ChannelMessageEdit("C1", m1.ID, "free"); err != nil {
		t.Errorf("an edit with the limit lifted: %v", err)
	}
}

func TestDelete(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	m, err := d.ChannelMessageSend("C1", "gone soon")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ChannelMessageDelete("C1", m.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Message(m.ID); !got.Deleted {
		t.Errorf("message not marked deleted: %+v", got)
	}
	if err := d.ChannelMessageDelete("C1", m.ID); !hasCode(err, 10008) {
		t.Errorf("second delete = %v, want 10008", err)
	}
	if _, err := d.ChannelMessageEdit("C1", m.ID, "x"); !hasCode(err, 10008) {
		t.Errorf("edit of a deleted message = %v, want 10008", err)
	}
	d.Identify.Intents = discordgo.IntentsGuildMessages
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s.WaitConnected(t, 1)
	s.Post(t, MessageEvent("900", "C1", "G1", "7", "someone's", nil))
	if err := d.ChannelMessageDelete("C1", "900"); !hasCode(err, 50013) {
		t.Errorf("deleting another's message = %v, want 50013", err)
	}
}

func TestSelectMenuLimits(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	opts := func(values ...string) []discordgo.SelectMenuOption {
		var out []discordgo.SelectMenuOption
		for _, v := range values {
			out = append(out, discordgo.SelectMenuOption{Label: "L" + v, Value: v})
		}
		return out
	}
	many := make([]string, 26)
	for i := range many {
		many[i] = string(rune('a' + i))
	}
	two := 2
	five := 5
	tests := []struct {
		name  string
		menu  discordgo.SelectMenu
		extra discordgo.MessageComponent // a second component in the row
		ok    bool
		path  string
	}{
		{"fine", discordgo.SelectMenu{CustomID: "m", Options: opts("1", "2"), MaxValues: 2}, nil, true, ""},
		{"26 options", discordgo.SelectMenu{CustomID: "m", Options: opts(many...)}, nil, false, `"options"`},
		{"duplicate value", discordgo.SelectMenu{CustomID: "m", Options: opts("1", "1")}, nil, false, "SELECT_COMPONENT_OPTION_VALUE_DUPLICATED"},
		{"max over options", discordgo.SelectMenu{CustomID: "m", Options: opts("1", "2"), MaxValues: 5}, nil, false, `"max_values"`},
		{"min over max", discordgo.SelectMenu{CustomID: "m", Options: opts("1", "2", "3"), MinValues: &five, MaxValues: 3}, nil, false, `"max_values"`},
		{"placeholder of 151", discordgo.SelectMenu{CustomID: "m", Placeholder: strings.Repeat("p", 151), Options: opts("1")}, nil, false, `"placeholder"`},
		{"a button beside the menu", discordgo.SelectMenu{CustomID: "m", Options: opts("1", "2"), MinValues: &two, MaxValues: 2}, discordgo.Button{Label: "x", CustomID: "b"}, false, "COMPONENT_LAYOUT_WIDTH_EXCEEDED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := discordgo.ActionsRow{Components: []discordgo.MessageComponent{tt.menu}}
			if tt.extra != nil {
				row.Components = append(row.Components, tt.extra)
			}
			_, err := d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Content: "pick", Components: []discordgo.MessageComponent{row}})
			if tt.ok {
				if err != nil {
					t.Fatalf("send = %v", err)
				}
				return
			}
			var re *discordgo.RESTError
			if !errors.As(err, &re) || re.Message == nil || re.Message.Code != 50035 || !strings.Contains(string(re.ResponseBody), tt.path) {
				t.Fatalf("send = %v, want 50035 naming %s", err, tt.path)
			}
		})
	}
}

// Choose sends the values a user picked in a menu, as Discord does when
// the menu closes.
func TestChoose(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	d.Identify.Intents = discordgo.IntentsGuildMessages
	clicks := make(chan *discordgo.InteractionCreate, 1)
	d.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { clicks <- i })
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	s.WaitConnected(t, 1)
	post, err := d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Content: "pick", Components: []discordgo.MessageComponent{
		discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.SelectMenu{CustomID: "menu", MaxValues: 3,
			Options: []discordgo.SelectMenuOption{{Label: "A", Value: "0"}, {Label: "B", Value: "1"}, {Label: "C", Value: "2"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := s.Message(post.ID)
	menus := msg.Menus()
	if len(menus) != 1 || menus[0].MinValues != 1 || menus[0].MaxValues != 3 || len(menus[0].Options) != 3 {
		t.Fatalf("menus = %+v", menus)
	}
	s.Choose(t, msg, "menu", "7", "alice", "0", "2")
	select {
	case ic := <-clicks:
		data := ic.MessageComponentData()
		if data.CustomID != "menu" || data.ComponentType != discordgo.SelectMenuComponent || strings.Join(data.Values, ",") != "0,2" {
			t.Fatalf("data = %+v", data)
		}
	case <-time.After(fakekit.DefaultWaitLimit):
		t.Fatal("no INTERACTION_CREATE")
	}
}
