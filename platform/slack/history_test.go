package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakeslack"
	"github.com/cc-connect/cc-connect/platform"
)

func summary(ms []platform.HistoryMessage) string {
	var out []string
	for _, m := range ms {
		s := m.UserName + ":" + m.Text
		if m.Root {
			s = "root " + s
		}
		if m.FromSelf {
			s += " (self)"
		} else if m.IsBot {
			s += " (bot)"
		}
		if m.Mentioned {
			s += " (mentions)"
		}
		if len(m.Files) > 0 {
			s += " [" + strings.Join(m.Files, ",") + "]"
		}
		out = append(out, s)
	}
	return strings.Join(out, " | ")
}

func TestHistoryOfAThread(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	root := "1700000000.000001"
	e.f.Put(fakeslack.Message{Channel: "C1", TS: root, User: "U1", Text: "can <@" + fakeslack.BotUserID + "> look at this?"})
	e.f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000002", ThreadTS: root, User: "U2", Text: "the log is <https://x.test|here> &amp; there", Files: []string{"log.txt"}})
	e.f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000003", ThreadTS: root, BotID: "BOTHER", Text: "a deploy bot"})
	e.f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000004", ThreadTS: root, User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "my earlier answer"})
	e.f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000005", ThreadTS: root, User: "U1", Text: "the mention now"})
	conv := platform.Target{Platform: "slack-test", Channel: "C1", Thread: root}

	tests := []struct {
		name   string
		q      platform.HistoryQuery
		want   string
		starts string // the first message's MessageID
	}{
		{"all before the mention", platform.HistoryQuery{Before: "C1:1700000000.000005", Limit: 50},
			"root Display U1:can look at this? (mentions) | Display U2:the log is here (https://x.test) & there [log.txt] | :a deploy bot (bot) | cc-connect:my earlier answer (self)", root},
		{"the root stays when the limit cuts", platform.HistoryQuery{Before: "1700000000.000005", Limit: 2},
			"root Display U1:can look at this? (mentions) | cc-connect:my earlier answer (self)", root},
		{"limit 1 is the root alone", platform.HistoryQuery{Limit: 1}, "root Display U1:can look at this? (mentions)", root},
		{"nothing before the root", platform.HistoryQuery{Before: root, Limit: 5}, "", ""},
		{"no limit, nothing", platform.HistoryQuery{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := e.a.History(ctx, conv, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(ms); got != tt.want {
				t.Errorf("history\n got %s\nwant %s", got, tt.want)
			}
			if len(ms) > 0 && (ms[0].MessageID != tt.starts || ms[0].ID != "C1:"+tt.starts) {
				t.Errorf("first message %+v", ms[0])
			}
		})
	}
	t.Run("a thread of many pages keeps the latest", func(t *testing.T) {
		r := "1700000500.000001"
		e.f.Put(fakeslack.Message{Channel: "C2", TS: r, User: "U1", Text: "start"})
		for i := 1; i <= 450; i++ {
			e.f.Put(fakeslack.Message{Channel: "C2", TS: fmt.Sprintf("1700000500.%06d", 1+i), ThreadTS: r, User: "U2", Text: fmt.Sprint(i)})
		}
		ms, err := e.a.History(ctx, platform.Target{Channel: "C2", Thread: r}, platform.HistoryQuery{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(ms); got != "root Display U1:start | Display U2:449 | Display U2:450" {
			t.Errorf("got %s", got)
		}
		if n := len(e.f.Calls("conversations.replies")); n < 3 {
			t.Errorf("%d pages read, want 3", n)
		}
	})
	t.Run("a missing scope is an error that names it", func(t *testing.T) {
		e.f.MissingScope("conversations.replies", "channels:history")
		defer e.f.MissingScope("conversations.replies", "")
		_, err := e.a.History(ctx, conv, platform.HistoryQuery{Limit: 5})
		if err == nil || !strings.Contains(err.Error(), "missing_scope") {
			t.Errorf("error %v", err)
		}
	})
}

// TestHistoryBeforeRunIdentifiedTheBot: after a restart, recovery reads a
// thread's root before Run has learnt who the bot is. The root's mention
// of the bot must still read as one (and the bot's own post as its own),
// or the thread is taken as not the bot's and a reply journaled without a
// mention is dropped.
func TestHistoryBeforeRunIdentifiedTheBot(t *testing.T) {
	f := fakeslack.New(t)
	a, _, _ := newAdapter(t, testConfig(f)) // never Run
	root := "1700000000.000001"
	f.Put(fakeslack.Message{Channel: "C1", TS: root, User: "U1", Text: "<@" + fakeslack.BotUserID + "> look at this"})
	f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000002", ThreadTS: root, User: fakeslack.BotUserID, BotID: fakeslack.BotID, Text: "on it"})
	got, err := a.History(context.Background(), platform.Target{Platform: "slack-test", Channel: "C1", Thread: root}, platform.HistoryQuery{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if s := summary(got); s != "root Display U1:look at this (mentions) | cc-connect:on it (self)" {
		t.Errorf("history read before Run = %q", s)
	}
}

func TestHistoryOfADM(t *testing.T) {
	e := startEnv(t)
	for i, text := range []string{"one", "two", "three"} {
		e.f.Put(fakeslack.Message{Channel: "D1", TS: fmt.Sprintf("1700000000.00000%d", i+1), User: "U1", Text: text})
	}
	ms, err := e.a.History(context.Background(), platform.Target{Channel: "D1"}, platform.HistoryQuery{Before: "1700000000.000003", Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(ms); got != "Display U1:one | Display U1:two" {
		t.Errorf("got %s", got)
	}
}

func TestSendFileIntoTheThread(t *testing.T) {
	e := startEnv(t)
	ctx := context.Background()
	e.f.Put(fakeslack.Message{Channel: "C1", TS: "1700000000.000001", User: "U1", Text: "root"})
	data := []byte("col1,col2\n1,2\n\x00\xff")
	to := platform.Target{Platform: "slack-test", Channel: "C1", Thread: "1700000000.000001"}
	if _, err := e.a.SendFile(ctx, to, platform.OutgoingFile{Name: "out/report.csv", Data: data, Comment: "Here it is, <!here> @channel <@U9>"}); err != nil {
		t.Fatal(err)
	}
	u := e.f.WaitShared(t, "C1", "1700000000.000001")
	if u.Name != "report.csv" || !bytes.Equal(u.Data, data) || u.Comment != "" {
		t.Errorf("upload %+v", u)
	}
	posts := e.f.Posts()
	if len(posts) != 2 || posts[0].ThreadTS != to.Thread || !strings.Contains(posts[0].Text, "Here it is") || len(posts[1].Files) != 1 {
		t.Fatalf("posts %+v", posts)
	}
	for _, c := range e.f.Calls("chat.postMessage") {
		if len(c.Pings) > 0 {
			t.Errorf("the comment pings %v", c.Pings)
		}
	}

	if _, err := e.a.SendFile(ctx, to, platform.OutgoingFile{Name: "empty.txt"}); err == nil {
		t.Error("an empty file was sent")
	}
	e.f.SetUploadLimit(4)
	_, err := e.a.SendFile(ctx, to, platform.OutgoingFile{Name: "big.bin", Data: []byte("12345")})
	if !errors.Is(err, platform.ErrFileTooLarge) {
		t.Errorf("over the workspace's limit: %v", err)
	}
	e.f.SetUploadLimit(1 << 20)
	e.f.RateLimit("files.getUploadURLExternal", 1)
	if _, err := e.a.SendFile(ctx, to, platform.OutgoingFile{Name: "after-429.txt", Data: []byte("x")}); err != nil {
		t.Errorf("after a rate limit: %v", err)
	}
	if got := e.f.Uploads(); got[len(got)-1].Name != "after-429.txt" || got[len(got)-1].Channel != "C1" {
		t.Errorf("last upload %+v", got[len(got)-1])
	}
}
