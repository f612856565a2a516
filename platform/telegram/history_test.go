package telegram

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"strings"
	"testing"

	"github.com/cc-connect/cc-connect/internal/faketelegram"
	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/platformtest"
)

func TestHistoryIsWhatTheBotSaw(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	h := platformtest.NewHandler()
	runAdapter(t, a, h)
	ctx := context.Background()
	topic := func(id int, from map[string]any, text string) string {
		return update(id, map[string]any{"message_id": id, "date": 1700000000 + id, "chat": map[string]any{"id": -1001, "type": "supergroup", "is_forum": true},
			"message_thread_id": 77, "is_topic_message": true, "from": from, "text": text})
	}
	f.Feed(topic(11, user(7, "alice", false), "the tests fail on main"),
		topic(12, user(8, "bob", false), "since the merge"),
		topic(13, user(7, "alice", false), "@"+faketelegram.BotUsername+" can you look?"))
	var last platform.Message
	for range 3 {
		last = h.Message(t)
	}
	conv := platform.Target{Platform: "tg-test", Channel: "-1001", Thread: "77"}
	if _, err := a.Send(ctx, conv, "Looking."); err != nil {
		t.Fatal(err)
	}
	ms, err := a.History(ctx, conv, platform.HistoryQuery{Before: last.Target.MessageID, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.UserName+":"+m.Text)
	}
	if strings.Join(got, " | ") != "alice:the tests fail on main | bob:since the merge" {
		t.Errorf("before the mention: %v", got)
	}
	all, _ := a.History(ctx, conv, platform.HistoryQuery{Limit: 10})
	if n := len(all); n != 4 || !all[3].FromSelf || all[3].Text != "Looking." || !all[2].Mentioned || all[0].Time.Unix() != 1700000011 {
		t.Errorf("everything: %+v", all)
	}
	other, _ := a.History(ctx, platform.Target{Channel: "-1001", Thread: "78"}, platform.HistoryQuery{Limit: 10})
	if len(other) != 0 {
		t.Errorf("another topic: %+v", other)
	}
}

func TestSendFileAsPhotoOrDocument(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, nil)
	ctx := context.Background()
	var pic bytes.Buffer
	if err := png.Encode(&pic, image.NewGray(image.Rect(0, 0, 64, 48))); err != nil {
		t.Fatal(err)
	}
	var strip bytes.Buffer
	if err := png.Encode(&strip, image.NewGray(image.Rect(0, 0, 4, 400))); err != nil {
		t.Fatal(err)
	}
	to := platform.Target{Platform: "tg-test", Channel: "-1001", Thread: "77"}
	tests := []struct {
		name     string
		file     platform.OutgoingFile
		photo    bool
		caption  string
		messages int // posted before the file (a long comment)
	}{
		{"a picture is a photo", platform.OutgoingFile{Name: "chart.png", Data: pic.Bytes(), Comment: "the **chart**"}, true, "the chart", 0},
		{"text is a document", platform.OutgoingFile{Name: "dir/notes.txt", Data: []byte("notes\n"), Comment: "<b>not markup</b> @someone"}, false, "<b>not markup</b> @\u2060someone", 0},
		{"a strip is sent as a document", platform.OutgoingFile{Name: "strip.png", Data: strip.Bytes()}, false, "", 0},
		{"a long comment goes first", platform.OutgoingFile{Name: "a.txt", Data: []byte("a"), Comment: strings.Repeat("long ", 300)}, false, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.Sent())
			if _, err := a.SendFile(ctx, to, tt.file); err != nil {
				t.Fatal(err)
			}
			sent := f.Sent()[before:]
			if len(sent) != tt.messages+1 {
				t.Fatalf("%d messages sent, want %d", len(sent), tt.messages+1)
			}
			d := sent[len(sent)-1]
			if d.File == nil || d.File.Photo != tt.photo || !bytes.Equal(d.File.Data, tt.file.Data) || d.Text != tt.caption || d.ThreadID != 77 || len(d.Mentions) != 0 {
				t.Errorf("sent %+v (file %+v)", d, d.File)
			}
		})
	}
	_, err := a.SendFile(ctx, to, platform.OutgoingFile{Name: "big.bin", Data: make([]byte, DocumentLimit+1)})
	if !errors.Is(err, platform.ErrFileTooLarge) {
		t.Errorf("over 50 MB: %v", err)
	}
}

// TestHistoryHoldsStreamedReplies: a reply streamed into messages
// (EditReply) and finished (FinishReply) is in the history as it stands,
// as a reply posted whole is.
func TestHistoryHoldsStreamedReplies(t *testing.T) {
	f := faketelegram.New(t)
	addChats(f)
	a := newTestAdapter(t, f, func(c *Config) { c.EditInterval = 1 })
	ctx := context.Background()
	conv := platform.Target{Platform: "tg-test", Channel: "42"}
	msgs, err := a.EditReply(ctx, conv, nil, "Looking")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.FinishReply(ctx, conv, msgs, "Looking: the test is flaky.", platform.Reply{Key: "k"}); err != nil {
		t.Fatal(err)
	}
	all, _ := a.History(ctx, conv, platform.HistoryQuery{Limit: 10})
	if len(all) != 1 || !all[0].FromSelf || all[0].Text != "Looking: the test is flaky." || all[0].MessageID != msgs[0].MessageID {
		t.Errorf("history: %+v", all)
	}
}
