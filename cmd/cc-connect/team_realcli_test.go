package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/chatprompt"
	"github.com/cc-connect/cc-connect/internal/fakeapi"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/internal/testenv"
)

// teamSlackConfig runs a Slack channel against the real claude, pointed at
// the fake Messages API, with a binding that overrides the model, every
// long turn mentioning who asked (notify_after 0s), and the thread context
// on.
func teamSlackConfig(t *testing.T, claude, slackAPI string) (path, ws string, env []string) {
	t.Helper()
	path, ws, env = teamConfig(t, claude, fmt.Sprintf(`
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
allow_users = ["U0ALICE", "U0BOB"]
model = "sonnet"
`, slackAPI))
	return path, ws, append(env, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_APP_TOKEN="+fakeslack.AppToken)
}

// teamConfig writes a config for the real claude against the fake
// Messages API with [chat] notify_after 0s and the platforms and bindings
// given; it returns its path, the workspace and the environment to start
// the binary with (its own TMPDIR: the fakes' bot tokens are every
// test's, and the token lock would keep two tests apart).
func teamConfig(t *testing.T, claude, platforms string) (path, ws string, env []string) {
	t.Helper()
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	tmp := filepath.Join(dir, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	path = writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
idle_timeout = "5m"
model = "opus"
[agent.env]
HOME = %q
CLAUDE_CONFIG_DIR = %q
ANTHROPIC_BASE_URL = "${CC_CONNECT_TEST_API_URL}"
ANTHROPIC_API_KEY = "sk-cc-connect-test-key"
DISABLE_TELEMETRY = "1"
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
DISABLE_AUTOUPDATER = "1"
[chat]
notify_after = "0s"
thread_context_messages = 20
%s`, claude, home, filepath.Join(home, ".claude"), platforms))
	return path, filepath.Join(dir, "ws"), []string{"TMPDIR=" + tmp}
}

// TestRealCLITeamThreadThroughTheBinary: a mention in a Slack thread the bot was
// not part of reaches the real claude with the thread's earlier messages
// and the sender header, on the binding's model; Claude's send_file posts
// the workspace file's exact bytes into that thread; and the person who
// asked is mentioned when the turn ends.
func TestRealCLITeamThreadThroughTheBinary(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakeslack.New(t)
	path, ws, env := teamSlackConfig(t, claude, f.APIURL())
	report := []byte("build 42: 3 failures\n\x00\xff binary tail\n")
	if err := os.WriteFile(filepath.Join(ws, "report.txt"), report, 0o644); err != nil {
		t.Fatal(err)
	}
	const root, earlier, mention = "1700000100.000100", "1700000101.000100", "1700000102.000100"
	f.Put(fakeslack.Message{Channel: "C1", TS: root, User: "U0BOB", Text: "the deploy failed again"})
	f.Put(fakeslack.Message{Channel: "C1", TS: earlier, ThreadTS: root, User: "U0BOB", Text: "it is the migration step"})
	p := startBinaryEnv(t, append(env, "CC_CONNECT_TEST_API_URL="+api.URL()), "run", "--config", path)
	f.WaitConn(t, 1)

	f.DeliverMention(t, fakeslack.MsgEvent("C1", mention, "U0ALICE", `<@UBOT> please send the report [[MCP:cc-connect/send_file {"path":"report.txt","comment":"the report"}]]`,
		map[string]any{"thread_ts": root}))

	limit := testenv.HangLimit(t, 60*time.Second)
	var up fakeslack.Upload
	f.WaitWithin(t, limit, "the file shared in the thread", func() bool {
		for _, u := range f.Uploads() {
			if u.Channel == "C1" && u.ThreadTS == root {
				up = u
				return true
			}
		}
		return false
	})
	if !bytes.Equal(up.Data, report) || up.Name != "report.txt" {
		t.Errorf("upload %q (%q), want report.txt's exact bytes", up.Name, up.Data)
	}
	slackPostWithin(t, f, limit, "the reply in the thread", func(m fakeslack.Message) bool {
		return m.ThreadTS == root && strings.Contains(m.Text, "sent report.txt")
	})
	slackPostWithin(t, f, limit, "the mention of who asked", func(m fakeslack.Message) bool {
		return m.ThreadTS == root && strings.Contains(m.Text, "<@U0ALICE>") && strings.Contains(m.Text, "the turn you asked for is done")
	})

	reqs := api.Requests()
	first := reqs[0]
	if first.Model != "claude-sonnet-5-5" {
		t.Errorf("the API was asked for %q, want the binding's sonnet (claude-sonnet-5-5), not [agent]'s opus", first.Model)
	}
	for _, want := range []string{
		"[cc-connect] Earlier messages of this thread", "the deploy failed again", "who started the thread", "it is the migration step",
		"[cc-connect] message from", "(slack user U0ALICE)\nplease send the report",
	} {
		if !strings.Contains(first.Prompt, want) {
			t.Errorf("the first request's prompt lacks %q:\n%s", want, first.Prompt)
		}
	}
	if !slices.ContainsFunc(first.System, func(s string) bool { return strings.Contains(s, chatprompt.TeamInstruction) }) {
		t.Error("the system prompt lacks the team instruction")
	}
	if strings.Contains(p.stderr.String(), "sk-cc-connect-test-key") {
		t.Error("the API key reached the log")
	}
}

// TestRealCLITeamImageThroughTheBinary: a picture a user posts on Slack reaches
// the model as an image block with the bytes Slack served.
func TestRealCLITeamImageThroughTheBinary(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakeslack.New(t)
	path, _, env := teamSlackConfig(t, claude, f.APIURL())
	startBinaryEnv(t, append(env, "CC_CONNECT_TEST_API_URL="+api.URL()), "run", "--config", path)
	f.WaitConn(t, 1)
	img := image.NewRGBA(image.Rect(0, 0, 6, 4))
	for x := range 6 {
		img.Set(x, 1, color.RGBA{R: 255, A: 255})
	}
	var pic bytes.Buffer
	if err := png.Encode(&pic, img); err != nil {
		t.Fatal(err)
	}
	file := f.AddFile("F9", "graph.png", "image/png", pic.String())
	const ts = "1700000200.000100"
	f.DeliverMention(t, fakeslack.MsgEvent("C1", ts, "U0ALICE", "<@UBOT> what does this show?", map[string]any{
		"subtype": "file_share", "files": []any{file.Object()},
	}))
	slackPostWithin(t, f, testenv.HangLimit(t, 60*time.Second), "the reply", func(m fakeslack.Message) bool {
		return m.ThreadTS == ts && strings.Contains(m.Text, "what does this show?")
	})
	var got []fakeapi.Image
	for _, m := range api.Requests()[0].Messages {
		if m.Role == "user" {
			got = append(got, m.Images()...)
		}
	}
	if len(got) != 1 || got[0].MediaType != "image/png" {
		t.Fatalf("images the model got %+v, want the PNG", got)
	}
	if data, err := base64.StdEncoding.DecodeString(got[0].Data); err != nil || !bytes.Equal(data, pic.Bytes()) {
		t.Errorf("the model's image is not the bytes Slack served (%v)", err)
	}
}

// TestRealCLITeamDiscordThroughTheBinary: on Discord, the real claude's send_file
// posts the file's exact bytes as an attachment in the thread the mention
// opened, the prompt carries the sender header, and the asker is
// mentioned by id when the turn ends.
func TestRealCLITeamDiscordThroughTheBinary(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	path, ws, env := teamConfig(t, claude, fmt.Sprintf(`
[[platforms]]
name = "discord"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
thread_per_message = true
[[bindings]]
platform = "discord"
workspace = "ws"
allow_users = ["7"]
`, f.URL()))
	data := []byte("a,b\n1,2\n")
	if err := os.WriteFile(filepath.Join(ws, "table.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	startBinaryEnv(t, append(env, "DISCORD_BOT_TOKEN="+fakediscord.Token, "CC_CONNECT_TEST_API_URL="+api.URL()), "run", "--config", path)
	f.WaitConnected(t, 1)
	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	f.Post(t, fakediscord.MessageEvent("2001", "C1", "G1", "7",
		"<@"+fakediscord.BotID+`> the table please [[MCP:cc-connect/send_file {"path":"table.csv"}]]`, map[string]any{"mentions": []any{bot}}))
	limit := testenv.HangLimit(t, 60*time.Second)
	post := discordPostWithin(t, f, limit, "the file in the thread", func(m fakediscord.Message) bool {
		return m.ChannelID == "2001" && len(m.Attachments) == 1
	})
	if a := post.Attachments[0]; a.Filename != "table.csv" || !bytes.Equal(a.Data, data) {
		t.Errorf("attachment %q %q, want table.csv's exact bytes", a.Filename, a.Data)
	}
	discordPostWithin(t, f, limit, "the mention of who asked", func(m fakediscord.Message) bool {
		return m.ChannelID == "2001" && strings.HasPrefix(m.Content, "<@7>")
	})
	if p := api.Requests()[0].Prompt; !strings.Contains(p, "[cc-connect] message from") || !strings.Contains(p, "(discord user 7)\nthe table please") {
		t.Errorf("prompt %q lacks the sender header", p)
	}
}

// TestRealCLITeamTelegramThroughTheBinary: in a Telegram forum topic, the real
// claude's send_file sends the file's exact bytes as a document into the
// topic, and the prompt carries the sender header.
func TestRealCLITeamTelegramThroughTheBinary(t *testing.T) {
	t.Parallel()
	claude := testenv.ClaudeBinary(t)
	api := fakeapi.Start(t)
	f := faketelegram.New(t)
	path, ws, env := teamConfig(t, claude, fmt.Sprintf(`
[[platforms]]
name = "telegram"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "telegram"
workspace = "ws"
allow_users = ["7"]
`, f.URL()))
	data := []byte("%PDF-1.4 not really\n\x00\x01")
	if err := os.WriteFile(filepath.Join(ws, "notes.pdf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	startBinaryEnv(t, append(env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "CC_CONNECT_TEST_API_URL="+api.URL()), "run", "--config", path)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })
	text := "@" + faketelegram.BotUsername + ` the notes [[MCP:cc-connect/send_file {"path":"notes.pdf","comment":"here they are"}]]`
	f.Send(map[string]any{
		"chat": map[string]any{"id": -1001, "type": "supergroup", "is_forum": true, "title": "dev"},
		"from": faketelegram.User(7, "alice", false), "text": text,
		"entities":          []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}},
		"message_thread_id": 77, "is_topic_message": true,
	})
	var doc faketelegram.Message
	f.WaitWithin(t, testenv.HangLimit(t, 60*time.Second), "the document in the topic", func() bool {
		for _, m := range f.Sent() {
			if m.File != nil && m.ChatID == -1001 && m.ThreadID == 77 {
				doc = m
				return true
			}
		}
		return false
	})
	if doc.File.Photo || doc.File.Name != "notes.pdf" || !bytes.Equal(doc.File.Data, data) || doc.Text != "here they are" {
		t.Errorf("sent %+v (caption %q), want notes.pdf's exact bytes as a document with the comment", doc.File, doc.Text)
	}
	if p := api.Requests()[0].Prompt; !strings.Contains(p, "(telegram user 7)\nthe notes") {
		t.Errorf("prompt %q lacks the sender header", p)
	}
}

// slackPostWithin waits, as long as the run allows, for a post match
// accepts (a real CLI turn on a loaded machine outlasts the fake's limit).
func slackPostWithin(t *testing.T, f *fakeslack.Server, limit time.Duration, what string, match func(fakeslack.Message) bool) fakeslack.Message {
	t.Helper()
	var found fakeslack.Message
	f.WaitWithin(t, limit, "a post: "+what, func() bool {
		for _, m := range f.Posts() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// discordPostWithin is slackPostWithin on the fake Discord.
func discordPostWithin(t *testing.T, f *fakediscord.Server, limit time.Duration, what string, match func(fakediscord.Message) bool) fakediscord.Message {
	t.Helper()
	var found fakediscord.Message
	f.WaitWithin(t, limit, "a post: "+what, func() bool {
		for _, m := range f.Posts() {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}
