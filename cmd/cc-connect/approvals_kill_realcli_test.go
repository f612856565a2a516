package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// waitParked waits until a conversation's record under state keeps a
// request that waits on people, naming sub (its prompt's message).
func waitParked(t *testing.T, state, sub string) {
	t.Helper()
	waitFile(t, "the request in the conversation's record", func() bool {
		records, _ := filepath.Glob(filepath.Join(state, "sessions", "*.json"))
		for _, r := range records {
			if b, err := os.ReadFile(r); err == nil && strings.Contains(string(b), sub) && strings.Contains(string(b), `"parked":`) {
				return true
			}
		}
		return false
	})
}

// apiToolResultHas reports whether a tool result the fake Messages API got
// holds sub.
func apiToolResultHas(api *fakeapi.Server, sub string) bool {
	for _, r := range api.Requests() {
		for _, tr := range r.ToolResults {
			if strings.Contains(tr.Content, sub) {
				return true
			}
		}
	}
	return false
}

// TestRealCLIApprovalsOutliveKill: the real claude asks to run a command,
// asks a question (AskUserQuestion), or proposes a plan in plan mode
// (ExitPlanMode); cc-connect is SIGKILLed while the prompt waits in the
// thread, on Slack, Telegram (a forum topic) and Discord (a message's
// thread). The restarted binary says the request still waits, a press on
// the old prompt's button (or, for the question, an answer written in the
// thread) answers it, and it takes effect: the command runs (its file
// exists), Claude gets the answer (the choice, the words, the approval)
// as the tool's result; and no second prompt is posted.
func TestRealCLIApprovalsOutliveKill(t *testing.T) {
	t.Parallel()
	for _, chat := range []struct {
		name string
		open func(t *testing.T) killChat
	}{
		{"slack", newSlackKill},
		{"telegram", newTelegramKill},
		{"discord", newDiscordKill},
	} {
		for _, tc := range []struct {
			name, binding, prompt string
			shows                 string            // the prompt shows
			button                func(string) bool // the button pressed, by its label
			words                 string            // the answer written in the thread instead
			told                  string            // in a tool result Claude gets
			made                  string            // a file the tool allowed makes
		}{
			{
				name: "permission", prompt: "make it [[TOOL:touch made.txt]]",
				shows: "touch made.txt", button: isAllow, made: "made.txt",
			},
			{
				name: "question", prompt: "pick one [[ASK]]",
				shows: "Which color should the button be?", button: labelIs("Blue"),
				told: `"Which color should the button be?"="Blue"`,
			},
			{
				name: "question answered in words", prompt: "pick one [[ASK]]",
				shows: "Which color should the button be?", button: labelIs("Blue"), words: "a soft green",
				told: `"Which color should the button be?"="a soft green"`,
			},
			{
				name: "plan", binding: `permission_mode = "plan"`, prompt: "plan it [[PLAN]]",
				shows: "Write the fix.", button: labelIs("Approve, accept edits"),
				told: "User has approved your plan",
			},
		} {
			t.Run(chat.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				claude := testenv.ClaudeBinary(t)
				api := fakeapi.Start(t)
				c := chat.open(t)
				platform, chatEnv := c.platform(tc.binding)
				path, ws, env := teamConfig(t, claude, platform)
				env = append(append(env, chatEnv...), "CC_CONNECT_TEST_API_URL="+api.URL())
				state := filepath.Join(filepath.Dir(path), "state")
				run := func() *process { return startBinaryEnv(t, env, "run", "--config", path) }
				p := c.start(t, run)

				c.say(t, tc.prompt)
				limit := testenv.HangLimit(t, 60*time.Second)
				prompt, press := c.waitPrompt(t, limit, tc.shows, tc.button)
				waitParked(t, state, `MessageID\":\"`+prompt+`\"`)
				if !kill(t, p, 0) {
					t.Fatalf("cc-connect exited by itself:\n%s", p.stderr.String())
				}

				last := c.start(t, run)
				c.waitPost(t, limit, "the notice that the request still waits", func(_, text string, _ bool) bool {
					return strings.Contains(text, "still waits for an answer")
				})
				if tc.words != "" {
					c.reply(t, tc.words)
				} else {
					press()
				}
				// The resumed turn's reply, or a prompt asking again.
				again := false
				c.waitPost(t, limit, "the resumed turn's reply", func(id, text string, buttons bool) bool {
					again = buttons && id != prompt
					return ctxFigure.MatchString(text) || again
				})
				if again {
					t.Errorf("asked again after the restart")
				}
				if n := c.postsShowing(tc.shows); n != 1 {
					t.Errorf("%d prompts in the thread, want the first one only", n)
				}
				if tc.made != "" {
					if _, err := os.Stat(filepath.Join(ws, tc.made)); err != nil {
						t.Errorf("%s was not made: %v", tc.made, err)
					}
				}
				if tc.told != "" && !apiToolResultHas(api, tc.told) {
					for _, r := range api.Requests() {
						t.Logf("API request: last user text %q, tool results %+v", r.LastUserText, r.ToolResults)
					}
					t.Errorf("Claude was not told %q", tc.told)
				}
				if err := last.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if code := last.exitCode(t); code != 0 {
					t.Errorf("the last instance exited %d", code)
				}
			})
		}
	}
}

