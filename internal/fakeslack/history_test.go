package fakeslack

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slack-go/slack"
)

func TestRepliesAndHistory(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.Put(Message{Channel: "C1", TS: "1700000000.000001", User: "U1", Text: "root"})
	for i := 2; i <= 5; i++ {
		s.Put(Message{Channel: "C1", TS: fmt.Sprintf("1700000000.00000%d", i), ThreadTS: "1700000000.000001", User: "U2", Text: fmt.Sprintf("reply %d", i)})
	}
	s.Put(Message{Channel: "C1", TS: "1700000001.000001", User: "U3", Text: "top two", Files: []string{"a.txt"}})

	texts := func(ms []slack.Message) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Text)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name    string
		params  slack.GetConversationRepliesParameters
		want    string
		hasMore bool
		err     string
	}{
		{"the whole thread, root first", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001"}, "root,reply 2,reply 3,reply 4,reply 5", false, ""},
		{"a reply's ts names its thread", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000003"}, "root,reply 2,reply 3,reply 4,reply 5", false, ""},
		{"latest excludes itself", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001", Latest: "1700000000.000004"}, "root,reply 2,reply 3", false, ""},
		{"latest inclusive", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001", Latest: "1700000000.000004", Inclusive: true}, "root,reply 2,reply 3,reply 4", false, ""},
		{"a page of two", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001", Limit: 2}, "root,reply 2", true, ""},
		{"unknown ts", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1600000000.000001"}, "", false, "thread_not_found"},
		{"unknown channel", slack.GetConversationRepliesParameters{ChannelID: "CGONE", Timestamp: "1700000000.000001"}, "", false, "channel_not_found"},
		{"bad cursor", slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001", Cursor: "bm9wZQ=="}, "", false, "invalid_cursor"},
	}
	s.DeleteChannel("CGONE")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.params
			msgs, more, _, err := api.GetConversationRepliesContext(ctx, &p)
			if got := slackErr(err); got != tt.err {
				t.Fatalf("error %q, want %q", got, tt.err)
			}
			if got := texts(msgs); got != tt.want || more != tt.hasMore {
				t.Errorf("got %q (has_more %v), want %q (%v)", got, more, tt.want, tt.hasMore)
			}
		})
	}

	t.Run("pages follow the cursor", func(t *testing.T) {
		var all []slack.Message
		p := slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001", Limit: 2}
		for {
			msgs, more, next, err := api.GetConversationRepliesContext(ctx, &p)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, msgs...)
			if !more {
				break
			}
			p.Cursor = next
		}
		if got := texts(all); got != "root,reply 2,reply 3,reply 4,reply 5" {
			t.Errorf("paged thread %q", got)
		}
	})

	t.Run("history is the top level, newest first, with files", func(t *testing.T) {
		h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"})
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(h.Messages); got != "top two,root" {
			t.Errorf("history %q", got)
		}
		if len(h.Messages[0].Files) != 1 || h.Messages[0].Files[0].Name != "a.txt" {
			t.Errorf("files %+v", h.Messages[0].Files)
		}
		h, err = api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1", Latest: "1700000001.000001"})
		if err != nil || texts(h.Messages) != "root" {
			t.Errorf("history before the last: %v, %v", h, err)
		}
	})

	t.Run("a missing scope is Slack's refusal", func(t *testing.T) {
		s.MissingScope("conversations.replies", "channels:history")
		defer s.MissingScope("conversations.replies", "")
		_, _, _, err := api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{ChannelID: "C1", Timestamp: "1700000000.000001"})
		if got := slackErr(err); got != "missing_scope" {
			t.Errorf("error %q, want missing_scope", got)
		}
	})
}

func TestUploadInThreeSteps(t *testing.T) {
	s := New(t)
	api := client(s)
	ctx := context.Background()
	s.Put(Message{Channel: "C1", TS: "1700000000.000001", User: "U1", Text: "root"})
	content := "line one\nline two\x00binary"
	f, err := api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: "report.txt", FileSize: len(content), Reader: strings.NewReader(content),
		Channel: "C1", ThreadTimestamp: "1700000000.000001", InitialComment: "the report <@U9>", Title: "Report",
	})
	if err != nil {
		t.Fatal(err)
	}
	u := s.WaitShared(t, "C1", "1700000000.000001")
	if u.ID != f.ID || string(u.Data) != content || u.Name != "report.txt" || u.Title != "Report" || u.Comment != "the report <@U9>" {
		t.Errorf("upload %+v (file %+v)", u, f)
	}
	m, ok := s.Message("C1", u.TS)
	if !ok || m.ThreadTS != "1700000000.000001" || len(m.Files) != 1 || m.Files[0] != "report.txt" || m.BotID != BotID {
		t.Errorf("share message %+v", m)
	}
	if c := s.Calls("files.completeUploadExternal"); len(c) != 1 || len(c[0].Pings) != 1 || c[0].Pings[0] != "<@U9>" {
		t.Errorf("the comment's pings %+v", c)
	}

	// Completing twice, or a file never uploaded, is file_not_found.
	_, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: f.ID}}, Channel: "C1"})
	if got := slackErr(err); got != "file_not_found" {
		t.Errorf("second complete: %q", got)
	}
	ur, err := api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "x.bin", FileSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: ur.FileID}}, Channel: "C1"})
	if got := slackErr(err); got != "file_not_found" {
		t.Errorf("complete before upload: %q", got)
	}

	// The upload service checks the declared length.
	resp, err := http.Post(ur.UploadURL, "application/octet-stream", bytes.NewReader([]byte("four")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("upload of the wrong length: HTTP %d", resp.StatusCode)
	}

	// A workspace that restricts large uploads refuses them up front.
	s.SetUploadLimit(10)
	_, err = api.GetUploadURLExternalContext(ctx, slack.GetUploadURLExternalParameters{FileName: "big.bin", FileSize: 11})
	if got := slackErr(err); got != "file_upload_size_restricted" {
		t.Errorf("over the limit: %q", got)
	}
	_, err = api.CompleteUploadExternalContext(ctx, slack.CompleteUploadExternalParameters{Files: []slack.FileSummary{{ID: "FNOPE"}}, Channel: "not a channel"})
	if got := slackErr(err); got != "invalid_arguments" {
		t.Errorf("bad channel id: %q", got)
	}
}
