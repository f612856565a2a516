package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/gif" // pictures sendPhoto may take
	_ "image/jpeg"
	_ "image/png"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/cc-connect/cc-connect/platform"
	"github.com/cc-connect/cc-connect/platform/internal/outfile"
)

// The Bot API's limits on what a bot uploads: a document up to 50 MB, a
// photo up to 10 MB with width and height adding up to 10,000 at most and
// a ratio of at most 20, a caption of 1,024 characters.
// files are the files of a conversation: attachments of a message,
// downloaded by file id (getFile, then the file's URL, which holds the
// token), and files cc-connect posts as a document or a photo.
type files struct {
	name   string
	apiURL string
	api    *api
	wire   *wire
	seen   *seen
	log    *slog.Logger
}

const (
	DocumentLimit = 50 << 20
	photoLimit    = 10 << 20
	photoSides    = 10000
	photoRatio    = 20
	captionLimit  = 1024
)

// SendFile sends f with sendPhoto when it is a PNG, JPEG or GIF picture
// Telegram shows as a photo, else with sendDocument, in the chat's topic
// when set; the comment is the caption when it fits (1,024 characters),
// else it goes first as a message of its own. A photo Telegram refuses is
// sent again as a document.
func (fs *files) send(ctx context.Context, to platform.Target, f platform.OutgoingFile) (platform.Target, error) {
	name, err := outfile.Check(f, DocumentLimit)
	if err != nil {
		return platform.Target{}, fmt.Errorf("telegram send file: %w", err)
	}
	caption := ""
	if c := strings.TrimSpace(f.Comment); c != "" {
		if htmlTextLen(toHTML(c)) <= captionLimit {
			caption = c
		} else if _, err := fs.wire.send(ctx, to, nil, f.Comment); err != nil {
			return platform.Target{}, fmt.Errorf("posting the comment of %s: %w", name, err)
		}
	}
	method, field := "sendDocument", "document"
	if isPhoto(f.Data) {
		method, field = "sendPhoto", "photo"
	}
	id, err := fs.sendFile(ctx, to, method, field, name, f.Data, caption)
	if method == "sendPhoto" && isBadRequest(err) && !isParseError(err) {
		fs.log.Info("Telegram refused the picture as a photo; sending it as a document", "channel", to.Channel, "error", err)
		id, err = fs.sendFile(ctx, to, "sendDocument", "document", name, f.Data, caption)
	}
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == http.StatusRequestEntityTooLarge {
		return platform.Target{}, fmt.Errorf("telegram send file %s: %w (%w)", name, outfile.TooLarge(f, DocumentLimit), err)
	}
	if err != nil {
		return platform.Target{}, fmt.Errorf("telegram send file %s to %s: %w", name, to.Channel, err)
	}
	fs.seen.noteSent(to, id, caption, name)
	fs.log.Info("Telegram file sent", "channel", to.Channel, "thread", to.Thread, "file", name, "size", len(f.Data), "method", method)
	return platform.Target{Platform: fs.name, Channel: to.Channel, Thread: to.Thread, MessageID: strconv.Itoa(id)}, nil
}

// sendFile uploads one file, its caption as HTML and, when Telegram
// refuses that markup, as plain text.
func (fs *files) sendFile(ctx context.Context, to platform.Target, method, field, name string, data []byte, caption string) (int, error) {
	params := fs.wire.messageParams(to)
	if caption != "" {
		params["caption"] = toHTML(caption)
		params["parse_mode"] = "HTML"
	}
	raw, err := fs.api.upload(ctx, method, params, field, name, data)
	if isParseError(err) {
		delete(params, "parse_mode")
		params["caption"] = noMentions(caption)
		raw, err = fs.api.upload(ctx, method, params, field, name, data)
	}
	if err != nil {
		return 0, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("telegram %s: decoding: %w", method, err)
	}
	return m.MessageID, nil
}

// isPhoto reports whether data is a picture Telegram takes as a photo.
func isPhoto(data []byte) bool {
	if len(data) > photoLimit {
		return false
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
	if err != nil {
		return false
	}
	w, h := cfg.Width, cfg.Height
	return w > 0 && h > 0 && w+h <= photoSides && w <= photoRatio*h && h <= photoRatio*w
}

func isBadRequest(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == http.StatusBadRequest
}

// attachments lists the files of a message; Open fetches each through
// getFile and the file endpoint when the engine asks for it.
func (fs *files) attachments(msg *tgbotapi.Message) []platform.Attachment {
	var out []platform.Attachment
	add := func(fileID, name, mime string, size int) {
		sz := int64(size)
		if size <= 0 {
			sz = -1
		}
		out = append(out, platform.Attachment{
			Name: name,
			Size: sz,
			Mime: mime,
			Ref:  fileID, // not the download URL, which holds the bot token
			Open: func(ctx context.Context) (io.ReadCloser, error) { return fs.open(ctx, fileID) },
		})
	}
	if d := msg.Document; d != nil {
		add(d.FileID, nonEmpty(d.FileName, "document_"+d.FileUniqueID), d.MimeType, d.FileSize)
	}
	if len(msg.Photo) > 0 {
		p := msg.Photo[len(msg.Photo)-1] // sizes ascend; the last is the original
		add(p.FileID, "photo_"+p.FileUniqueID+".jpg", "image/jpeg", p.FileSize)
	}
	if v := msg.Video; v != nil {
		add(v.FileID, nonEmpty(v.FileName, "video_"+v.FileUniqueID+".mp4"), v.MimeType, v.FileSize)
	}
	if au := msg.Audio; au != nil {
		add(au.FileID, nonEmpty(au.FileName, "audio_"+au.FileUniqueID), au.MimeType, au.FileSize)
	}
	if vo := msg.Voice; vo != nil {
		add(vo.FileID, "voice_"+vo.FileUniqueID+".ogg", nonEmpty(vo.MimeType, "audio/ogg"), vo.FileSize)
	}
	return out
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// open resolves fileID with getFile and streams the file. A local Bot
// API server (--local) answers with an absolute path on its own disk, which
// is read directly.
func (fs *files) open(ctx context.Context, fileID string) (io.ReadCloser, error) {
	raw, err := fs.api.call(ctx, "getFile", tgbotapi.Params{"file_id": fileID})
	if err != nil {
		return nil, fmt.Errorf("resolving telegram file: %w", err)
	}
	var f tgbotapi.File
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("resolving telegram file: decoding: %w", err)
	}
	if f.FilePath == "" {
		return nil, fmt.Errorf("resolving telegram file: no file_path (file too big for the Bot API?)")
	}
	if filepath.IsAbs(f.FilePath) && fs.apiURL != DefaultAPIURL {
		fh, err := os.Open(f.FilePath)
		if err == nil {
			return fh, nil
		}
	}
	u := fs.apiURL + "/file/bot" + fs.api.token + "/" + strings.TrimLeft(path.Clean("/"+f.FilePath), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("downloading telegram file: %w", redactErr(err, fs.api.token))
	}
	resp, err := fs.api.httpClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading telegram file: %w", redactErr(err, fs.api.token))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("downloading telegram file: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}