// labelIs accepts the label want.
func labelIs(want string) func(string) bool { return func(l string) bool { return l == want } }

// killChat is one chat platform's side of a test that kills cc-connect
// while a prompt waits in a thread: its fake, the thread, and how a person
// there asks, sees and presses.
type killChat interface {
	// platform is the [[platforms]] and [[bindings]] config (the
	// binding's extra keys added) and the environment the binary needs.
	platform(binding string) (toml string, env []string)
	// start runs an instance and waits until it listens; the first call
	// starts the first instance, the next one its successor.
	start(t *testing.T, run func() *process) *process
	// say sends text as the allowed user, mentioning the bot: the
	// thread's first message.
	say(t *testing.T, text string)
	// reply sends text as the allowed user into the thread, after it.
	reply(t *testing.T, text string)
	// waitPrompt waits for the bot's post in the thread showing shows
	// with a button whose label button accepts, and returns its id and a
	// press of that button on it (by the allowed user, the press
	// acknowledged).
	waitPrompt(t *testing.T, limit time.Duration, shows string, button func(label string) bool) (id string, press func())
	// waitPost waits for a post in the thread that match accepts, given
	// its id, text and whether it has buttons.
	waitPost(t *testing.T, limit time.Duration, what string, match func(id, text string, buttons bool) bool)
	// postsShowing counts the bot's posts sent (not edits) with buttons
	// whose text showed shows: the prompts of a request.
	postsShowing(shows string) int
	// mentioning counts the bot's posts sent in the thread whose text
	// holds sub and that notify the allowed user.
	mentioning(sub string) int
}

// slackKill is a Slack channel's thread.
type slackKill struct {
	f  *fakeslack.Server
	ts string
}

func newSlackKill(t *testing.T) killChat {
	return &slackKill{f: fakeslack.New(t), ts: "1700000600.000100"}
}

func (s *slackKill) platform(binding string) (string, []string) {
	return fmt.Sprintf(`
[[platforms]]
name = "slack"
type = "slack"
bot_token = "${SLACK_BOT_TOKEN}"
app_token = "${SLACK_APP_TOKEN}"
api_url = %q
[[bindings]]
platform = "slack"
channel = "C1"
workspace = "ws"
allow_users = ["U0ALICE"]
%s
`, s.f.APIURL(), binding), []string{"SLACK_BOT_TOKEN=" + fakeslack.BotToken, "SLACK_APP_TOKEN=" + fakeslack.AppToken}
}

func (s *slackKill) start(t *testing.T, run func() *process) *process {
	t.Helper()
	n := s.f.Conns()
	p := run()
	s.f.WaitConn(t, n+1)
	return p
}

func (s *slackKill) say(t *testing.T, text string) {
	t.Helper()
	s.f.DeliverMention(t, fakeslack.MsgEvent("C1", s.ts, "U0ALICE", "<@UBOT> "+text, nil))
}

func (s *slackKill) reply(t *testing.T, text string) {
	t.Helper()
	s.f.Deliver(t, fakeslack.MsgEvent("C1", "1700000600.000200", "U0ALICE", text, map[string]any{"thread_ts": s.ts}))
}

