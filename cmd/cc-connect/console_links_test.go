package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cc-connect/cc-connect/internal/fakeclaude"
	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/internal/faketelegram"
)

// TestConsoleLinksOnTelegram: through the binary built with the test
// clock, the real Telegram adapter against the fake Bot API. !console in a
// group sends the link to the person's private chat with the bot, or, when
// they never started the bot, says in the group what to do; a link works
// within its 5 minutes on the binary's clock and not after, and a session
// ends with session_ttl.
func TestConsoleLinksOnTelegram(t *testing.T) {
	t.Parallel()
	f := faketelegram.New(t)
	dir := t.TempDir()
	path := writeConfig(t, dir, fmt.Sprintf(`
[state]
dir = "state"
[log]
level = "debug"
[agent]
command = %q
env = { CLAUDE_CONFIG_DIR = %q }
[[platforms]]
name = "chat"
type = "telegram"
token = "${TELEGRAM_BOT_TOKEN}"
api_url = %q
[[bindings]]
platform = "chat"
channel = "*"
workspace = "ws"
allow_users = ["7", "8"]
[console]
enabled = true
listen = "127.0.0.1:0"
session_ttl = "1h"
`, fakeclaude.Build(t), filepath.Join(dir, "claude-config"), f.URL()))
	start := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	clock := newTestClock(t, start)
	p := startBinaryPath(t, buildClockBinary(t), []string{"TELEGRAM_BOT_TOKEN=" + faketelegram.Token,
		"CC_CONNECT_TEST_CLOCK=" + clock.path, "TMPDIR=" + t.TempDir()}, "run", "--config", path)
	f.Wait(t, "the first poll", func() bool { return len(f.Calls("getUpdates")) > 0 })

	group := map[string]any{"id": -100, "type": "group", "title": "team"}
	alice, bob := faketelegram.User(7, "alice", false), faketelegram.User(8, "bob", false)
	f.AddChat(faketelegram.Chat{ID: 7, Type: "private"}) // alice started the bot; bob never did
	mention := "@" + faketelegram.BotUsername + " !console"
	entities := []any{map[string]any{"type": "mention", "offset": 0, "length": 1 + len(faketelegram.BotUsername)}}
	say := func(from map[string]any, chat map[string]any, text string) {
		msg := map[string]any{"chat": chat, "from": from, "text": text}
		if strings.HasPrefix(text, "@") {
			msg["entities"] = entities
		}
		f.Send(msg)
	}

	say(alice, group, mention)
	dm := f.WaitSent(t, "alice's link in her private chat", func(m faketelegram.Message) bool {
		return m.ChatID == 7 && consoleLinkRE.MatchString(m.Text)
	})
	f.WaitSent(t, "the note in the group", func(m faketelegram.Message) bool {
		return m.ChatID == -100 && strings.Contains(m.Text, "by direct message")
	})
	say(bob, group, mention)
	f.WaitSent(t, "what bob must do, in the group", func(m faketelegram.Message) bool {
		return m.ChatID == -100 && strings.Contains(m.Text, "press Start")
	})
	for _, m := range f.Sent() {
		if m.ChatID == -100 && consoleLinkRE.MatchString(m.Text) {
			t.Fatalf("a link was posted in the group: %q", m.Text)
		}
	}
	first := consoleLinkRE.FindString(dm.Text)
	say(alice, map[string]any{"id": 7, "type": "private"}, "!console")
	again := f.WaitSent(t, "a second link, asked in private", func(m faketelegram.Message) bool {
		return m.ChatID == 7 && consoleLinkRE.MatchString(m.Text) && consoleLinkRE.FindString(m.Text) != first
	})
	second := consoleLinkRE.FindString(again.Text)
	base := first[:strings.Index(first, "/signin")]

	// 4 minutes on: the second link works; 5 minutes on, the first is
	// refused.
	clock.setAndWait(t, p, start.Add(4*time.Minute))
	cookie := consoleSignIn(t, second)
	clock.setAndWait(t, p, start.Add(5*time.Minute))
	resp, err := http.Get(first)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a link used 5 minutes after it was sent: %d, want 403", resp.StatusCode)
	}
	consoleGet(t, base+"/", cookie) // the session lives on
	// The session ends an hour after it started.
	clock.setAndWait(t, p, start.Add(4*time.Minute+time.Hour))
	req, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	req.AddCookie(cookie)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a page after session_ttl: %d, want 401", resp.StatusCode)
	}
}

// TestConsoleLinksOnDiscord: through the binary against the fake Discord,
// !console in a server's channel sends the link to the person's direct
// message channel with the bot, opened through Discord's API (the link
// then signs them in), and says in the channel what to do when the person
// allows no direct message from the bot.
func TestConsoleLinksOnDiscord(t *testing.T) {
	t.Parallel()
	f := fakediscord.New(t)
	f.AddChannel(fakediscord.Channel{ID: "C1", Type: 0, GuildID: "G1", Name: "dev"})
	f.RefuseDMs("8")
	startChat(t, fmt.Sprintf(`
[[platforms]]
name = "chat"
type = "discord"
token = "${DISCORD_BOT_TOKEN}"
api_url = %q
[console]
enabled = true
listen = "127.0.0.1:0"
`, f.URL()), `"7", "8"`, "DISCORD_BOT_TOKEN="+fakediscord.Token)
	f.WaitConnected(t, 1)
	bot := map[string]any{"id": fakediscord.BotID, "username": fakediscord.BotName, "bot": true}
	say := func(id, user string) {
		f.Post(t, fakediscord.MessageEvent(id, "C1", "G1", user, "<@"+fakediscord.BotID+"> !console", map[string]any{"mentions": []any{bot}}))
	}

	say("2001", "7")
	dm := f.WaitPost(t, "the link in the DM channel", func(m fakediscord.Message) bool {
		return m.ChannelID == fakediscord.DMChannel("7") && consoleLinkRE.MatchString(m.Content)
	})
	f.WaitPost(t, "the note in the channel", func(m fakediscord.Message) bool {
		return m.ChannelID != fakediscord.DMChannel("7") && strings.Contains(m.Content, "by direct message")
	})
	say("2002", "8")
	f.WaitPost(t, "what the person refusing DMs must do", func(m fakediscord.Message) bool {
		return strings.Contains(m.Content, "allow direct messages")
	})
	for _, m := range f.Posts() {
		if m.ChannelID != fakediscord.DMChannel("7") && consoleLinkRE.MatchString(m.Content) {
			t.Fatalf("a link was posted outside the DM: %q in %s", m.Content, m.ChannelID)
		}
	}
	link := consoleLinkRE.FindString(dm.Content)
	cookie := consoleSignIn(t, link)
	consoleGet(t, link[:strings.Index(link, "/signin")]+"/", cookie)
}
