package fakediscord

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/cc-connect/cc-connect/internal/fakekit"
)

// session is a discordgo session whose endpoints point at the fake.
func session(t *testing.T, s *Server, token string) *discordgo.Session {
	t.Helper()
	d, err := discordgo.New("Bot " + token)
	if err != nil {
		t.Fatal(err)
	}
	d.Client = &http.Client{Transport: redirect{s.URL()}, Timeout: fakekit.DefaultWaitLimit}
	d.ShouldRetryOnRateLimit = false
	d.ShouldReconnectOnError = false
	d.LogLevel = -1
	return d
}

// redirect sends https://discord.com/... to the fake.
type redirect struct{ base string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == "discord.com" {
		u := *req.URL
		u.Scheme, u.Host = "http", strings.TrimPrefix(r.base, "http://")
		req = req.Clone(req.Context())
		req.URL = &u
	}
	return http.DefaultTransport.RoundTrip(req)
}

func restErr(err error) (int, int) {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Response.StatusCode, re.Message.Code
	}
	return 0, 0
}

func TestMessageLimits(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	row := func(ids ...string) discordgo.ActionsRow {
		var r discordgo.ActionsRow
		for _, id := range ids {
			r.Components = append(r.Components, discordgo.Button{Label: "ok", CustomID: id, Style: discordgo.PrimaryButton})
		}
		return r
	}
	tests := []struct {
		name       string
		channel    string
		msg        *discordgo.MessageSend
		status     int
		code       int
		errorsPath string // a field the 50035 answer must name
	}{
		{"2,000 characters", "C1", &discordgo.MessageSend{Content: strings.Repeat("a", 2000)}, 200, 0, ""},
		{"2,001 characters", "C1", &discordgo.MessageSend{Content: strings.Repeat("a", 2001)}, 400, 50035, `"content":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 2000 or fewer in length."}]}`},
		{"1,001 emoji are 2,002 UTF-16 units", "C1", &discordgo.MessageSend{Content: strings.Repeat("😀", 1001)}, 400, 50035, `"content"`},
		{"empty", "C1", &discordgo.MessageSend{Content: " "}, 400, 50006, ""},
		{"custom_id of 101", "C1", &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row(strings.Repeat("c", 101))}}, 400, 50035, `"custom_id"`},
		{"six buttons in a row", "C1", &discordgo.MessageSend{Content: "x", Components: []discordgo.MessageComponent{row("1", "2", "3", "4", "5", "6")}}, 400, 50035, `"components"`},
		{"unknown channel", "C404", &discordgo.MessageSend{Content: "x"}, 404, 10003, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := d.ChannelMessageSendComplex(tt.channel, tt.msg)
			if tt.status == 200 {
				if err != nil {
					t.Fatalf("send = %v", err)
				}
				if got, ok := s.Message(m.ID); !ok || got.Content != tt.msg.Content {
					t.Errorf("the post is not kept: %+v", got)
				}
				return
			}
			if status, code := restErr(err); status != tt.status || code != tt.code {
				t.Fatalf("send = %v, want HTTP %d code %d", err, tt.status, tt.code)
			}
			var re *discordgo.RESTError
			errors.As(err, &re)
			if !strings.Contains(string(re.ResponseBody), tt.errorsPath) {
				t.Errorf("body %s does not name %s", re.ResponseBody, tt.errorsPath)
			}
		})
	}
}

func TestEditsReactionsAndThreads(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	m, err := d.ChannelMessageSend("C1", "first")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ChannelMessageEdit("C1", m.ID, "second"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ChannelMessageEdit("C1", "4242", "x"); !hasCode(err, 10008) {
		t.Errorf("edit of a missing message = %v, want 10008", err)
	}
	if _, err := d.ChannelMessageEdit("C1", m.ID, strings.Repeat("x", 2001)); !hasCode(err, 50035) {
		t.Errorf("edit past 2,000 = %v, want 50035", err)
	}
	if err := d.MessageReactionAdd("C1", m.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if err := d.MessageReactionAdd("C1", m.ID, "eyes"); !hasCode(err, 10014) {
		t.Errorf("a reaction by name = %v, want Unknown Emoji", err)
	}
	got, _ := s.Message(m.ID)
	if got.Content != "second" || len(got.Edits) != 1 || len(got.Reactions) != 1 || got.Reactions[0] != "👀" {
		t.Errorf("message = %+v", got)
	}
	th, err := d.MessageThreadStartComplex("C1", m.ID, &discordgo.ThreadStart{Name: "topic"})
	if err != nil || th.ID != m.ID || th.ParentID != "C1" {
		t.Fatalf("thread = %+v, %v", th, err)
	}
	if _, err := d.ChannelMessageSend(th.ID, "in the thread"); err != nil {
		t.Errorf("posting in the new thread: %v", err)
	}
}

func hasCode(err error, code int) bool {
	_, c := restErr(err)
	return c == code
}

func TestRateLimitBody(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0})
	d := session(t, s, Token)
	s.RateLimit("POST /channels/C1/messages", 0.25)
	_, err := d.ChannelMessageSend("C1", "x")
	var rl *discordgo.RateLimitError
	if !errors.As(err, &rl) || rl.RetryAfter != 250*time.Millisecond {
		t.Fatalf("send = %v, want a rate limit of 250ms", err)
	}
	if _, err := discordgo.New("Bot wrong"); err != nil {
		t.Fatal(err)
	}
	if _, err := session(t, s, "wrong").ChannelMessageSend("C1", "x"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("send with a wrong token = %v", err)
	}
}