func (s *slackKill) waitPrompt(t *testing.T, limit time.Duration, shows string, button func(string) bool) (string, func()) {
	t.Helper()
	var block, action string
	m := slackPostWithin(t, s.f, limit, "the prompt", func(m fakeslack.Message) bool {
		if m.ThreadTS != s.ts || !strings.Contains(m.Blocks, shows) {
			return false
		}
		for _, b := range m.Buttons() {
			if button(b.Text) {
				block, action = b.BlockID, b.ActionID
				return true
			}
		}
		return false
	})
	return m.TS, func() { s.f.WaitAck(t, s.f.PressIn(t, m, block, action, "U0ALICE")) }
}

func (s *slackKill) waitPost(t *testing.T, limit time.Duration, what string, match func(string, string, bool) bool) {
	t.Helper()
	slackPostWithin(t, s.f, limit, what, func(m fakeslack.Message) bool {
		return m.ThreadTS == s.ts && match(m.TS, m.Text, len(m.Buttons()) > 0)
	})
}

func (s *slackKill) postsShowing(shows string) int {
	n := 0
	for _, c := range s.f.Succeeded("chat.postMessage") {
		if strings.Contains(c.Form["blocks"], shows) && strings.Contains(c.Form["blocks"], `"type":"actions"`) {
			n++
		}
	}
	return n
}

func (s *slackKill) mentioning(sub string) int {
	n := 0
	for _, c := range s.f.Succeeded("chat.postMessage") {
		if text := c.Form["text"]; c.Form["thread_ts"] == s.ts && strings.Contains(text, sub) && strings.Contains(text, "<@U0ALICE>") {
			n++
		}
	}
	return n
}

// telegramKill is a topic of a Telegram forum.
type telegramKill struct {
	f     *faketelegram.Server
	alice map[string]any
}

const killForum, killTopic = -1002, 90

func newTelegramKill(t *testing.T) killChat {
	return &telegramKill{f: faketelegram.New(t), alice: faketelegram.User(7, "alice", false)}
}

func (g *telegramKill) platform(binding string) (string, []string) {
	return fmt.Sprintf(`
[[platforms]]
name = "tg"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "tg"
channel = "*"
workspace = "ws"
allow_users = ["7"]
%s
`, g.f.URL(), binding), []string{"TELEGRAM_BOT_TOKEN=" + faketelegram.Token}
}

func (g *telegramKill) start(t *testing.T, run func() *process) *process {
	t.Helper()
	// The instance before (if any) is gone: the next poll is this one's.
	polls := len(g.f.Calls("getUpdates"))
	p := run()
	g.f.Wait(t, "the instance's first poll", func() bool { return len(g.f.Calls("getUpdates")) > polls })
	return p
}

func (g *telegramKill) say(t *testing.T, text string) {
	t.Helper()
	g.f.Send(map[string]any{
		"chat": map[string]any{"id": killForum, "type": "supergroup", "is_forum": true, "title": "dev"},
		"from": g.alice, "text": "@" + faketelegram.BotUsername + " " + text,
		"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		"message_thread_id": killTopic, "is_topic_message": true,
	})
}

// reply is say: in a group, the bot hears what mentions it.
func (g *telegramKill) reply(t *testing.T, text string) { g.say(t, text) }

func (g *telegramKill) waitPrompt(t *testing.T, limit time.Duration, shows string, button func(string) bool) (string, func()) {
	t.Helper()
	var m faketelegram.Message
	label := ""
	g.f.WaitWithin(t, limit, "the prompt", func() bool {
		for _, s := range g.f.Sent() {
			if s.ThreadID != killTopic || !strings.Contains(s.Text, shows) {
				continue
			}
			for _, b := range s.Buttons() {
				if button(b.Text) {
					m, label = s, b.Text
					return true
				}
			}
		}
		return false
	})
	return fmt.Sprint(m.MessageID), func() {
		q := g.f.Press(t, m, label, g.alice)
		g.f.WaitWithin(t, limit, "the press answered", func() bool { return g.f.Answered(q) })
	}
}

