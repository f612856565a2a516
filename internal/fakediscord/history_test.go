package fakediscord

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
)

func TestChannelMessagesAndOne(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	for _, id := range []string{"1010", "1020", "1030", "1040"} {
		s.Put(Message{ID: id, ChannelID: "C1", AuthorID: "7", Content: "m" + id})
	}
	s.Put(Message{ID: "1050", ChannelID: "C1", AuthorID: "8", AuthorBot: true, Content: "a bot",
		Attachments: []Attachment{{ID: "a1", Filename: "log.txt", Size: 3}}})

	contents := func(ms []*discordgo.Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Content)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name   string
		limit  int
		before string
		want   string
		status int
	}{
		{"newest first", 0, "", "a bot,m1040,m1030,m1020,m1010", 0},
		{"before a message", 0, "1030", "m1020,m1010", 0},
		{"the latest two before", 2, "1050", "m1040,m1030", 0},
		{"before an id that is no message", 0, "1025", "m1020,m1010", 0},
		{"a limit over 100", 101, "", "", 400},
		{"a before that is no snowflake", 0, "m1", "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := d.ChannelMessages("C1", tt.limit, tt.before, "", "")
			if st, _ := restErr(err); st != tt.status {
				t.Fatalf("status %d (%v), want %d", st, err, tt.status)
			}
			if got := contents(ms); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	ms, err := d.ChannelMessages("C1", 1, "", "", "")
	if err != nil || len(ms) != 1 || !ms[0].Author.Bot || len(ms[0].Attachments) != 1 || ms[0].Attachments[0].Filename != "log.txt" {
		t.Errorf("a bot's post with a file: %+v, %v", ms, err)
	}
	m, err := d.ChannelMessage("C1", "1020")
	if err != nil || m.Content != "m1020" {
		t.Errorf("one message: %+v, %v", m, err)
	}
	if _, err := d.ChannelMessage("C1", "999"); !isCode(err, 404, 10008) {
		t.Errorf("an unknown message: %v", err)
	}

	s.HideHistory("C1")
	if ms, err := d.ChannelMessages("C1", 0, "", "", ""); err != nil || len(ms) != 0 {
		t.Errorf("without Read Message History: %v, %v; want no messages", ms, err)
	}
	if _, err := d.ChannelMessage("C1", "1020"); !isCode(err, 403, 50013) {
		t.Errorf("one message without Read Message History: %v", err)
	}
	s.Hide("C1")
	if _, err := d.ChannelMessages("C1", 0, "", "", ""); !isCode(err, 403, 50001) {
		t.Errorf("a hidden channel: %v", err)
	}
	if _, err := d.ChannelMessages("C9", 0, "", "", ""); !isCode(err, 404, 10003) {
		t.Errorf("an unknown channel: %v", err)
	}
}

func isCode(err error, status, code int) bool {
	st, c := restErr(err)
	return st == status && c == code
}

func TestPostWithFiles(t *testing.T) {
	s := New(t)
	s.AddChannel(Channel{ID: "C1", Type: 0, GuildID: "G1"})
	d := session(t, s, Token)
	data := []byte("\x89PNG\r\n\x1a\nnot really")
	m, err := d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Content: "here <@7>",
		Files:           []*discordgo.File{{Name: "pic.png", ContentType: "image/png", Reader: bytes.NewReader(data)}},
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Message(m.ID)
	if len(got.Attachments) != 1 || got.Attachments[0].Filename != "pic.png" || !bytes.Equal(got.Attachments[0].Data, data) ||
		got.Attachments[0].ContentType != "image/png" || got.Content != "here <@7>" {
		t.Errorf("posted %+v", got)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Size != len(data) {
		t.Fatalf("answer %+v", m.Attachments)
	}
	resp, err := http.Get(m.Attachments[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, data) {
		t.Errorf("CDN served %q", body)
	}
	if calls := s.Calls(); len(calls[len(calls)-1].Pings) != 0 {
		t.Errorf("pings %v, want none", calls[len(calls)-1].Pings)
	}

	// A file alone is a message; over the limit is 413 Request entity too large.
	if _, err := d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Files: []*discordgo.File{{Name: "a.txt", Reader: strings.NewReader("a")}}}); err != nil {
		t.Errorf("a file without content: %v", err)
	}
	s.SetUploadLimit(4)
	_, err = d.ChannelMessageSendComplex("C1", &discordgo.MessageSend{Files: []*discordgo.File{{Name: "b.txt", Reader: strings.NewReader("12345")}}})
	if !isCode(err, 413, 40005) {
		t.Errorf("over the limit: %v", err)
	}
}