func TestGatewayEchoAndInteractions(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	d.Identify.Intents = discordgo.IntentsGuildMessages
	got := make(chan string, 10)
	d.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) { got <- m.Content })
	clicks := make(chan *discordgo.InteractionCreate, 10)
	d.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) { clicks <- i })
	if err := d.Open(); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if fr := s.Frame(t); fr.Op != 2 {
		t.Fatalf("first frame op %d", fr.Op)
	}
	s.WaitConnected(t, 1)
	recv := func() string {
		t.Helper()
		select {
		case c := <-got:
			return c
		case <-time.After(fakekit.DefaultWaitLimit):
			t.Fatal("no MESSAGE_CREATE")
			return ""
		}
	}
	s.Post(t, MessageEvent("1", "C1", "G1", "7", "hello", nil))
	if c := recv(); c != "hello" {
		t.Fatalf("got %q", c)
	}

	// The bot's post comes back; a button on it can be clicked once,
	// within 3 s.
	post, err := d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Content: "allow?", Components: []discordgo.MessageComponent{
		discordgo.ActionsRow{Components: []discordgo.MessageComponent{discordgo.Button{Label: "Allow", CustomID: "allow:1"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if c := recv(); c != "allow?" {
		t.Fatalf("echo = %q", c)
	}
	msg, _ := s.Message(post.ID)
	id := s.Click(t, msg, "allow:1", "7", "alice")
	var ic *discordgo.InteractionCreate
	select {
	case ic = <-clicks:
	case <-time.After(fakekit.DefaultWaitLimit):
		t.Fatal("no INTERACTION_CREATE")
	}
	if ic.ID != id || ic.MessageComponentData().CustomID != "allow:1" || ic.Member.User.ID != "7" || ic.Message.ID != post.ID {
		t.Fatalf("interaction = %+v", ic.Interaction)
	}
	answer := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	if err := d.InteractionRespond(ic.Interaction, answer); err != nil {
		t.Fatal(err)
	}
	if err := d.InteractionRespond(ic.Interaction, answer); !hasCode(err, 40060) {
		t.Errorf("second answer = %v, want 40060", err)
	}
	if a, ok := s.InteractionAnswer(id); !ok || a["type"] != float64(6) {
		t.Errorf("answer = %v", a)
	}
}

// Whom a message notifies follows its allowed_mentions: everything in the
// content without the field, only what it names with it; a reply pings its
// author unless replied_user is false.
func TestPings(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	const content = "@everyone @here <@1> <@!2> <@&3>"
	none := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	tests := []struct {
		name  string
		am    *discordgo.MessageAllowedMentions
		reply bool
		want  string // the pings, joined by commas
	}{
		{"no allowed_mentions", nil, false, "@everyone,@here,user 1,user 2,role 3"},
		{"parse empty", none, false, ""},
		{"parse users", &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}, false, "user 1,user 2"},
		{"parse everyone", &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeEveryone}}, false, "@everyone,@here"},
		{"one user listed", &discordgo.MessageAllowedMentions{Users: []string{"2"}}, false, "user 2"},
		{"one role listed", &discordgo.MessageAllowedMentions{Roles: []string{"3"}}, false, "role 3"},
		{"a user's id does not allow a role", &discordgo.MessageAllowedMentions{Users: []string{"3"}}, false, ""},
		{"a reply without allowed_mentions", nil, true, "@everyone,@here,user 1,user 2,role 3,replied user"},
		{"a reply with parse empty", none, true, ""},
		{"a reply with replied_user", &discordgo.MessageAllowedMentions{RepliedUser: true}, true, "replied user"},
	}
	first, err := d.ChannelMessageSend("C1", "first")
	if err != nil {
		t.Fatal(err)
	}
	s.Next(t, "POST", "/channels/C1/messages")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := &discordgo.MessageSend{Content: content, AllowedMentions: tt.am}
			if tt.reply {
				msg.Reference = first.Reference()
			}
			m, err := d.ChannelMessageSendComplex("C1", msg)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.Next(t, "POST", "/channels/C1/messages").Pings, ","); got != tt.want {
				t.Errorf("post pings %q, want %q", got, tt.want)
			}
			if tt.reply {
				return // an edit is no reply
			}
			c := content
			if _, err := d.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: m.ID, Channel: "C1", Content: &c, AllowedMentions: tt.am}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(s.Next(t, "PATCH", "/channels/C1/messages/"+m.ID).Pings, ","); got != tt.want {
				t.Errorf("edit pings %q, want %q", got, tt.want)
			}
		})
	}
	// A refused post is reported too: what it would have done.
	if _, err := d.ChannelMessageSend("C1", "@here "+strings.Repeat("x", 2001)); err == nil {
		t.Fatal("a post over 2,000 characters was taken")
	}
	if c := s.Next(t, "POST", "/channels/C1/messages"); c.Status != 400 || strings.Join(c.Pings, ",") != "@here" {
		t.Errorf("refused post: status %d, pings %q", c.Status, c.Pings)
	}
	if err := d.ChannelTyping("C1"); err != nil {
		t.Fatal(err)
	}
	if c := s.Next(t, "POST", "/channels/C1/typing"); c.Pings != nil {
		t.Errorf("typing pings %q", c.Pings)
	}
}