func (g *telegramKill) waitPost(t *testing.T, limit time.Duration, what string, match func(string, string, bool) bool) {
	t.Helper()
	g.f.WaitWithin(t, limit, "a post: "+what, func() bool {
		for _, s := range g.f.Sent() {
			if s.ThreadID == killTopic && match(fmt.Sprint(s.MessageID), s.Text, len(s.Buttons()) > 0) {
				return true
			}
		}
		return false
	})
}

func (g *telegramKill) postsShowing(shows string) int {
	n := 0
	for _, c := range g.f.Calls("sendMessage") {
		if strings.Contains(c.Form.Get("text"), shows) && c.Form.Get("reply_markup") != "" {
			n++
		}
	}
	return n
}

func (g *telegramKill) mentioning(sub string) int {
	n := 0
	for _, m := range g.f.Sent() {
		if m.ThreadID == killTopic && m.FromBot && strings.Contains(m.Text, sub) && slices.Contains(m.Mentions, "tg://user?id=7") {
			n++
		}
	}
	return n
}

// discordKill is the thread cc-connect opens on a Discord message.
type discordKill struct {
	f *fakediscord.Server
}

// discordKillMsg is the message whose thread (the same id) the test runs in.
const discordKillMsg = "2001"

func newDiscordKill(t *testing.T) killChat {
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	return &discordKill{f: f}
}

func (d *discordKill) platform(binding string) (string, []string) {
	return fmt.Sprintf(`
[[platforms]]
name = "dc"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
thread_per_message = true
[[bindings]]
platform = "dc"
channel = "*"
workspace = "ws"
allow_users = ["7"]
%s
`, d.f.URL(), binding), []string{"DISCORD_BOT_TOKEN=" + fakediscord.Token}
}

func (d *discordKill) start(t *testing.T, run func() *process) *process {
	t.Helper()
	n := d.f.Connects()
	p := run()
	d.f.WaitConnected(t, n+1)
	return p
}

func (d *discordKill) say(t *testing.T, text string) {
	t.Helper()
	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	d.f.Post(t, fakediscord.MessageEvent(discordKillMsg, "C1", "G1", "7", "<@"+fakediscord.BotID+"> "+text, map[string]any{"mentions": []any{bot}}))
}

func (d *discordKill) reply(t *testing.T, text string) {
	t.Helper()
	d.f.Post(t, fakediscord.MessageEvent("2002", discordKillMsg, "G1", "7", text, nil))
}

func (d *discordKill) waitPrompt(t *testing.T, limit time.Duration, shows string, button func(string) bool) (string, func()) {
	t.Helper()
	var custom string
	m := discordPostWithin(t, d.f, limit, "the prompt", func(m fakediscord.Message) bool {
		if m.ChannelID != discordKillMsg || !strings.Contains(m.Content, shows) {
			return false
		}
		for _, b := range m.Buttons() {
			if button(b.Label) {
				custom = b.CustomID
				return true
			}
		}
		return false
	})
	return m.ID, func() {
		in := d.f.Click(t, m, custom, "7", "alice")
		d.f.WaitWithin(t, limit, "the click answered", func() bool {
			_, ok := d.f.InteractionAnswer(in)
			return ok
		})
	}
}

func (d *discordKill) waitPost(t *testing.T, limit time.Duration, what string, match func(string, string, bool) bool) {
	t.Helper()
	discordPostWithin(t, d.f, limit, what, func(m fakediscord.Message) bool {
		return m.ChannelID == discordKillMsg && match(m.ID, m.Content, len(m.Buttons()) > 0)
	})
}

func (d *discordKill) postsShowing(shows string) int {
	n := 0
	for _, c := range d.f.Calls() {
		if c.Method == "POST" && c.Path == "/channels/"+discordKillMsg+"/messages" && c.Status == 200 {
			comps, _ := c.Body["components"].([]any)
			if s, _ := c.Body["content"].(string); strings.Contains(s, shows) && len(comps) > 0 {
				n++
			}
		}
	}
	return n
}

func (d *discordKill) mentioning(sub string) int {
	n := 0
	for _, c := range d.f.Calls() {
		if c.Method == "POST" && c.Path == "/channels/"+discordKillMsg+"/messages" && c.Status == 200 {
			if s, _ := c.Body["content"].(string); strings.Contains(s, sub) && slices.Contains(c.Pings, "user 7") {
				n++
			}
		}
	}
	return n
}
