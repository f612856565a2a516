package faketelegram

import (
	"bytes"
	"image"
	_ "image/gif" // photos the fake can measure
	_ "image/jpeg"
	_ "image/png"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf16"
)

// Telegram's limits for files a bot uploads, from the Bot API
// documentation: a document up to 50 MB, a photo up to 10 MB whose width
// and height add up to at most 10,000 with a ratio of at most 20, and a
// caption of at most 1,024 characters after entity parsing.
const (
	maxDocumentBytes = 50 << 20
	maxPhotoBytes    = 10 << 20
	maxPhotoSides    = 10000
	maxPhotoRatio    = 20
	maxCaptionLen    = 1024
)

// tooLarge is what Telegram's front end answers to an upload over 50 MB.
var tooLarge = Answer{Status: http.StatusRequestEntityTooLarge,
	Body: `{"ok":false,"error_code":413,"description":"Request Entity Too Large"}`}

// SentFile is a file in a multipart request: a document or photo the bot
// sent.
type SentFile struct {
	Field, Name, ContentType string
	Data                     []byte
	// Photo is set for sendPhoto.
	Photo bool
}

// readFiles reads the files of a multipart request, which ParseMultipartForm
// has parsed.
func readFiles(r *http.Request) map[string]SentFile {
	if r.MultipartForm == nil || len(r.MultipartForm.File) == 0 {
		return nil
	}
	out := map[string]SentFile{}
	for field, hs := range r.MultipartForm.File {
		if len(hs) == 0 {
			continue
		}
		f, err := hs[0].Open()
		if err != nil {
			continue
		}
		data, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			continue
		}
		out[field] = SentFile{Field: field, Name: hs[0].Filename, ContentType: hs[0].Header.Get("Content-Type"), Data: data}
	}
	return out
}

// sendFileLocked answers sendDocument and sendPhoto: the file uploaded in
// the field the method names (a file_id or URL instead is not served), its
// caption checked like a message's text. Callers hold s.mu.
func (s *Server) sendFileLocked(method string, form url.Values, files map[string]SentFile) Answer {
	field := "document"
	if method == "sendPhoto" {
		field = "photo"
	}
	chat, ok := s.chatLocked(form)
	if !ok {
		return badRequest("chat not found")
	}
	f, ok := files[field]
	if !ok {
		if form.Get(field) != "" {
			return badRequest("wrong file identifier/HTTP URL specified")
		}
		return badRequest("there is no " + field + " in the request")
	}
	if len(f.Data) > maxDocumentBytes {
		return tooLarge
	}
	if field == "photo" {
		if bad := checkPhoto(f.Data); bad != nil {
			return *bad
		}
		f.Photo = true
	}
	var visible string
	var mentions []string
	if caption := form.Get("caption"); caption != "" {
		v, m, err := Parse(caption, form.Get("parse_mode"))
		if err != nil {
			return badRequest(err.Error())
		}
		if len(utf16.Encode([]rune(v))) > maxCaptionLen {
			return badRequest("message caption is too long")
		}
		visible, mentions = v, m
	}
	thread, _ := strconv.Atoi(form.Get("message_thread_id"))
	m := &Message{ChatID: chat.ID, MessageID: int(s.msgIDs.Next()), ThreadID: thread, FromBot: true,
		Text: visible, Raw: form.Get("caption"), ParseMode: form.Get("parse_mode"), Mentions: mentions, File: &f}
	s.addMessageLocked(m)
	obj := s.messageObject(m, chat)
	delete(obj, "text")
	if visible != "" {
		obj["caption"] = visible
	}
	if f.Photo {
		obj["photo"] = []any{map[string]any{"file_id": "photo" + strconv.Itoa(m.MessageID), "file_unique_id": "p" + strconv.Itoa(m.MessageID), "file_size": len(f.Data)}}
	} else {
		obj["document"] = map[string]any{"file_id": "doc" + strconv.Itoa(m.MessageID), "file_unique_id": "d" + strconv.Itoa(m.MessageID),
			"file_name": f.Name, "mime_type": f.ContentType, "file_size": len(f.Data)}
	}
	return okResult(obj)
}

// checkPhoto applies sendPhoto's limits; Telegram must be able to read the
// picture, and says so in its MTProto error names.
func checkPhoto(data []byte) *Answer {
	if len(data) > maxPhotoBytes {
		a := badRequest("PHOTO_SAVE_FILE_INVALID")
		return &a
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		a := badRequest("IMAGE_PROCESS_FAILED")
		return &a
	}
	w, h := cfg.Width, cfg.Height
	if w+h > maxPhotoSides || w == 0 || h == 0 || w > maxPhotoRatio*h || h > maxPhotoRatio*w {
		a := badRequest("PHOTO_INVALID_DIMENSIONS")
		return &a
	}
	return nil
}

// Documents returns the files the bot sent, in order.
func (s *Server) Documents() []Message {
	var out []Message
	for _, m := range s.Sent() {
		if m.File != nil {
			out = append(out, m)
		}
	}
	return out
}
