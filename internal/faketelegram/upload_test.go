package faketelegram

import (
	"bytes"
	"image"
	"image/png"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSendDocumentAndPhoto(t *testing.T) {
	s := New(t)
	s.AddChat(Chat{ID: -100, Type: "supergroup", IsForum: true})
	b := bot(t, s)
	upload := func(method, field string, params tgbotapi.Params, name string, data []byte) error {
		_, err := b.UploadFiles(method, params, []tgbotapi.RequestFile{{Name: field, Data: tgbotapi.FileBytes{Name: name, Bytes: data}}})
		return err
	}
	small := pngOf(t, 40, 30)
	tests := []struct {
		name, method, field string
		params              tgbotapi.Params
		file                string
		data                []byte
		want                string // "" = sent
	}{
		{"a document in a topic, with a caption", "sendDocument", "document", tgbotapi.Params{"chat_id": "-100", "message_thread_id": "7", "caption": "the <b>report</b>", "parse_mode": "HTML"}, "report.txt", []byte("hello\x00"), ""},
		{"a photo", "sendPhoto", "photo", tgbotapi.Params{"chat_id": "-100"}, "pic.png", small, ""},
		{"a photo that is no picture", "sendPhoto", "photo", tgbotapi.Params{"chat_id": "-100"}, "pic.png", []byte("text"), "Bad Request: IMAGE_PROCESS_FAILED"},
		{"a photo too long for its width", "sendPhoto", "photo", tgbotapi.Params{"chat_id": "-100"}, "strip.png", pngOf(t, 5, 200), "Bad Request: PHOTO_INVALID_DIMENSIONS"},
		{"a caption of 1,025 characters", "sendDocument", "document", tgbotapi.Params{"chat_id": "-100", "caption": strings.Repeat("é", 1025)}, "a.txt", []byte("a"), "Bad Request: message caption is too long"},
		{"an unknown chat", "sendDocument", "document", tgbotapi.Params{"chat_id": "5"}, "a.txt", []byte("a"), "Bad Request: chat not found"},
		{"a document over 50 MB", "sendDocument", "document", tgbotapi.Params{"chat_id": "-100"}, "big.bin", make([]byte, 50<<20+1), "Request Entity Too Large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := description(upload(tt.method, tt.field, tt.params, tt.file, tt.data)); got != tt.want {
				t.Fatalf("error %q, want %q", got, tt.want)
			}
		})
	}
	docs := s.Documents()
	if len(docs) != 2 {
		t.Fatalf("%d files sent, want 2", len(docs))
	}
	if d := docs[0]; d.File.Name != "report.txt" || !bytes.Equal(d.File.Data, []byte("hello\x00")) || d.File.Photo ||
		d.ThreadID != 7 || d.Text != "the report" {
		t.Errorf("document %+v", d)
	}
	if p := docs[1]; !p.File.Photo || !bytes.Equal(p.File.Data, small) {
		t.Errorf("photo %+v", p)
	}
	if err := upload("sendDocument", "file", tgbotapi.Params{"chat_id": "-100"}, "a.txt", []byte("a")); description(err) != "Bad Request: there is no document in the request" {
		t.Errorf("no document: %v", err)
	}
}
