package discord

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/fakediscord"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
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

func TestHistoryOfAThreadStartedFromAMessage(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	ctx := context.Background()

	f.Put(fakediscord.Message{ID: "1000", ChannelID: "C1", AuthorID: "7", Content: "<@" + fakediscord.BotID + "> the build is red?"})
	f.AddChannel(fakediscord.Channel{ID: "1000", Type: 11, GuildID: "G1", ParentID: "C1"})
	f.Put(fakediscord.Message{ID: "1001", ChannelID: "1000", AuthorID: "8", Content: "see the log",
		Attachments: []fakediscord.Attachment{{ID: "a1", Filename: "ci.log"}}})
	f.Put(fakediscord.Message{ID: "1002", ChannelID: "1000", AuthorID: "9", AuthorBot: true, Content: "CI: failed"})
	f.Put(fakediscord.Message{ID: "1003", ChannelID: "1000", AuthorID: fakediscord.BotID, Content: "earlier answer"})
	f.Put(fakediscord.Message{ID: "1004", ChannelID: "1000", AuthorID: "7", Content: "now"})
	conv := platform.Target{Platform: "dc-test", Channel: "C1", Thread: "1000"}

	tests := []struct {
		name string
		q    platform.HistoryQuery
		want string
	}{
		{"before the latest", platform.HistoryQuery{Before: "1000:1004", Limit: 20},
			"root user7:the build is red? (mentions) | user8:see the log [ci.log] | user9:CI: failed (bot) | ccbot:earlier answer (self)"},
		{"the root stays when the limit cuts", platform.HistoryQuery{Before: "1004", Limit: 2},
			"root user7:the build is red? (mentions) | ccbot:earlier answer (self)"},
		{"limit 1 is the root", platform.HistoryQuery{Limit: 1}, "root user7:the build is red? (mentions)"},
		{"nothing before the thread's own start", platform.HistoryQuery{Before: "1000", Limit: 5}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := a.History(ctx, conv, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(ms); got != tt.want {
				t.Errorf("history\n got %s\nwant %s", got, tt.want)
			}
		})
	}

	t.Run("a planned thread not opened yet has its root only", func(t *testing.T) {
		f.Put(fakediscord.Message{ID: "2000", ChannelID: "C1", AuthorID: "7", Content: "start"})
		ms, err := a.History(ctx, platform.Target{Channel: "C1", Thread: "2000"}, platform.HistoryQuery{Limit: 5})
		if err != nil || summary(ms) != "root user7:start" {
			t.Errorf("got %s, %v", summary(ms), err)
		}
	})
}

// TestHistoryBeforeRunLearntTheBot: after a restart, recovery reads a
// thread's root before Run has learnt the bot's user. The root's mention
// must still read as one (and the bot's post as its own), or the thread
// is taken as not the bot's and a reply without a mention is dropped.
func TestHistoryBeforeRunLearntTheBot(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil) // never Run
	f.Put(fakediscord.Message{ID: "1000", ChannelID: "C1", AuthorID: "7", Content: "<@" + fakediscord.BotID + "> the build is red?"})
	f.AddChannel(fakediscord.Channel{ID: "1000", Type: 11, GuildID: "G1", ParentID: "C1"})
	f.Put(fakediscord.Message{ID: "1001", ChannelID: "1000", AuthorID: fakediscord.BotID, Content: "looking"})
	ms, err := a.History(context.Background(), platform.Target{Platform: "dc-test", Channel: "C1", Thread: "1000"}, platform.HistoryQuery{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(ms); got != "root user7:the build is red? (mentions) | ccbot:looking (self)" {
		t.Errorf("history read before Run = %s", got)
	}
}

func TestHistoryOfAChannelInPages(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	a := newTestAdapter(t, f, nil)
	runConnected(t, f, a, platformtest.NewHandler())
	for i := 1; i <= 250; i++ {
		f.Put(fakediscord.Message{ID: fmt.Sprint(10000 + i), ChannelID: "C1", AuthorID: "7", Content: fmt.Sprint(i)})
	}
	ms, err := a.History(context.Background(), platform.Target{Channel: "C1"}, platform.HistoryQuery{Before: "10250", Limit: 150})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 150 || ms[0].Text != "100" || ms[149].Text != "249" || ms[0].Root {
		t.Errorf("%d messages, from %q to %q", len(ms), ms[0].Text, ms[len(ms)-1].Text)
	}
	f.HideHistory("C1")
	if ms, err := a.History(context.Background(), platform.Target{Channel: "C1"}, platform.HistoryQuery{Limit: 5}); err != nil || len(ms) != 0 {
		t.Errorf("without Read Message History: %v, %v", ms, err)
	}
	f.Hide("C1")
	if _, err := a.History(context.Background(), platform.Target{Channel: "C1"}, platform.HistoryQuery{Limit: 5}); err == nil {
		t.Error("a hidden channel gave no error")
	}
}

func TestSendFile(t *testing.T) {
	f := fakediscord.New(t)
	f.AddChannel(guildChannel)
	f.AddChannel(thread)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	data := []byte("\x89PNG\r\n\x1a\n....")
	to := platform.Target{Platform: "dc-test", Channel: "C1", Thread: "T1"}
	posted, err := a.SendFile(ctx, to, platform.OutgoingFile{Name: "plots/out.png", Mime: "image/png", Data: data, Comment: "the plot @everyone <@7>"})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := f.Message(posted.MessageID)
	if !ok || m.ChannelID != "T1" || len(m.Attachments) != 1 || m.Attachments[0].Filename != "out.png" ||
		!bytes.Equal(m.Attachments[0].Data, data) || !strings.Contains(m.Content, "the plot") {
		t.Fatalf("posted %+v", m)
	}
	for _, c := range f.Calls() {
		if len(c.Pings) > 0 {
			t.Errorf("%s %s pings %v", c.Method, c.Path, c.Pings)
		}
	}
	// A long comment goes first, the file after it.
	long := strings.Repeat("word ", 600)
	if _, err := a.SendFile(ctx, to, platform.OutgoingFile{Name: "b.txt", Data: []byte("b"), Comment: long}); err != nil {
		t.Fatal(err)
	}
	posts := f.Posts()
	last := posts[len(posts)-1]
	if len(last.Attachments) != 1 || last.Content != "" || len(posts[len(posts)-2].Attachments) != 0 {
		t.Errorf("long comment: last posts %+v", posts[len(posts)-3:])
	}
	f.SetUploadLimit(3)
	_, err = a.SendFile(ctx, to, platform.OutgoingFile{Name: "c.txt", Data: []byte("1234")})
	var tl *platform.FileTooLargeError
	if !errors.Is(err, platform.ErrFileTooLarge) || !errors.As(err, &tl) || tl.Size != 4 {
		t.Errorf("over the server's limit: %v", err)
	}
	if _, err := a.SendFile(ctx, to, platform.OutgoingFile{Name: "d.bin", Data: make([]byte, UploadLimit+1)}); !errors.Is(err, platform.ErrFileTooLarge) {
		t.Errorf("over Discord's limit: %v", err)
	}
}
